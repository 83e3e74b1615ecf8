package live

import (
	"testing"
	"time"
)

// TestOverloadClaimsStayBounded offers twice the raw HTTP rate of a minimal
// client loop (more than the pipeline can deliver, whatever the machine)
// for a few seconds. The dispatcher must claim what it can start, not the
// backlog: the deliveries leased in the store stay within about two claim
// batches beyond its workers (the collapse this guards against held every
// delivery of the backlog leased, 130,000 of them). Once the source stops
// the backlog drains and nothing is lost. The throughput ratio under
// overload is a benchmark figure (BenchmarkLiveCeiling), not asserted
// here: on a shared machine it is too noisy for a test.
func TestOverloadClaimsStayBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("live runs")
	}
	if raceEnabled {
		t.Skip("a load test; run without -race")
	}
	raw := rawHTTPRate(t, time.Second)
	run := liveRun(t, 2*raw, 3*time.Second)
	s := run.Summary
	const workers, claimBatch = 64, 512 // ceilingDrill's
	bound := 3*claimBatch + workers
	maxLeased := 0.0
	for _, sm := range run.Timeseries.Samples {
		maxLeased = max(maxLeased, sm.InFlight)
	}
	t.Logf("raw HTTP %.0f req/s; offered %.0f/s: %d delivered, busy rate %.0f/s, at most %.0f leased (bound %d), %d pending at the end",
		raw, 2*raw, s.Deliveries.Delivered, busyRate(run), maxLeased, bound, s.Deliveries.Pending)
	if s.Deliveries.Pending != 0 || s.Deliveries.Lost != 0 {
		t.Errorf("the backlog did not drain: %d pending, %d lost", s.Deliveries.Pending, s.Deliveries.Lost)
	}
	if maxLeased > float64(bound) {
		t.Errorf("%.0f deliveries leased at once under overload; the dispatcher should claim no more than it can start (about %d)", maxLeased, bound)
	}
}
