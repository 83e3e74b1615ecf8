package drills

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stormdrill/stormdrill/reports"
)

// actionBase is a small valid drill with an outage and dead letters to
// replay: 4 attempts and no breaker, so the outage's deliveries run out.
const actionBase = `name = "act"
seed = 3
duration = "6m"
drain = "10m"
[source]
arrival = "constant"
rate = "2/s"
[[partners]]
name = "ok"
count = 3
[[partners]]
name = "down"
outages = [{ start = "1m", for = "2m", kind = "unavailable" }]
[policy.retry]
max_attempts = 4
base = "1s"
jitter = "full"
`

// TestActionErrors: every wrong action is refused at its line, naming the
// key and saying what is wrong.
func TestActionErrors(t *testing.T) {
	cases := []struct{ name, text, prefix, msg string }{
		{"unknown kind", "[[actions]]\nkind = \"dlq-replai\"\nat = \"1m\"\n", "bad.toml:19: actions[0].kind:", "did you mean dlq-replay"},
		{"no at", "[[actions]]\nkind = \"pause-source\"\nfor = \"1m\"\n", "bad.toml:18: actions[0].at:", "required"},
		{"at after the drill", "[[actions]]\nkind = \"dlq-replay\"\nat = \"17m\"\nreason = \"max-attempts\"\n", "bad.toml:20: actions[0].at:", "outside the drill"},
		{"unknown reason", "[[actions]]\nkind = \"dlq-replay\"\nat = \"5m\"\nreason = \"max-attempt\"\n", "bad.toml:21: actions[0].reason:", "not a dead-letter reason"},
		{"reason the drill never produces", "[[actions]]\nkind = \"dlq-replay\"\nat = \"5m\"\nreason = \"circuit-open\"\n", "bad.toml:21: actions[0].reason:", "never dead-letters"},
		{"no selection", "[[actions]]\nkind = \"dlq-replay\"\nat = \"5m\"\n", "bad.toml:18: actions[0].reason:", "give reason, cohort or both"},
		{"unknown cohort", "[[actions]]\nkind = \"dlq-replay\"\nat = \"5m\"\ncohort = \"acme\"\n", "bad.toml:21: actions[0].cohort:", "names no partner cohort"},
		{"batch too big", "[[actions]]\nkind = \"dlq-replay\"\nat = \"5m\"\ncohort = \"down\"\nbatch = 20000\n", "bad.toml:22: actions[0].batch:", "between 1 and 10000"},
		{"rate too slow", "[[actions]]\nkind = \"dlq-replay\"\nat = \"5m\"\ncohort = \"down\"\nrate = \"1/d\"\n", "bad.toml:22: actions[0].rate:", "bad rate unit"},
		{"rate below an hour", "[[actions]]\nkind = \"dlq-replay\"\nat = \"5m\"\ncohort = \"down\"\nrate = \"0.5/h\"\n", "bad.toml:22: actions[0].rate:", "one batch an hour"},
		{"key of another kind", "[[actions]]\nkind = \"pause-source\"\nat = \"1m\"\nfor = \"1m\"\nbatch = 5\n", "bad.toml:22: actions[0].batch:", "does not apply"},
		{"outage-end with no outage in force", "[[actions]]\nkind = \"outage-end\"\nat = \"4m\"\ncohort = \"down\"\n", "bad.toml:20: actions[0].at:", "no outage of cohort \"down\" is in force at 4m0s"},
		{"outage-end of a missing outage", "[[actions]]\nkind = \"outage-end\"\nat = \"2m\"\ncohort = \"down\"\noutage = 2\n", "bad.toml:22: actions[0].outage:", "has 1 outages"},
		{"pause with no for", "[[actions]]\nkind = \"pause-source\"\nat = \"1m\"\n", "bad.toml:18: actions[0].for:", "required"},
		{"pause after the source", "[[actions]]\nkind = \"pause-source\"\nat = \"7m\"\nfor = \"1m\"\n", "bad.toml:20: actions[0].at:", "not before duration"},
		{"the same outage ended twice", "[[actions]]\nkind = \"outage-end\"\nat = \"2m\"\ncohort = \"down\"\n[[actions]]\nkind = \"outage-end\"\nat = \"2m30s\"\ncohort = \"down\"\n", "bad.toml:24: actions[1].at:", "same outage as actions[0]"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("bad.toml", []byte(actionBase+c.text))
			if err == nil {
				t.Fatal("no error")
			}
			es, ok := AsErrors(err)
			if !ok || len(es) == 0 {
				t.Fatalf("error %T is not Errors: %v", err, err)
			}
			first := es[0].Error()
			if !strings.HasPrefix(first, c.prefix) || !strings.Contains(first, c.msg) {
				t.Errorf("first error\n  %s\nwant prefix %q containing %q; all:\n%v", first, c.prefix, c.msg, err)
			}
		})
	}
}

func runText(t *testing.T, text string) *reports.Summary {
	t.Helper()
	d, err := Parse("t.toml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	run, err := RunSim(d, SimOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return run.Summary
}

// TestReplayInSim: a replay moves the dead letters it selects back, in
// batches at its rate, each audited; they are then delivered, and the
// accounting still holds.
func TestReplayInSim(t *testing.T) {
	before := runText(t, actionBase)
	dead := before.DeadLetterReasons["max-attempts"]
	if dead == 0 {
		t.Fatal("the base drill dead-letters nothing to replay")
	}
	s := runText(t, actionBase+"[[actions]]\nkind = \"dlq-replay\"\nat = \"5m\"\nreason = \"max-attempts\"\ncohort = \"down\"\nbatch = 7\nrate = \"2/s\"\n")
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
	s := runText(t, actionBase+"[[actions]]\nkind = \"outage-end\"\nat = \"1m30s\"\ncohort = \"down\"\n")
	if s.Outages[0].EndS != 90 {
		t.Errorf("outage ends at %vs, want 90s", s.Outages[0].EndS)
	}
	base := runText(t, actionBase)
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
	base := runText(t, actionBase)
	s := runText(t, actionBase+"[[actions]]\nkind = \"pause-source\"\nat = \"4m\"\nfor = \"30s\"\n")
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
	text := actionBase + "[[actions]]\nkind = \"dlq-replay\"\nat = \"5m\"\ncohort = \"down\"\nbatch = 5\nrate = \"1/s\"\n" +
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
	d, err := Load("fanout-replay.toml", nil)
	if err != nil {
		t.Fatal(err)
	}
	run, err := RunSim(d, SimOptions{})
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
