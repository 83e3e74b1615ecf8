package live

import (
	"testing"
)

// heldDrill: one partner of three is down from 2s to 8s; its breaker
// opens after three failures and, in hold mode, keeps its deliveries in
// the dispatcher's memory, due and leased. The backoff is short (100ms)
// so that what waits is the breaker, not the backoff.
const heldDrill = `
name = "held"
mode = "live"
seed = 21
speed = 5
duration = "12s"
drain = "10s"
sample_interval = "250ms"
[source]
arrival = "constant"
rate = "4/s"
[[partners]]
name = "ok"
count = 2
latency = { dist = "constant", value = "5ms" }
[[partners]]
name = "down"
count = 1
latency = { dist = "constant", value = "5ms" }
  [[partners.outages]]
  start = "2s"
  for = "6s"
  kind = "unavailable"
[policy.retry]
max_attempts = 50
base = "100ms"
cap = "100ms"
jitter = "none"
[policy.breaker]
trip = "consecutive"
threshold = 3
cooldown = "2s"
on_open = "hold"
[dispatcher]
workers = 8
attempt_timeout = "1s"
lease_timeout = "30s"
`

// TestBreakerHeldDeliveriesCountAsDelayed: while the breaker holds the
// down partner's due deliveries, the samples count them as delayed (as
// the simulation's Snapshot does), so the oldest delayed age grows with
// the outage while the oldest ready age, now only the healthy partners'
// deliveries waiting for a worker, stays small.
func TestBreakerHeldDeliveriesCountAsDelayed(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a live drill")
	}
	if raceEnabled {
		// Timing, not memory safety, is what this test checks: under the
		// race detector the dispatcher fell seconds behind a 6s outage at
		// speed 5 (the breaker never opened, or opened late).
		t.Skip("timing of a breaker's outage window; run without -race")
	}
	d := parseDrill(t, heldDrill)
	run, err := Run(d, t.TempDir(), Options{Executable: testExecutable(t), Log: logWriter{t}})
	if err != nil {
		t.Fatal(err)
	}
	s := run.Summary
	if s.Deliveries.Lost != 0 || s.Deliveries.Pending != 0 {
		t.Fatalf("deliveries %+v: want nothing lost or pending", s.Deliveries)
	}
	opened := false
	for _, tr := range s.BreakerTransitions {
		opened = opened || tr.To == "open"
	}
	if !opened {
		t.Fatalf("the breaker never opened: the drill exercised nothing (transitions %+v)", s.BreakerTransitions)
	}
	// From a second after the outage starts (the breaker is open by then)
	// until just before it ends (the last probe, after 8s, closes it).
	const from, to = 3.0, 7.9
	var maxReady, maxDelayed, firstDelayed float64
	n := 0
	for _, smp := range run.Timeseries.Samples {
		if smp.T < from || smp.T > to {
			continue
		}
		if n == 0 {
			firstDelayed = smp.OldestDelayedAgeS
		}
		n++
		maxReady = max(maxReady, smp.OldestReadyAgeS)
		maxDelayed = max(maxDelayed, smp.OldestDelayedAgeS)
		if smp.Delayed < 1 {
			t.Errorf("t=%.2fs: delayed depth %v, ready %v: the breaker's held deliveries are not counted as delayed", smp.T, smp.Delayed, smp.Ready)
		}
	}
	if n < 10 {
		t.Fatalf("only %d samples in [%v, %v]s", n, from, to)
	}
	// Held deliveries counted as ready would make the oldest ready age the
	// oldest held one's, which grows with the outage to maxDelayed (4s or
	// more, checked below). Healthy deliveries answer in 5ms, but a ready
	// one's age is also how long the dispatcher process waited for a CPU:
	// 100ms of wall time (0.5s of drill time at speed 5) at load 11. Half
	// of maxDelayed tells the two apart with a margin of more than 0.5s of
	// wall time either side.
	if maxReady >= maxDelayed/2 {
		t.Errorf("oldest ready age reached %.2fs during the outage, the oldest delayed age %.2fs: want under half of it", maxReady, maxDelayed)
	}
	// The first held delivery was created about 2s in; by 7.9s it is
	// about 5.9s old.
	if maxDelayed < 4 || maxDelayed <= firstDelayed {
		t.Errorf("oldest delayed age %.2fs at %.1fs, at most %.2fs by %.1fs: want it to grow past 4s", firstDelayed, from, maxDelayed, to)
	}
	t.Logf("outage window: %d samples, oldest ready age max %.3fs, oldest delayed age %.2fs -> %.2fs; transitions %d",
		n, maxReady, firstDelayed, maxDelayed, len(s.BreakerTransitions))
}
