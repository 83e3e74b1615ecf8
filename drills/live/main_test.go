package live

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"testing"
	"time"

	"github.com/stormdrill/stormdrill/model/queue"
)

// envChild makes the test binary act as `stormdrill dispatch`, so that the
// runner and the kill tests can start real dispatcher processes without
// building the command.
const envChild = "STORMDRILL_LIVE_TEST_DISPATCH"

func TestMain(m *testing.M) {
	if os.Getenv(envChild) == "1" && len(os.Args) > 1 && os.Args[1] == "dispatch" {
		os.Exit(childDispatch(os.Args[2:]))
	}
	os.Setenv(envChild, "1") // children inherit it
	os.Exit(m.Run())
}

// childDispatch is the `dispatch` command's flags, for the test binary.
func childDispatch(args []string) int {
	fs := flag.NewFlagSet("dispatch", flag.ContinueOnError)
	store := fs.String("store", "", "")
	drillPath := fs.String("drill", "", "")
	partners := fs.String("partners", "", "")
	owner := fs.String("owner", "", "")
	alertURL := fs.String("alert-url", "", "")
	speed := fs.Float64("speed", 1, "")
	start := fs.Int64("start", 0, "")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	d, err := LoadDrill(*drillPath)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	st, err := queue.Open(*store)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer st.Close()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	_, err = RunDispatcher(ctx, DispatcherConfig{Drill: d, Store: st, PartnersURL: *partners, Owner: *owner, AlertURL: *alertURL,
		Clock: Clock{Start: time.Unix(0, *start), Speed: *speed}, Events: os.Stdout, Log: os.Stderr})
	if err != nil {
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
