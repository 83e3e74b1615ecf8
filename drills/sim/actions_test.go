package sim

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stormdrill/stormdrill/drills"
	"github.com/stormdrill/stormdrill/reports"
)

func runText(t *testing.T, text string) *reports.Summary {
	t.Helper()
	d, err := drills.Parse("t.toml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	run, err := Run(d, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return run.Summary
}

// TestReplayInSim: a replay moves the dead letters it selects back, in
// batches at its rate, each audited; they are then delivered, and the
// accounting still holds.
func TestReplayInSim(t *testing.T) {
	before := runText(t, actionBase(t))
	dead := before.DeadLetterReasons["max-attempts"]
	if dead == 0 {
		t.Fatal("the base drill dead-letters nothing to replay")
	}
	s := runText(t, actionBase(t)+"[[actions]]\nkind = \"dlq-replay\"\nat = \"5m\"\nreason = \"max-attempts\"\ncohort = \"down\"\nbatch = 7\nrate = \"2/s\"\n")
	if len(s.Replays) != 1 || len(s.Actions) != 1 {
		t.Fatalf("replays %d, actions %d; want 1 and 1", len(s.Replays), len(s.Actions))
	}
	r := s.Replays[0]
	if r.Matched != dead || r.Replayed != dead {
		t.Errorf("matched %d, replayed %d; the DLQ held %d max-attempts dead letters", r.Matched, r.Replayed, dead)
	}
	wantBatches := (dead + 6) / 7
	if r.Batches != wantBatches || int64(len(r.Audit)) != wantBatches {
		t.Errorf("batches %d, audit records %d; want %d", r.Batches, len(r.Audit), wantBatches)
	}
	var sum int64
	for i, a := range r.Audit {
		sum += a.Count
		if want := 300 + float64(i)*0.5; math.Abs(a.AtS-want) > 1e-9 {
			t.Errorf("batch %d at %vs, want %vs (2 batches/s from 5m)", a.Batch, a.AtS, want)
		}
		if a.Count > 7 || a.Who != "drill action 1" {
			t.Errorf("batch %d: count %d, who %q", a.Batch, a.Count, a.Who)
		}
	}
	if sum != dead {
		t.Errorf("audit records move %d, want %d", sum, dead)
	}
	if r.Delivered != dead || r.DeadLettered != 0 || r.Pending != 0 {
		t.Errorf("replayed deliveries: delivered %d, dead %d, pending %d; want all %d delivered", r.Delivered, r.DeadLettered, r.Pending, dead)
	}
	if r.DrainTimeS == nil || *r.DrainTimeS < r.LastBatchS-r.AtS {
		t.Errorf("replay drain %v, last batch %vs after its start", r.DrainTimeS, r.LastBatchS-r.AtS)
	}
	if r.Attempts < r.Replayed || r.Amplification < 1 {
		t.Errorf("attempts %d, amplification %v for %d replayed", r.Attempts, r.Amplification, r.Replayed)
	}
	if s.DeadLetterReasons["max-attempts"] != 0 {
		t.Errorf("the DLQ still holds %d max-attempts dead letters", s.DeadLetterReasons["max-attempts"])
	}
	if s.Deliveries.Created != before.Deliveries.Created || s.Deliveries.Delivered != before.Deliveries.Delivered+dead || s.Deliveries.Lost != 0 {
		t.Errorf("deliveries %+v; without the replay %+v", s.Deliveries, before.Deliveries)
	}
	// The outage's drain time is the pipeline's own: the replay is after it.
	if *s.Outages[0].DrainTimeS != *before.Outages[0].DrainTimeS {
		t.Errorf("outage drain %v with the replay, %v without", *s.Outages[0].DrainTimeS, *before.Outages[0].DrainTimeS)
	}
	if !(r.LoadDuringPerS > r.LoadBeforePerS && r.LoadPeakPerS >= r.LoadDuringPerS) {
		t.Errorf("load before %v, during %v, peak %v: the replay should add load", r.LoadBeforePerS, r.LoadDuringPerS, r.LoadPeakPerS)
	}
}

// TestOutageEndAction: the operator's fix ends the outage at its time;
// the report's outage and its drain follow the real end.
func TestOutageEndAction(t *testing.T) {
	s := runText(t, actionBase(t)+"[[actions]]\nkind = \"outage-end\"\nat = \"1m30s\"\ncohort = \"down\"\n")
	if s.Outages[0].EndS != 90 {
		t.Errorf("outage ends at %vs, want 90s", s.Outages[0].EndS)
	}
	base := runText(t, actionBase(t))
	if s.DeadLetterReasons["max-attempts"] >= base.DeadLetterReasons["max-attempts"] {
		t.Errorf("max-attempts dead letters %d with the early fix, %d without", s.DeadLetterReasons["max-attempts"], base.DeadLetterReasons["max-attempts"])
	}
	if len(s.Actions) != 1 || !strings.Contains(s.Actions[0].Detail, "30s early") {
		t.Errorf("actions %+v", s.Actions)
	}
}

// TestPauseSourceAction: a pause holds the source's events and releases
// them at its end; none is lost and their latency counts from their
// scheduled arrival.
func TestPauseSourceAction(t *testing.T) {
	base := runText(t, actionBase(t))
	s := runText(t, actionBase(t)+"[[actions]]\nkind = \"pause-source\"\nat = \"4m\"\nfor = \"30s\"\n")
	if s.Deliveries.Created != base.Deliveries.Created || s.Deliveries.Lost != 0 {
		t.Errorf("created %d (%d without the pause), lost %d", s.Deliveries.Created, base.Deliveries.Created, s.Deliveries.Lost)
	}
	// 60 events of 4 deliveries are held 0 to 30 s: 15 s each on average.
	if s.SourceHeldBackMaxS < 29 || s.SourceHeldBackMaxS > 30 || s.SourceHeldBackS < 60*14 || s.SourceHeldBackS > 60*16 {
		t.Errorf("held back %vs in all, at most %vs", s.SourceHeldBackS, s.SourceHeldBackMaxS)
	}
	if s.HealthyLatencyS.Max < 29 {
		t.Errorf("healthy latency max %vs: held events count from their scheduled arrival", s.HealthyLatencyS.Max)
	}
}

// TestActionsDeterministic: actions keep the same seed's summary the same.
func TestActionsDeterministic(t *testing.T) {
	text := actionBase(t) + "[[actions]]\nkind = \"dlq-replay\"\nat = \"5m\"\ncohort = \"down\"\nbatch = 5\nrate = \"1/s\"\n" +
		"[[actions]]\nkind = \"pause-source\"\nat = \"2m\"\nfor = \"20s\"\n"
	a, _ := json.Marshal(runText(t, text))
	b, _ := json.Marshal(runText(t, text))
	if !bytes.Equal(a, b) {
		t.Error("two runs of one seed differ")
	}
}

// TestFanoutReplay: the bundled replay drill passes its gates, replays the
// flagship outage's max-attempts dead letters and delivers every one, and
// its gate on healthy p99 during the replay holds.
func TestFanoutReplay(t *testing.T) {
	d := loadDrill(t, "fanout-replay.toml", nil)
	run, err := Run(d, Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := run.Summary
	reports.Judge(s)
	if !s.Pass {
		t.Errorf("gates fail: %v", s.Failures)
	}
	if len(s.Replays) != 1 {
		t.Fatalf("%d replays", len(s.Replays))
	}
	r := s.Replays[0]
	if r.Replayed == 0 || r.Delivered != r.Replayed || r.Pending != 0 || r.DrainTimeS == nil {
		t.Errorf("replayed %d, delivered %d, pending %d, drain %v", r.Replayed, r.Delivered, r.Pending, r.DrainTimeS)
	}
	found := false
	for _, g := range s.Gates {
		if g.Expr == "replay.healthy.latency.p99 < 30m" {
			found = true
			if !g.Pass || r.HealthyLatencyS.Count == 0 || g.Value != r.HealthyLatencyS.P99 {
				t.Errorf("gate %+v; healthy during the replay %+v", g, r.HealthyLatencyS)
			}
		}
	}
	if !found {
		t.Error("no gate on healthy p99 during the replay")
	}
}

// TestRetrySpreadHerd: 400 deliveries fail together at an outage's start
// and retry after 5 minutes. Hash jitter brings them back within 2^32 ns
// (about 4.3 s, 1.4% of the delay); full jitter spreads them over nearly
// all of it.
func TestRetrySpreadHerd(t *testing.T) {
	herd := func(jitter string) *reports.RetrySpread {
		text := `name = "herd"
seed = 5
duration = "11m"
drain = "1m"
[source]
arrival = "burst"
events = 1
at = "10s"
[[partners]]
name = "api"
count = 400
latency = { dist = "constant", value = "10ms" }
outages = [{ start = "0s", for = "12m", kind = "unavailable" }]
[policy.retry]
max_attempts = 2
base = "5m"
cap = "5m"
multiplier = 1
jitter = "` + jitter + `"
[dispatcher]
workers = 400
`
		s := runText(t, text)
		if len(s.Outages) != 1 || s.Outages[0].RetrySpread == nil {
			t.Fatalf("%s: no retry spread: %+v", jitter, s.Outages)
		}
		return s.Outages[0].RetrySpread
	}
	h := herd("hash")
	limit := float64(1<<32) / float64(5*time.Minute)
	if h.Groups != 1 || h.Deliveries != 400 || h.P50 > limit || h.P50 < 0.8*limit {
		t.Errorf("hash: %+v; want one group of 400 with a spread just under %.4f", h, limit)
	}
	f := herd("full")
	if f.Groups != 1 || f.P50 < 0.95 || f.P50 > 1 {
		t.Errorf("full: %+v; want a spread near 1", f)
	}
	t.Logf("retry spread at a 5-minute delay: hash %.4f (%.2f s), full %.4f", h.P50, h.P50*300, f.P50)
}
