package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"sync"
	"time"

	"github.com/stormdrill/stormdrill/drills"
	"github.com/stormdrill/stormdrill/drills/sim"
)

const benchExamples = `  stormdrill bench
  stormdrill bench --drill drills/edi-partner.toml --scale 1,10
  stormdrill bench --scale 1,10,100 --cpuprofile sim.pprof   # then: go tool pprof sim.pprof`

// cmdBench measures the simulator on a drill and prints a table: simulated
// attempts per CPU-second beside the bare retry loop's rate at the row's
// own peak pending (the matched reference, the fastest of three runs just
// after the row), their ratio; the most deliveries the run held pending;
// peak heap in use and that heap per pending delivery (what the simulator
// spends on each, fixed costs included); how much faster than real time
// the drill ran; and the process's heap before the run with the run's own
// bytes per pending delivery, its peak less that heap: the CLI's own (the
// runtime's and the dependencies', fonts first, about 1.7 MiB) weighs on
// a small row's figure without growing with it. The table comes at the
// end; a line on stderr marks each row measured.
func cmdBench(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("bench", "[flags]", benchExamples, stdout)
	path := fs.String("drill", "drills/fanout-outage.toml", "the drill to measure")
	scales := fs.String("scale", "1,10", "subscriber multipliers to measure, comma-separated")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the simulated runs (and the reference loops between them) to this file")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("stormdrill bench: unexpected argument %q (use --drill)", pos[0])
	}
	var factors []int
	for _, f := range splitComma(*scales) {
		var n int
		if _, err := fmt.Sscan(f, &n); err != nil || n < 1 || n > maxBenchScale {
			return usagef("stormdrill bench: --scale %q: want integers from 1 to %d", f, maxBenchScale)
		}
		factors = append(factors, n)
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return runError{err}
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return runError{err}
		}
		defer pprof.StopCPUProfile()
	}
	type row struct {
		name string
		subs int
		m    measurement
		bare float64 // the bare loop's attempts per CPU-second at the row's peak pending
	}
	var rows []row
	for _, k := range factors {
		d, err := drills.Load(*path, nil)
		if err != nil {
			return usageError{err}
		}
		// Scale the pool and the queue bound with the subscribers, so that
		// every size runs at the flagship's utilisation and back-pressure
		// rather than drowning in backlog or holding the source back.
		d.Dispatcher.Workers *= k
		d.Dispatcher.QueueCapacity *= k
		subs := 0
		for i := range d.Partners {
			d.Partners[i].Count *= k
			subs += d.Partners[i].Count
		}
		m, err := measure(d)
		if err != nil {
			return runError{err}
		}
		fmt.Fprintf(stderr, "bench: %s, %d subscribers: %.2f CPU s\n", d.Name, subs, m.cpu.Seconds())
		rows = append(rows, row{d.Name, subs, m, bareRate(int(max(m.peakPending, 1)))})
	}
	fmt.Fprintln(stdout, "| drill | subscribers | peak pending | attempts | CPU s | attempts per CPU-second | bare loop at the same pending | ÷ bare loop | peak heap in use | bytes per pending | drill time ÷ wall time | heap before the run | the run's own bytes per pending |")
	fmt.Fprintln(stdout, "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
	for _, rw := range rows {
		m := rw.m
		rate := float64(m.attempts) / m.cpu.Seconds()
		perPending, ownPerPending := "unknown", "unknown"
		if m.peakPending > 0 {
			perPending = fmt.Sprintf("%.0f", float64(m.peakHeap)/float64(m.peakPending))
			if m.peakHeap > m.baseHeap { // else the run's own was not seen: unknown
				ownPerPending = fmt.Sprintf("%.0f", float64(m.peakHeap-m.baseHeap)/float64(m.peakPending))
			}
		}
		// Two significant digits: a tiny drill's ratio to a loop that
		// fills a heap of its size is well below 0.01.
		fmt.Fprintf(stdout, "| %s | %d | %d | %d | %.2f | %.0f | %.0f | %.2g | %.1f MiB | %s | %.0f× | %.1f MiB | %s |\n",
			rw.name, rw.subs, m.peakPending, m.attempts, m.cpu.Seconds(), rate, rw.bare, rate/rw.bare,
			float64(m.peakHeap)/(1<<20), perPending, m.drillTime.Seconds()/m.wall.Seconds(),
			float64(m.baseHeap)/(1<<20), ownPerPending)
	}
	return nil
}

// maxBenchScale bounds --scale: 500 times the flagship is 100,000
// subscribers.
const maxBenchScale = 500

// bareRate is the bare retry loop's attempts per CPU-second holding pending
// deliveries: the least work a retry simulation of that size can do per
// attempt (its heap past the caches costs it as the simulator's does). It
// makes at least 20 attempts per pending delivery, so that filling the heap
// is a small part of the time, and keeps the fastest of bareRuns runs of the
// same work: another process only ever slows a run, so the fastest is the
// loop's own speed, and the ratio beside it errs against the simulator.
func bareRate(pending int) float64 {
	attempts := max(5_000_000, 20*pending)
	best := 0.0
	for range bareRuns {
		runtime.GC()
		cpu0 := cpuTime()
		_ = sim.BareRetryLoop(pending, attempts, 0.2, 1)
		best = max(best, float64(attempts)/(cpuTime()-cpu0).Seconds())
	}
	return best
}

// bareRuns is how many times bareRate runs the bare loop.
const bareRuns = 3

type measurement struct {
	attempts int64
	// peakPending is the most deliveries queued, delayed or in flight at
	// a sample: what the run held, to set beside the bare loop's heap.
	peakPending int64
	cpu, wall   time.Duration
	drillTime   time.Duration
	peakHeap    uint64
	baseHeap    uint64 // heap in use just before the run, after a collection
}

func measure(d *drills.Drill) (measurement, error) {
	runtime.GC()
	var m measurement
	samples := heapSamples()
	m.baseHeap = heapInUse(samples)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // sample the heap while the run goes on
		defer wg.Done()
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			m.peakHeap = max(m.peakHeap, heapInUse(samples))
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	cpu0 := cpuTime()
	start := time.Now()
	run, err := sim.Run(d, sim.Options{})
	m.wall = time.Since(start)
	m.cpu = cpuTime() - cpu0
	close(stop)
	wg.Wait()
	// Once more at the end: a run shorter than the sampler's tick would
	// otherwise show only the heap from before it.
	m.peakHeap = max(m.peakHeap, heapInUse(samples))
	if err != nil {
		return m, err
	}
	m.attempts = run.Summary.Attempts.Total
	m.peakPending = run.Summary.PeakPending
	m.drillTime = time.Duration(run.Summary.DrillTimeS * float64(time.Second))
	return m, nil
}

// heapSamples are what heapInUse reads, made once so that sampling
// during a run allocates nothing.
func heapSamples() []metrics.Sample {
	return []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/heap/unused:bytes"}}
}

// heapInUse is the heap's bytes in use: its objects, live or not yet
// swept, and the free space in the spans that hold them. It is read
// through runtime/metrics, which does not stop the world as
// runtime.ReadMemStats does: sampled during a run, that would preempt the
// simulation and charge the pause to its CPU time.
func heapInUse(samples []metrics.Sample) uint64 {
	metrics.Read(samples)
	return samples[0].Value.Uint64() + samples[1].Value.Uint64()
}

func splitComma(s string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == ',' {
			if i > start {
				out = append(out, s[start:i])
			}
			start = i + 1
		}
	}
	return out
}
