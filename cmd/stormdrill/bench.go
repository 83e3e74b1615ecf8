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
// attempts per CPU-second and its ratio to a bare retry loop measured in the
// same run, just before and after the row; the most deliveries the run held
// pending, beside the loop's heap size (past the caches, both cost more per
// attempt); peak heap in use; and how much faster than real time the drill
// ran. The table comes at the end; a line on stderr marks each row measured.
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
		if _, err := fmt.Sscan(f, &n); err != nil || n < 1 || n > 100 {
			return usagef("stormdrill bench: --scale %q: want integers from 1 to 100", f)
		}
		factors = append(factors, n)
	}
	// The reference row: a bare retry loop on a 4-ary heap, measured in
	// the same process, so each row's ratio to it holds on a busy machine.
	// It runs before every row and after the last, and a row's ratio is to
	// the loops just before and after it: on a shared machine the load
	// changes over the minutes a large row takes.
	const barePending, bareAttempts = 100_000, 5_000_000
	var bareTotal time.Duration
	bare := func() float64 {
		runtime.GC()
		cpu0 := cpuTime()
		_ = sim.BareRetryLoop(barePending, bareAttempts, 0.2, 1)
		cpu := cpuTime() - cpu0
		bareTotal += cpu
		return float64(bareAttempts) / cpu.Seconds()
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
		name                  string
		subs                  int
		m                     measurement
		bareBefore, bareAfter float64
	}
	var rows []row
	before := bare()
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
		after := bare()
		fmt.Fprintf(stderr, "bench: %s, %d subscribers: %.2f CPU s\n", d.Name, subs, m.cpu.Seconds())
		rows = append(rows, row{d.Name, subs, m, before, after})
		before = after
	}
	bareRuns := len(factors) + 1
	fmt.Fprintln(stdout, "| drill | subscribers | peak pending | attempts | CPU s | attempts per CPU-second | ÷ bare loop | peak heap in use | drill time ÷ wall time |")
	fmt.Fprintln(stdout, "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
	fmt.Fprintf(stdout, "| bare retry loop (4-ary heap; %d runs) | – | %d | %d | %.2f | %.0f | 1.00 | – | – |\n",
		bareRuns, barePending, bareRuns*bareAttempts, bareTotal.Seconds(), float64(bareRuns*bareAttempts)/bareTotal.Seconds())
	for _, rw := range rows {
		m := rw.m
		rate := float64(m.attempts) / m.cpu.Seconds()
		// The bare loop's rate over the two runs around this row.
		bareRate := 2 / (1/rw.bareBefore + 1/rw.bareAfter)
		fmt.Fprintf(stdout, "| %s | %d | %d | %d | %.2f | %.0f | %.2f | %.1f MiB | %.0f× |\n",
			rw.name, rw.subs, m.peakPending, m.attempts, m.cpu.Seconds(), rate, rate/bareRate,
			float64(m.peakHeap)/(1<<20), m.drillTime.Seconds()/m.wall.Seconds())
	}
	return nil
}

type measurement struct {
	attempts int64
	// peakPending is the most deliveries queued, delayed or in flight at
	// a sample: what the run held, to set beside the bare loop's heap.
	peakPending int64
	cpu, wall   time.Duration
	drillTime   time.Duration
	peakHeap    uint64
}

func measure(d *drills.Drill) (measurement, error) {
	runtime.GC()
	var m measurement
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // sample the heap while the run goes on
		defer wg.Done()
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		// HeapInuse read through runtime/metrics, which does not stop the
		// world as runtime.ReadMemStats does: at every sample that would
		// preempt the simulation and charge the pause to its CPU time.
		samples := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/heap/unused:bytes"}}
		for {
			metrics.Read(samples)
			m.peakHeap = max(m.peakHeap, samples[0].Value.Uint64()+samples[1].Value.Uint64())
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
	if err != nil {
		return m, err
	}
	m.attempts = run.Summary.Attempts.Total
	m.peakPending = run.Summary.PeakPending
	m.drillTime = time.Duration(run.Summary.DrillTimeS * float64(time.Second))
	return m, nil
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
