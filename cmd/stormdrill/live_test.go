package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stormdrill/stormdrill/drills"
	"github.com/stormdrill/stormdrill/fakepartner"
	"github.com/stormdrill/stormdrill/internal/testsuite"
	"github.com/stormdrill/stormdrill/model/runtime/queue"
	"github.com/stormdrill/stormdrill/reports"
)

// envCLI makes the test binary act as the stormdrill command, so that a
// live run started from a test can start `stormdrill dispatch` children:
// the test binary re-executes itself with this variable set.
const envCLI = "STORMDRILL_TEST_AS_CLI"

func TestMain(m *testing.M) {
	if os.Getenv(envCLI) == "1" {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Setenv(envCLI, "1") // inherited by the children only
	os.Exit(m.Run())
}

// TestLiveRestartDrillPassesItsGates runs the bundled live drill end to end:
// partner server, SQLite queue, dispatcher child processes killed twice.
func TestLiveRestartDrillPassesItsGates(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a live drill for about 20s")
	}
	if raceEnabled {
		t.Skip("a timed live drill; make test runs it without -race")
	}
	out := t.TempDir()
	code, stdout, stderr := stormdrill(t, "run", "drills/live-restart.toml", "--out", out, "--quiet")
	if code != exitOK {
		log, _ := os.ReadFile(filepath.Join(out, "dispatch.log"))
		var failed []string
		if s, err := reports.ReadSummary(out); err == nil {
			for _, g := range s.Gates {
				if !g.Pass {
					failed = append(failed, g.Expr+" (measured "+g.Display+")")
				}
			}
		}
		t.Fatalf("exit %d, failed gates %v\nstdout: %s\nstderr: %s\ndispatch.log (tail): %s", code, failed, stdout, stderr, tail(string(log), 2000))
	}
	s, err := reports.ReadSummary(out)
	if err != nil {
		t.Fatal(err)
	}
	if s.Mode != "live" || s.Speed != 20 {
		t.Errorf("mode %q speed %v: want live at 20", s.Mode, s.Speed)
	}
	if len(s.Restarts) != 3 || s.Restarts[0].Graceful || s.Restarts[1].Graceful || !s.Restarts[2].Graceful {
		t.Errorf("restarts %+v: want two kills, then a SIGTERM", s.Restarts)
	}
	// The runner watched every delayed delivery's run_at across the
	// restarts (a moved one fails the run with exit 3) and says so.
	md, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	if m := regexp.MustCompile(`(\d+) deliveries were delayed at a restart: (\d+) kept their run\\_at until due, \d+ were not due yet at the end, 0 moved`).FindSubmatch(md); m == nil || string(m[1]) == "0" {
		t.Errorf("report.md does not show delayed deliveries checked across the restarts")
	}
	if s.Deliveries.Lost != 0 || s.Deliveries.Created == 0 || s.Deliveries.Delivered != s.Deliveries.Created {
		t.Errorf("deliveries %+v: want every one delivered, none lost", s.Deliveries)
	}
	for _, g := range s.Gates {
		if !g.Pass {
			t.Errorf("gate %s failed: %s", g.Expr, g.Display)
		}
	}
	t.Logf("created %d, duplicates %s, restarts %+v, healthy p99 %.2fs, lateness p99 %.2fms",
		s.Deliveries.Created, reports.CountText(s.Duplicates), s.Restarts, s.HealthyLatencyS.P99, s.Lateness.P99*1e3)
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

const partnerDrill = `
name = "curl"
mode = "live"
duration = "1m"
[source]
rate = "1/s"
[[partners]]
name = "up"
count = 1
[[partners]]
name = "acme"
count = 2
  [[partners.outages]]
  start = "0s"
  for = "1h"
  kind = "unavailable"
`

// TestPartnerServesScriptedOutage starts `stormdrill partner` and calls it
// as curl would: the partner in its outage answers 503, the healthy one
// 200, and the control API shows the outage.
func TestPartnerServesScriptedOutage(t *testing.T) {
	path := filepath.Join(t.TempDir(), "curl.toml")
	if err := os.WriteFile(path, []byte(partnerDrill), 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := drills.Load(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- servePartners(ctx, d, "127.0.0.1:0", 0, pw); pw.Close() }()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, pr)
	base := strings.TrimSpace(line)
	if !strings.HasPrefix(base, "http://127.0.0.1:") {
		t.Fatalf("printed %q: want the base URL", base)
	}
	post := func(path, id string) int {
		req, _ := http.NewRequest(http.MethodPost, base+path, strings.NewReader(`{}`))
		req.Header.Set("Idempotency-Key", id)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
		resp.Body.Close()
		return resp.StatusCode
	}
	tests := []struct {
		path string
		want int
	}{
		{"/p/acme/0", 503}, // inside the scripted outage
		{"/p/acme/1", 503}, // the outage hits every member
		{"/p/up/0", 200},   // no outage
		{"/p/nobody/0", 404},
	}
	for i, tc := range tests {
		if got := post(tc.path, fmt.Sprintf("evt-%d", i)); got != tc.want {
			t.Errorf("POST %s: %d, want %d", tc.path, got, tc.want)
		}
	}
	resp, err := http.Get(base + "/control/partners")
	if err != nil {
		t.Fatal(err)
	}
	var state struct {
		Partners []struct {
			Name   string `json:"name"`
			Active []struct {
				Kind string `json:"kind"`
			} `json:"active"`
		} `json:"partners"`
	}
	err = json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&state)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	active := map[string]string{}
	for _, p := range state.Partners {
		for _, a := range p.Active {
			active[p.Name] = a.Kind
		}
	}
	if active["acme"] != "unavailable" || active["up"] != "" {
		t.Errorf("control API active outages %v: want acme unavailable only", active)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("partner server did not stop")
	}
}

// TestDLQReplayByReasonInBatches fills a DLQ with 25 max-attempts and 5
// permanent dead letters, then replays max-attempts in batches of 10.
func TestDLQReplayByReasonInBatches(t *testing.T) {
	dbPath := filepath.Join(t.TempDir(), "q.db")
	st, err := queue.OpenSQLite(dbPath)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	now := time.Now()
	var ds []queue.Delivery
	for i := 0; i < 30; i++ {
		ds = append(ds, queue.Delivery{ID: fmt.Sprintf("evt-%06d:acme-0", i), Partner: "acme-0", Cohort: "acme", Created: now})
	}
	if _, err := st.Enqueue(ctx, ds); err != nil {
		t.Fatal(err)
	}
	claimed, err := st.Claim(ctx, "t", now, time.Minute, 100)
	if err != nil || len(claimed) != 30 {
		t.Fatalf("claimed %d, %v", len(claimed), err)
	}
	var cs []queue.Completion
	for i, d := range claimed {
		reason := "max-attempts"
		if i%6 == 5 {
			reason = "permanent"
		}
		cs = append(cs, queue.Completion{ID: d.ID, Owner: "t", Kind: queue.KindDeadLetter, At: now, Attempt: 5, Reason: reason, LastError: "HTTP 503"})
	}
	if _, err := st.Complete(ctx, cs); err != nil {
		t.Fatal(err)
	}
	st.Close()
	store := "sqlite:" + dbPath
	t.Setenv("USER", "drill-operator")

	// A dry run moves nothing.
	code, out, errOut := stormdrill(t, "dlq", "replay", "--store", store, "--reason", "max-attempts", "--batch", "10", "--dry-run")
	if code != exitOK || !strings.Contains(out, "25 dead letters match") {
		t.Fatalf("dry run: exit %d, %q %q", code, out, errOut)
	}
	code, out, errOut = stormdrill(t, "dlq", "list", "--store", store, "--reason", "max-attempts", "--json")
	var listed []map[string]any
	if code != exitOK || json.Unmarshal([]byte(out), &listed) != nil || len(listed) != 25 {
		t.Fatalf("list: exit %d, %d entries, %q", code, len(listed), errOut)
	}
	code, out, errOut = stormdrill(t, "dlq", "replay", "--store", store, "--reason", "max-attempts", "--batch", "10", "--json")
	var res struct{ Matched, Moved, Batches int }
	if code != exitOK || json.Unmarshal([]byte(out), &res) != nil {
		t.Fatalf("replay: exit %d, %q %q", code, out, errOut)
	}
	if res.Matched != 25 || res.Moved != 25 || res.Batches != 3 {
		t.Errorf("replay %+v: want 25 moved in 3 batches", res)
	}

	st2, err := queue.OpenSQLite(dbPath)
	if err != nil {
		t.Fatal(err)
	}
	defer st2.Close()
	left, err := st2.DeadLetters(ctx, queue.DLQFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 5 {
		t.Errorf("%d dead letters left, want the 5 permanent ones", len(left))
	}
	for _, d := range left {
		if d.Reason != "permanent" {
			t.Errorf("%s (%s) left in the DLQ: only permanent should remain", d.ID, d.Reason)
		}
	}
	c, err := st2.Counts(ctx, time.Now().Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if c.Ready != 25 || c.Dead != 5 {
		t.Errorf("counts %+v: want 25 ready again, 5 dead", c)
	}
	replayed, err := st2.Get(ctx, claimed[0].ID)
	if err != nil || replayed.Attempt != 0 || replayed.State != queue.StateReady {
		t.Errorf("replayed %s: attempt %d state %s (%v): want the same id, fresh budget, ready", claimed[0].ID, replayed.Attempt, replayed.State, err)
	}
	audit, err := st2.Audit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var batches, moved int
	for _, a := range audit {
		if a.Who != "drill-operator" {
			t.Errorf("audit record by %q, want $USER", a.Who)
		}
		if a.DryRun {
			continue
		}
		batches++
		moved += a.Count
		if a.Count > 10 {
			t.Errorf("audit batch %d moved %d, more than --batch 10", a.Batch, a.Count)
		}
		if !strings.Contains(a.Filter, "max-attempts") {
			t.Errorf("audit filter %s does not name the reason", a.Filter)
		}
	}
	if batches != 3 || moved != 25 || len(audit) != 4 {
		t.Errorf("audit: %d records, %d batches moving %d: want 1 dry run + 3 batches moving 25", len(audit), batches, moved)
	}
}

// termDrill answers in 300ms, so a SIGTERM after the first answer finds
// attempts in flight.
const termDrill = `
name = "term"
mode = "live"
seed = 4
duration = "10s"
[source]
rate = "1/s"
[[partners]]
name = "slow"
count = 4
latency = { dist = "constant", value = "300ms" }
[dispatcher]
workers = 8
attempt_timeout = "5s"
lease_timeout = "30s"
`

// TestDispatchSIGTERMFinishesInFlightAndReleases starts `stormdrill
// dispatch` as a child process, sends it SIGTERM while attempts are in
// flight, and checks: exit status 0; no lease left held by its owner; every
// request the partners received is in the attempt history (the attempts in
// flight were finished and persisted); every delivery the partners accepted
// is delivered in the store; and nothing is lost.
func TestDispatchSIGTERMFinishesInFlightAndReleases(t *testing.T) {
	dir := t.TempDir()
	drillPath := filepath.Join(dir, "term.toml")
	if err := os.WriteFile(drillPath, []byte(termDrill), 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := drills.Load(drillPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	specs, err := d.PartnerSpecs()
	if err != nil {
		t.Fatal(err)
	}
	srv, err := fakepartner.NewServer(specs, fakepartner.ServerOptions{Seed: d.Seed})
	if err != nil {
		t.Fatal(err)
	}
	l, err := fakepartner.ListenLoopback("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(l)
	defer srv.Close()
	base := "http://" + l.Addr().String()

	dbPath := filepath.Join(dir, "queue.db")
	st, err := queue.OpenSQLite(dbPath)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	start := time.Now()
	var ds []queue.Delivery
	for e := 0; e < 30; e++ {
		for m := 0; m < 4; m++ {
			ds = append(ds, queue.Delivery{ID: fmt.Sprintf("evt-%06d:slow-%d", e, m), Partner: fmt.Sprintf("slow-%d", m), Cohort: "slow", Created: start})
		}
	}
	if _, err := st.Enqueue(ctx, ds); err != nil {
		t.Fatal(err)
	}

	const owner = "term-test"
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "dispatch", "--store", "sqlite:"+dbPath, "--drill", drillPath, "--partners", base,
		"--owner", owner, "--start", strconv.FormatInt(start.UnixNano(), 10))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(out)
		once := false
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "ready\t") && !once {
				once = true
				close(ready)
			}
		}
	}()
	select {
	case <-ready:
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("dispatcher not ready; stderr: %s", stderr.String())
	}
	// The first answers are in: the workers have moved on to the next
	// 300ms calls, and most of the 120 deliveries are still to come.
	testsuite.WaitFor(t, "the first answer", time.Minute, func() bool {
		for _, s := range srv.Stats() {
			if s.Requests > 0 {
				return true
			}
		}
		return false
	})
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("dispatch after SIGTERM: %v (want exit 0)\nstderr: %s", err, stderr.String())
		}
	case <-time.After(15 * time.Second):
		cmd.Process.Kill()
		<-exited
		t.Fatalf("dispatch did not stop within 15s of SIGTERM\nstderr: %s", stderr.String())
	}
	var inFlight int
	if i := strings.Index(stderr.String(), "stopping: "); i < 0 {
		t.Fatalf("no stopping line in stderr: %s", stderr.String())
	} else if _, err := fmt.Sscanf(stderr.String()[i:], "stopping: %d attempts in flight", &inFlight); err != nil || inFlight == 0 {
		t.Fatalf("in flight at SIGTERM: %d (%v): the test wants some; stderr: %s", inFlight, err, stderr.String())
	}

	db := st.DB()
	var leased, held, attempts, delivered, total int64
	if err := db.QueryRow(`SELECT
		(SELECT count(*) FROM deliveries WHERE state = 'leased'),
		(SELECT count(*) FROM deliveries WHERE lease_owner = ?),
		(SELECT count(*) FROM attempts),
		(SELECT count(*) FROM deliveries WHERE state = 'delivered'),
		(SELECT count(*) FROM deliveries)`, owner).Scan(&leased, &held, &attempts, &delivered, &total); err != nil {
		t.Fatal(err)
	}
	var requests, accepted int64
	for _, s := range srv.Stats() {
		requests += s.Requests
		accepted += s.Accepted
	}
	if leased != 0 || held != 0 {
		t.Errorf("%d rows leased, %d still name owner %s: want every lease released", leased, held, owner)
	}
	if attempts != requests {
		t.Errorf("the partners received %d requests, the attempt history holds %d: attempts in flight were not persisted", requests, attempts)
	}
	if delivered != accepted || delivered == 0 {
		t.Errorf("the partners accepted %d deliveries, the store has %d delivered", accepted, delivered)
	}
	if total != int64(len(ds)) {
		t.Errorf("the store holds %d deliveries, %d were enqueued", total, len(ds))
	}
	c, err := st.Counts(ctx, time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if c.Delivered+c.Ready+c.Dead != int64(len(ds)) {
		t.Errorf("counts %+v: delivered + ready + dead must be all %d", c, len(ds))
	}
	t.Logf("SIGTERM with %d in flight: %d requests, %d attempts recorded, %d delivered, %d back to ready", inFlight, requests, attempts, delivered, c.Ready)
}

// TestLiveCommandsRefuseBadStoresAndNonLoopbackURLs: usage errors exit 2
// with a message that names the flag.
func TestLiveCommandsRefuseBadStoresAndNonLoopbackURLs(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "q.db")
	st, err := queue.OpenSQLite(db)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	drill := "drills/live-restart.toml"
	ok := "http://127.0.0.1:9"
	tests := []struct {
		args []string
		want string // in stderr
	}{
		// a DSN without a scheme
		{[]string{"dispatch", "--store", db, "--drill", drill, "--partners", ok}, "--store"},
		// an unknown scheme
		{[]string{"dispatch", "--store", "mysql:x", "--drill", drill, "--partners", ok}, `unknown store "mysql"`},
		// a mistyped path would create an empty queue
		{[]string{"dispatch", "--store", "sqlite:" + db + ".typo", "--drill", drill, "--partners", ok}, "no queue there"},
		// partners off the machine
		{[]string{"dispatch", "--store", "sqlite:" + db, "--drill", drill, "--partners", "http://10.1.2.3:80"}, "not on a loopback address"},
		// a host name is not resolved, so not trusted
		{[]string{"dispatch", "--store", "sqlite:" + db, "--drill", drill, "--partners", "http://example.com"}, "not on a loopback address"},
		// https is not served by the fake partners
		{[]string{"dispatch", "--store", "sqlite:" + db, "--drill", drill, "--partners", "https://127.0.0.1:8443"}, "want http://"},
		// the alert sink must be local too
		{[]string{"dispatch", "--store", "sqlite:" + db, "--drill", drill, "--partners", ok, "--alert-url", "http://192.168.1.1/alerts"}, "--alert-url"},
		// required flags
		{[]string{"dispatch", "--store", "sqlite:" + db}, "one of --config and --drill is required"},
		// dlq on an in-memory store sees nothing
		{[]string{"dlq", "list", "--store", "memory:"}, "starts empty"},
		{[]string{"dlq", "list", "--store", "sqlite:" + filepath.Join(dir, "missing.db")}, "no queue there"},
		{[]string{"dlq", "replay", "--store", "sqlite:" + db, "--reason", "max-attempts", "--batch", "0"}, "--batch"},
		// a replay of everything, permanent failures included, must say so
		{[]string{"dlq", "replay", "--store", "sqlite:" + db}, "--all"},
		{[]string{"dlq", "replay", "--store", "sqlite:" + db, "--all", "--reason", "permanent"}, "--all excludes"},
		{[]string{"dlq", "list", "--store", "sqlite:" + db, "--reason", "bogus"}, "--reason"},
		{[]string{"dlq", "frob"}, "unknown subcommand"},
		// the partner server listens on loopback only
		{[]string{"partner", drill, "--listen", "0.0.0.0:0"}, "loopback"},
	}
	for _, tt := range tests {
		code, _, errOut := stormdrill(t, tt.args...)
		if code != exitUsage {
			t.Errorf("%v: exit %d, want 2 (stderr %q)", tt.args, code, errOut)
		}
		if !strings.Contains(errOut, tt.want) {
			t.Errorf("%v: stderr %q lacks %q", tt.args, errOut, tt.want)
		}
	}
	if _, err := os.Stat(db + ".typo"); err == nil {
		t.Errorf("a mistyped --store path was created")
	}
}
