package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stormdrill/stormdrill/model/runtime/queue"
	"github.com/stormdrill/stormdrill/reports"
)

// timeUnitDrill: at speed 20, one partner throttles every call with a
// Retry-After of 40 drill seconds, and two attempts are allowed, so each
// delivery is dead-lettered (max-attempts) after waiting out the
// Retry-After once. The backoff (1s) is far below it.
const timeUnitDrill = `
name = "time-unit"
mode = "live"
seed = 3
speed = 20
duration = "20s"
drain = "2m"
sample_interval = "5s"
[source]
arrival = "constant"
rate = "0.5/s"
[[partners]]
name = "busy"
count = 1
latency = { dist = "constant", value = "20ms" }
  [[partners.outages]]
  start = "0s"
  for = "1h"
  kind = "throttle"
  retry_after = "40"
[policy.retry]
max_attempts = 2
base = "1s"
cap = "5m"
jitter = "none"
[dispatcher]
workers = 2
attempt_timeout = "10s"
`

// TestLiveSpeedOneTimeUnit runs a live drill at speed 20 and checks the
// one time unit end to end: the partner sends Retry-After in wall seconds
// (40 drill seconds as 2) and the dispatcher reads it back as 40 drill
// seconds, so the retry comes 40 drill seconds later, not 2 or 800; `dlq`
// shows the wall-clock instants of the run; `--older-than` measures from
// the wall clock.
func TestLiveSpeedOneTimeUnit(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a live drill for a few seconds")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "time-unit.toml")
	if err := os.WriteFile(path, []byte(timeUnitDrill), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	began := time.Now()
	code, stdout, stderr := stormdrill(t, "run", path, "--out", out, "--quiet")
	ended := time.Now()
	if code != exitOK {
		t.Fatalf("run: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	s, err := reports.ReadSummary(out)
	if err != nil {
		t.Fatal(err)
	}
	if s.Deliveries.Created == 0 || s.DeadLetterReasons["max-attempts"] != s.Deliveries.Created {
		t.Fatalf("deliveries %+v, dead letters %v: want every delivery dead-lettered after two attempts", s.Deliveries, s.DeadLetterReasons)
	}
	store := "sqlite:" + filepath.Join(out, "queue.db")

	code, stdout, stderr = stormdrill(t, "dlq", "list", "--store", store, "--json")
	var listed []dlqEntryJSON
	if code != exitOK || json.Unmarshal([]byte(stdout), &listed) != nil || len(listed) != int(s.Deliveries.Created) {
		t.Fatalf("dlq list: exit %d, %d entries (want %d), %s", code, len(listed), s.Deliveries.Created, stderr)
	}
	var latest time.Time
	for _, d := range listed {
		// Wall-clock instants of the run. On the drill clock, the last
		// ones would fall a minute or more after the run had ended.
		for _, at := range []time.Time{d.Created, d.FirstSeen, d.DeadAt} {
			if at.Before(began) || at.After(ended) {
				t.Errorf("%s: time %v outside the run [%v, %v]", d.ID, at.Format(time.RFC3339Nano), began.Format(time.RFC3339Nano), ended.Format(time.RFC3339Nano))
			}
		}
		if d.DeadAt.After(latest) {
			latest = d.DeadAt
		}
		// The retry waited out the Retry-After: 40 drill seconds are 2
		// wall seconds at speed 20. Read as drill seconds off the wire,
		// "2" would be 0.1 s; sent unscaled and multiplied, "40" would be
		// 40 s; the upper bound leaves a busy machine 13 s of slack.
		code, stdout, _ := stormdrill(t, "dlq", "show", "--store", store, d.ID, "--json")
		var shown struct {
			History []struct {
				Started, Ended time.Time
			} `json:"attempts_history"`
		}
		if code != exitOK || json.Unmarshal([]byte(stdout), &shown) != nil || len(shown.History) != 2 {
			t.Fatalf("dlq show %s: exit %d, %s", d.ID, code, stdout)
		}
		gap := shown.History[1].Started.Sub(shown.History[0].Ended)
		if gap < 1900*time.Millisecond || gap > 15*time.Second {
			t.Errorf("%s: retry %v of wall time after the throttled attempt; want about 2s (40 drill seconds at speed 20)", d.ID, gap)
		}
	}

	// --older-than is an age on the wall clock: once a second has passed
	// since the last dead letter, all of them are older than a second,
	// none older than an hour. The command's clock is moved on to then
	// rather than waited for.
	ahead := max(time.Until(latest.Add(1100*time.Millisecond)), 0)
	dlqNow = func() time.Time { return time.Now().Add(ahead) }
	defer func() { dlqNow = time.Now }()
	for older, want := range map[string]int{"1s": len(listed), "1h": 0} {
		code, stdout, stderr := stormdrill(t, "dlq", "list", "--store", store, "--older-than", older, "--json")
		var got []dlqEntryJSON
		if code != exitOK || json.Unmarshal([]byte(stdout), &got) != nil || len(got) != want {
			t.Errorf("dlq list --older-than %s: exit %d, %d entries, want %d (%s)", older, code, len(got), want, stderr)
		}
	}
	// Replay runs the deliveries again from now on the run's clock, the
	// one the store's run_at is written on.
	before := dlqNow()
	code, stdout, stderr = stormdrill(t, "dlq", "replay", "--store", store, "--reason", "max-attempts", "--older-than", "1s", "--json")
	var res struct{ Moved int }
	if code != exitOK || json.Unmarshal([]byte(stdout), &res) != nil || res.Moved != len(listed) {
		t.Fatalf("dlq replay: exit %d, %s %s; want %d moved", code, stdout, stderr, len(listed))
	}
	st, err := queue.OpenSQLite(filepath.Join(out, "queue.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	clock, err := st.Clock(ctx)
	if err != nil || clock.Speed != 20 {
		t.Fatalf("recorded clock %+v, %v: want speed 20", clock, err)
	}
	d, err := st.Get(ctx, listed[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	if w := clock.Wall(d.RunAt); w.Before(before.Add(-time.Millisecond)) || w.After(dlqNow()) {
		t.Errorf("replayed run_at is wall %v, want within the replay [%v, now]", w, before)
	}
}
