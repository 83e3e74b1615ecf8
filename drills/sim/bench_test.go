//go:build unix

package sim

import (
	"runtime"
	"testing"
	"time"

	"github.com/stormdrill/stormdrill/drills"
	"github.com/stormdrill/stormdrill/internal/testsuite"
)

// runMeasure is one simulated run and what it cost.
type runMeasure struct {
	attempts  int64
	drillTime time.Duration
	cpu, wall time.Duration
	peakHeap  uint64 // largest HeapInuse seen during the run
	peakLive  uint64 // largest heap after a forced GC (liveEvery > 0 only)
	// peakPending is the run's peak of deliveries created and not yet
	// delivered or dead-lettered.
	peakPending int64
}

// measureRun runs d, sampling the heap from the progress callback (every
// 2^16 simulation events). With liveEvery > 0 every liveEvery-th sample
// forces a GC first, so peakLive is live data, not garbage; that slows the
// run, so benchmarks of speed pass 0.
func measureRun(tb testing.TB, d *drills.Drill, liveEvery int) runMeasure {
	tb.Helper()
	var m runMeasure
	var ms runtime.MemStats
	calls := 0
	opt := Options{Progress: func(drills.Progress) {
		calls++
		if liveEvery > 0 && calls%liveEvery == 0 {
			runtime.GC()
			runtime.ReadMemStats(&ms)
			m.peakLive = max(m.peakLive, ms.HeapAlloc)
		} else {
			runtime.ReadMemStats(&ms)
		}
		m.peakHeap = max(m.peakHeap, ms.HeapInuse)
	}}
	runtime.GC()
	cpu0, wall0 := testsuite.ProcessCPU(tb), time.Now()
	run, err := Run(d, opt)
	m.cpu, m.wall = testsuite.ProcessCPU(tb)-cpu0, time.Since(wall0)
	if err != nil {
		tb.Fatal(err)
	}
	m.attempts = run.Summary.Attempts.Total
	m.peakPending = run.Summary.PeakPending
	m.drillTime = time.Duration(run.Summary.DrillTimeS * float64(time.Second))
	return m
}

func benchSim(b *testing.B, d *drills.Drill) {
	var sum runMeasure
	n := 0
	for b.Loop() {
		m := measureRun(b, d, 0)
		sum.attempts += m.attempts
		sum.cpu += m.cpu
		sum.wall += m.wall
		sum.drillTime += m.drillTime
		sum.peakHeap = max(sum.peakHeap, m.peakHeap)
		n++
	}
	b.ReportMetric(float64(sum.attempts)/sum.cpu.Seconds(), "attempts/cpu-s")
	b.ReportMetric(float64(sum.attempts)/float64(n), "attempts/op")
	b.ReportMetric(float64(sum.peakHeap)/(1<<20), "peak-heap-MB")
	b.ReportMetric(sum.drillTime.Seconds()/sum.wall.Seconds(), "drill-s/wall-s")
}

// BenchmarkSimFlagship runs the flagship drill (200 subscribers, one down
// for 20 minutes, an hour of events) and reports simulated attempts per
// CPU-second, the peak heap in use and how much faster than real time the
// drill runs.
func BenchmarkSimFlagship(b *testing.B) {
	benchSim(b, loadDrill(b, "fanout-outage.toml", nil))
}

// BenchmarkSimFlagship10x is the flagship drill ten times larger: 2,000
// subscribers (the healthy cohort grows, acme stays one) and, so that it is
// the same pipeline at scale rather than an overload, ten times the workers
// and the queue bound.
func BenchmarkSimFlagship10x(b *testing.B) {
	d := loadDrill(b, "fanout-outage.toml", nil)
	total := 0
	for _, p := range d.Partners {
		total += p.Count
	}
	d.Partners[0].Count += 9 * total
	d.Dispatcher.Workers *= 10
	d.Dispatcher.QueueCapacity *= 10
	benchSim(b, d)
}

// steadyFlagship is the flagship drill without its outage, lasting length:
// the backlog stays small and the same whatever the length.
func steadyFlagship(tb testing.TB, length string) *drills.Drill {
	d := loadDrill(tb, "fanout-outage.toml", map[string]string{"duration": `"` + length + `"`})
	for i := range d.Partners {
		d.Partners[i].Outages = nil
	}
	return d
}

// BenchmarkSimMemoryByLength reports the peak live heap of the same steady
// drill at 1h and 4h: memory follows pending deliveries, not drill length.
func BenchmarkSimMemoryByLength(b *testing.B) {
	for _, length := range []string{"1h", "4h"} {
		b.Run(length, func(b *testing.B) {
			d := steadyFlagship(b, length)
			var peak uint64
			for b.Loop() {
				peak = max(peak, measureRun(b, d, 8).peakLive)
			}
			b.ReportMetric(float64(peak)/(1<<20), "peak-live-heap-MB")
		})
	}
}

// TestMemoryIndependentOfDrillLength: four times the drill length with the
// same traffic and backlog keeps the peak live heap within 1.5× (the time
// series grows with length, up to MaxSamples; deliveries do not).
func TestMemoryIndependentOfDrillLength(t *testing.T) {
	if testing.Short() {
		t.Skip("runs five simulated hours")
	}
	short := measureRun(t, steadyFlagship(t, "1h"), 8)
	long := measureRun(t, steadyFlagship(t, "4h"), 8)
	t.Logf("peak live heap: 1h %.1f MB, 4h %.1f MB", float64(short.peakLive)/(1<<20), float64(long.peakLive)/(1<<20))
	if short.peakLive == 0 || long.attempts < 3*short.attempts {
		t.Fatalf("measurement failed: peak %d, attempts %d vs %d", short.peakLive, long.attempts, short.attempts)
	}
	if float64(long.peakLive) > 1.5*float64(short.peakLive) {
		t.Errorf("peak live heap %.1f MB for 4h vs %.1f MB for 1h: memory grows with drill length",
			float64(long.peakLive)/(1<<20), float64(short.peakLive)/(1<<20))
	}
}

// backlogFlagship is the flagship drill, 40 minutes long, with 30 acme
// subscribers down for outage from minute 10: the backlog, and nothing
// else, grows with the outage.
func backlogFlagship(tb testing.TB, outage time.Duration) *drills.Drill {
	d := loadDrill(tb, "fanout-outage.toml", map[string]string{"duration": `"40m"`})
	d.Partners[1].Outages[0].For.D = outage
	d.Partners[1].Count = 30
	d.Dispatcher.QueueCapacity = 1_000_000
	return d
}

// TestMemoryFollowsPending: a longer outage grows the backlog; the peak
// live heap grows by a bounded amount per extra pending delivery (its item
// and its queue entry), not by more.
func TestMemoryFollowsPending(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two simulated hours")
	}
	short := measureRun(t, backlogFlagship(t, 5*time.Minute), 1)
	long := measureRun(t, backlogFlagship(t, 20*time.Minute), 1)
	extra := long.peakPending - short.peakPending
	t.Logf("peak pending %d → %d, peak live heap %.1f → %.1f MB", short.peakPending, long.peakPending,
		float64(short.peakLive)/(1<<20), float64(long.peakLive)/(1<<20))
	if short.peakLive == 0 || extra < short.peakPending/2 {
		t.Fatalf("measurement failed: peak live %d, peak pending %d → %d", short.peakLive, short.peakPending, long.peakPending)
	}
	perPending := (float64(long.peakLive) - float64(short.peakLive)) / float64(extra)
	t.Logf("%.0f bytes of live heap per extra pending delivery", perPending)
	if perPending > 512 {
		t.Errorf("%.0f bytes of live heap per extra pending delivery, want at most 512", perPending)
	}
}
