package live

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stormdrill/stormdrill/model/runtime/queue"
)

// replayDrill: "down" fails every call for its first 2 s and the policy
// gives up after 2 attempts, so its early deliveries are dead-lettered as
// max-attempts; at 4 s the operator replays them, 5 per batch at 10
// batches/s. The source also pauses from 1 s to 1.5 s.
const replayDrill = `
name = "replay-live"
mode = "live"
seed = 4
duration = "3s"
drain = "30s"
sample_interval = "250ms"
[source]
arrival = "constant"
rate = "10/s"
[[partners]]
name = "ok"
latency = { dist = "constant", value = "5ms" }
[[partners]]
name = "down"
latency = { dist = "constant", value = "5ms" }
outages = [{ start = "0s", for = "2s", kind = "unavailable" }]
[policy.retry]
max_attempts = 2
base = "100ms"
cap = "100ms"
jitter = "none"
[dispatcher]
workers = 4
attempt_timeout = "2s"
[[actions]]
kind = "dlq-replay"
at = "4s"
reason = "max-attempts"
cohort = "down"
batch = 5
rate = "10/s"
[[actions]]
kind = "pause-source"
at = "1s"
for = "500ms"
`

// TestLiveReplayAction: a live drill's dlq-replay moves the dead letters
// back through the store's replay (the code of stormdrill dlq replay),
// in batches with an audit record each, and every replayed delivery is
// delivered; a pause holds the source's events. Counts only, no timing.
func TestLiveReplayAction(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a live drill")
	}
	dir := t.TempDir()
	run, err := Run(parseDrill(t, replayDrill), dir, Options{Executable: testExecutable(t), Log: logWriter{t}})
	if err != nil {
		t.Fatal(err)
	}
	s := run.Summary
	if s.Deliveries.Lost != 0 || s.Deliveries.Pending != 0 || s.Deliveries.Created != 60 {
		t.Fatalf("deliveries %+v: want 60 created, none pending or lost", s.Deliveries)
	}
	if len(s.Replays) != 1 {
		t.Fatalf("%d replays", len(s.Replays))
	}
	r := s.Replays[0]
	if r.Replayed == 0 || r.Replayed != r.Matched || r.Delivered != r.Replayed || r.Pending != 0 || r.DrainTimeS == nil {
		t.Errorf("replay %+v: want the matched dead letters all replayed and delivered", r)
	}
	if want := (r.Replayed + 4) / 5; r.Batches != want || int64(len(r.Audit)) != want {
		t.Errorf("%d batches, %d audit records; want %d of at most 5", r.Batches, len(r.Audit), want)
	}
	if r.Attempts < r.Replayed {
		t.Errorf("%d attempts of %d replayed deliveries", r.Attempts, r.Replayed)
	}
	if s.DeadLetterReasons["max-attempts"] != 0 {
		t.Errorf("max-attempts dead letters left: %v", s.DeadLetterReasons)
	}
	// The outage's retry spread, from the partner's side: deliveries
	// whose first attempt failed in the same second form groups.
	if sp := s.Outages[0].RetrySpread; sp == nil || sp.Groups == 0 || sp.Deliveries < 2*sp.Groups {
		t.Errorf("retry spread %+v: want groups of deliveries that failed together", sp)
	}
	if s.SourceHeldBackMaxS <= 0 {
		t.Errorf("the pause held nothing back (max %vs)", s.SourceHeldBackMaxS)
	}
	// The store's own audit: one record per batch, by the drill action.
	st, err := queue.OpenSQLite(filepath.Join(dir, "queue.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	audit, err := st.Audit(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var moved int64
	for _, a := range audit {
		if a.Who != "drill action 1" || a.DryRun {
			t.Errorf("audit record %+v", a)
		}
		moved += int64(a.Count)
	}
	if int64(len(audit)) != r.Batches || moved != r.Replayed {
		t.Errorf("store audit: %d records moving %d; report: %d batches, %d replayed", len(audit), moved, r.Batches, r.Replayed)
	}
	t.Logf("replay %+v", r)
}
