package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stormdrill/stormdrill/drills"
	"github.com/stormdrill/stormdrill/model/queue"
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
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s\ndispatch.log (tail): %s", code, stdout, stderr, tail(string(log), 2000))
	}
	s, err := reports.ReadSummary(out)
	if err != nil {
		t.Fatal(err)
	}
	if s.Mode != "live" || s.Speed != 20 {
		t.Errorf("mode %q speed %v: want live at 20", s.Mode, s.Speed)
	}
	if len(s.Restarts) != 2 || s.Restarts[0].Graceful || s.Restarts[1].Graceful {
		t.Errorf("restarts %+v: want two kills", s.Restarts)
	}
	if s.Deliveries.Lost != 0 || s.Deliveries.Created == 0 || s.Deliveries.Delivered != s.Deliveries.Created {
		t.Errorf("deliveries %+v: want every one delivered, none lost", s.Deliveries)
	}
	for _, g := range s.Gates {
		if !g.Pass {
			t.Errorf("gate %s failed: %s", g.Expr, g.Display)
		}
	}
	t.Logf("created %d, duplicates %d, restarts %+v, healthy p99 %.2fs, lateness p99 %.2fms",
		s.Deliveries.Created, s.Duplicates, s.Restarts, s.HealthyLatencyS.P99, s.Lateness.P99*1e3)
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
