package live

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"syscall"
	"testing"
	"time"

	"github.com/stormdrill/stormdrill/model/runtime/dispatcher"
	"github.com/stormdrill/stormdrill/model/runtime/queue"
)

// envChild makes the test binary act as `stormdrill dispatch`, so that the
// runner and the kill tests can start real dispatcher processes without
// building the command.
const envChild = "STORMDRILL_LIVE_TEST_DISPATCH"

func TestMain(m *testing.M) {
	if os.Getenv(envChild) == "1" && len(os.Args) > 1 && os.Args[1] == "dispatch" {
		dispatcher.TuneGC() // as the dispatch command does
		os.Exit(childDispatch(os.Args[2:]))
	}
	if os.Getenv(envChild) == "1" && len(os.Args) > 1 && os.Args[1] == "hog" {
		hog()
	}
	os.Setenv(envChild, "1") // children inherit it
	os.Exit(m.Run())
}

// childDispatch is the `dispatch` command's flags, for the test binary.
func childDispatch(args []string) int {
	fs := flag.NewFlagSet("dispatch", flag.ContinueOnError)
	store := fs.String("store", "", "")
	configPath := fs.String("config", "", "")
	partners := fs.String("partners", "", "")
	owner := fs.String("owner", "", "")
	alertURL := fs.String("alert-url", "", "")
	speed := fs.Float64("speed", 0, "")
	start := fs.Int64("start", 0, "")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	cfg, err := dispatcher.ReadFile(*configPath)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	if *partners != "" {
		cfg.PartnersURL = *partners
	}
	if *alertURL != "" {
		cfg.AlertURL = *alertURL
	}
	if *speed > 0 {
		cfg.Clock.Speed = *speed
	}
	cfg.Owner, cfg.Clock.Start = *owner, time.Unix(0, *start)
	if err := cfg.Validate(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	if *store == "" {
		*store = os.Getenv(StoreEnv)
	}
	st, err := queue.Open(*store)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer st.Close()
	cfg.Store, cfg.Events, cfg.Log = st, os.Stdout, os.Stderr
	// STORMDRILL_DISPATCH_CPUPROFILE=PREFIX profiles each dispatcher
	// process to PREFIX-OWNER (for go tool pprof).
	if prefix := os.Getenv("STORMDRILL_DISPATCH_CPUPROFILE"); prefix != "" {
		if f, err := os.Create(prefix + "-" + *owner); err == nil {
			defer f.Close() // after StopCPUProfile has written the profile
			if pprof.StartCPUProfile(f) == nil {
				defer pprof.StopCPUProfile()
			}
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if _, err = dispatcher.Run(ctx, cfg); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	return 0
}

// testExecutable is the test binary itself (see TestMain).
func testExecutable(t testing.TB) string {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

// hog is the test binary as a CPU hog: one thread that spins until the
// process is killed, or for at most ten minutes (a hog whose test died
// must not outlive it for long).
func hog() {
	runtime.GOMAXPROCS(1)
	deadline := time.Now().Add(10 * time.Minute)
	for n := 0; ; n++ {
		if n%(1<<20) == 0 && time.Now().After(deadline) {
			os.Exit(0)
		}
	}
}

// startHog starts another process that keeps one core busy until the test
// ends: a machine other work loads, as a shared CI runner is.
func startHog(t testing.TB) {
	t.Helper()
	cmd := exec.Command(testExecutable(t), "hog")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
}
