package live

import (
	"fmt"
	"testing"
	"time"
)

// overloadLeasedBound is how many deliveries the dispatcher of
// ceilingDrill (64 workers, claim batches of 512) may hold leased at once
// under overload: about two claim batches beyond its workers, with one
// more batch of slack. The collapse this guards against held every
// delivery of the backlog leased, 130,000 of them.
const overloadLeasedBound = 3*512 + 64

// TestOverloadDrainsAndLeasesOnlyWhatItCanStart offers the pipeline three
// times what a bare HTTP client loop sends to the same partner server for
// one second: beyond what the pipeline delivers, 0.5-0.7× of the loop's
// rate on a quiet machine and up to 1× on a busy one, where the
// pipeline's two processes get more of the cores than the loop's one.
// The dispatcher claims what it can start, not the backlog: the
// deliveries leased in the store stay within overloadLeasedBound; once
// the source stops the backlog drains and nothing is lost. How much of
// its ceiling the pipeline sustains meanwhile is a rate on the wall
// clock, which BenchmarkLiveOverload measures.
func TestOverloadDrainsAndLeasesOnlyWhatItCanStart(t *testing.T) {
	if testing.Short() {
		t.Skip("live runs")
	}
	if raceEnabled {
		t.Skip("a load test; run without -race")
	}
	raw := rawHTTPRate(t, time.Second)
	const offer, source = 3, time.Second
	run := liveRun(t, offer*raw, source)
	s := run.Summary
	maxLeased, backlogged, n := 0.0, 0, 0
	for _, sm := range run.Timeseries.Samples {
		maxLeased = max(maxLeased, sm.InFlight)
		if sm.T > 0 && sm.T <= source.Seconds() {
			n++
			if sm.Ready > 0 {
				backlogged++
			}
		}
	}
	t.Logf("raw HTTP %.0f req/s; offered %.0f/s: %.0f/s, %d delivered, at most %.0f leased (bound %d), a backlog in %d of %d samples",
		raw, offer*raw, busyRate(run), s.Deliveries.Delivered, maxLeased, overloadLeasedBound, backlogged, n)
	if 2*backlogged < n {
		t.Fatalf("a backlog in only %d of %d samples: the pipeline was not overloaded, the test checks nothing", backlogged, n)
	}
	if s.Deliveries.Pending != 0 || s.Deliveries.Lost != 0 {
		t.Errorf("the backlog did not drain: %d pending, %d lost", s.Deliveries.Pending, s.Deliveries.Lost)
	}
	if maxLeased > overloadLeasedBound {
		t.Errorf("%.0f deliveries leased at once; the dispatcher should claim no more than it can start (about %d)", maxLeased, overloadLeasedBound)
	}
}

// BenchmarkLiveOverload measures the pipeline's ceiling and then offers
// it twice that, twice for two seconds (up to four times while the means
// fall short of 0.9×), in one sitting, so both figures come from the same
// machine under the same load (see ceilingOverload). All of it runs beside
// a CPU hog, another process that keeps one core busy: the pipeline must
// not collapse on a loaded machine either. It prints the rate sustained
// under twice the ceiling as a ratio to the ceiling; the target is at
// least 0.9× (the collapse this guards against fell to 0.18×).
//
//	go test -run '^$' -bench LiveOverload -benchtime 1x ./drills/live/
func BenchmarkLiveOverload(b *testing.B) {
	startHog(b)
	const probe, overload = 2 * time.Second, 2 * time.Second
	for i := 0; i < b.N; i++ {
		raw := rawHTTPRate(b, time.Second)
		ceiling, sustained, ceilings, overs := ceilingOverload(b, raw, probe, overload, 0.9, 4)
		var pending int64
		for _, o := range overs {
			pending += o.Summary.Deliveries.Pending + o.Summary.Deliveries.Lost
		}
		b.ReportMetric(sustained/ceiling, "overload/ceiling")
		fmt.Printf("\nlive overload beside a one-core hog, %s: raw HTTP %.0f req/s; ceiling %.0f/s (runs %.0f); offered twice that: sustained %.0f/s = %.2f× the ceiling (target ≥ 0.90×); %d pending or lost at the end\n",
			machineLoad(), raw, ceiling, ceilings, sustained, sustained/ceiling, pending)
	}
}
