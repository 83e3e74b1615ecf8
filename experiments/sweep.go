package experiments

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/montanaflynn/stats"

	"github.com/stormdrill/stormdrill/drills/sim"
)

// SweepOptions tune RunSweep.
type SweepOptions struct {
	// Workers is how many runs go at once; 0 means runtime.NumCPU(). The
	// results do not depend on it.
	Workers int
	// Progress, if set, is called after each finished run with the number
	// done and the total, from any goroutine but never concurrently.
	Progress func(done, total int)
	// Shard, when Count > 1, runs only this shard's share of the runs;
	// MergeShards puts the shards back together.
	Shard Shard
}

// SweepRun is one run of one cell with one seed.
type SweepRun struct {
	Cell int
	Seed uint64
	Pass bool
	// Err is why the run failed (a broken accounting identity, a drill the
	// simulation refused); its values are then those it has, or NaN.
	Err string
	// Values holds every metric of AllMetricNames, in that order; NaN where
	// it does not apply.
	Values []float64
}

// Stat is one metric over one cell's seeds.
type Stat struct {
	N        int     `json:"n"`       // seeds the metric applied to
	Mean     float64 `json:"mean"`    // NaN when N is 0
	CIHalf   float64 `json:"ci_half"` // 95% interval is Mean ± CIHalf; 0 when N < 2
	Min, Max float64
}

// CellResult is one cell and its statistics, one per experiment metric.
type CellResult struct {
	Cell
	Passed int // seeds whose every gate held
	Failed int // runs that did not complete
	Stats  []Stat
}

// SweepResult is a finished sweep.
type SweepResult struct {
	Experiment  *Experiment
	MetricNames []string // the columns of SweepRun.Values
	Cells       []CellResult
	Runs        []SweepRun // cell-major, then seed
	// Shard is set on the result of one shard: only its runs are filled
	// in, and Cells is empty.
	Shard Shard
}

// RunSweep runs every cell with every seed on a bounded pool of workers and
// gathers the statistics. The same experiment gives the same result,
// whatever the number of workers.
func RunSweep(e *Experiment, opt SweepOptions) (*SweepResult, error) {
	cells, err := e.loadCells()
	if err != nil {
		return nil, err
	}
	names := AllMetricNames()
	res := &SweepResult{Experiment: e, MetricNames: names, Runs: make([]SweepRun, len(cells)*e.Seeds)}
	seedOf := func(c *Cell, k int) uint64 {
		if e.Seed != nil {
			return *e.Seed + uint64(k)
		}
		return c.seed + uint64(k)
	}
	var todo []int // run indexes this process runs
	for i := range res.Runs {
		if opt.Shard.owns(i) {
			todo = append(todo, i)
		}
	}
	runPool(len(todo), opt.Workers, opt.Progress, func(k int) {
		i := todo[k]
		c := &cells[i/e.Seeds]
		seed := seedOf(c, i%e.Seeds)
		res.Runs[i] = runOneSeed(c.Drill, c.Overrides, seed, names)
		res.Runs[i].Cell = c.Index
	})
	if opt.Shard.Count > 1 {
		// A shard's statistics would be of its share only; merge computes
		// them once every shard is in.
		res.Shard = opt.Shard
		return res, nil
	}
	res.gather(cells)
	return res, nil
}

// gather computes every cell's statistics from the runs.
func (res *SweepResult) gather(cells []Cell) {
	e := res.Experiment
	res.Cells = nil
	for ci := range cells {
		cr := CellResult{Cell: cells[ci]}
		runs := res.Runs[ci*e.Seeds : (ci+1)*e.Seeds]
		for _, r := range runs {
			if r.Pass {
				cr.Passed++
			}
			if r.Err != "" {
				cr.Failed++
			}
		}
		for _, m := range e.Metrics {
			col := indexOf(res.MetricNames, m)
			var xs []float64
			for _, r := range runs {
				if v := r.Values[col]; !math.IsNaN(v) {
					xs = append(xs, v)
				}
			}
			cr.Stats = append(cr.Stats, describe(xs))
		}
		res.Cells = append(res.Cells, cr)
	}
}

func indexOf(names []string, name string) int {
	for i, n := range names {
		if n == name {
			return i
		}
	}
	return -1
}

// runOneSeed loads and simulates one drill with overrides and a seed, and
// reads every metric off it.
func runOneSeed(path string, overrides map[string]string, seed uint64, names []string) SweepRun {
	r := SweepRun{Seed: seed, Values: make([]float64, len(names))}
	for i := range r.Values {
		r.Values[i] = math.NaN()
	}
	d, err := loadDrill(path, overrides)
	if err != nil {
		r.Err = err.Error()
		return r
	}
	d.Seed = seed
	run, err := sim.Run(d, sim.Options{})
	if err != nil {
		r.Err = err.Error()
		if run == nil {
			return r
		}
	}
	r.Pass = err == nil && run.Summary.Pass
	for i, n := range names {
		if v, ok, merr := RunMetric(run, n); merr == nil && ok {
			r.Values[i] = v
		}
	}
	return r
}

// runPool calls fn(0..n-1) on at most workers goroutines (0: NumCPU).
func runPool(n, workers int, progress func(done, total int), fn func(i int)) {
	if workers <= 0 {
		workers = runtime.NumCPU()
	}
	workers = max(1, min(workers, n))
	var next atomic.Int64
	var mu sync.Mutex
	done := 0
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				fn(i)
				if progress != nil {
					mu.Lock()
					done++
					progress(done, n)
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
}

// describe gives the mean, the 95% confidence interval of the mean (Student
// t with n−1 degrees of freedom), the min and the max.
func describe(xs []float64) Stat {
	st := Stat{N: len(xs), Mean: math.NaN(), Min: math.NaN(), Max: math.NaN()}
	if len(xs) == 0 {
		return st
	}
	st.Mean, _ = stats.Mean(xs)
	st.Min, _ = stats.Min(xs)
	st.Max, _ = stats.Max(xs)
	if len(xs) > 1 {
		sd, _ := stats.StandardDeviationSample(xs)
		st.CIHalf = tQuantile975(len(xs)-1) * sd / math.Sqrt(float64(len(xs)))
	}
	return st
}

// t975 is the 0.975 quantile of Student's t for 1 to 30 degrees of freedom.
var t975 = [...]float64{
	12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
	2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
	2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
}

// tQuantile975 is t(0.975, df); past 30 degrees of freedom the table's
// coarser rows, then the normal 1.960.
func tQuantile975(df int) float64 {
	switch {
	case df < 1:
		return math.NaN()
	case df <= len(t975):
		return t975[df-1]
	case df <= 40:
		return 2.021
	case df <= 60:
		return 2.000
	case df <= 120:
		return 1.980
	}
	return 1.960
}

// errNoCells is returned for an experiment without a grid.
var errNoCells = errors.New("the experiment has no cells")

// Stat returns the statistics of a metric in a cell.
func (r *SweepResult) Stat(cell int, metric string) (Stat, error) {
	if cell < 0 || cell >= len(r.Cells) {
		return Stat{}, errNoCells
	}
	i := indexOf(r.Experiment.Metrics, metric)
	if i < 0 {
		return Stat{}, fmt.Errorf("%q is not one of the experiment's metrics", metric)
	}
	return r.Cells[cell].Stats[i], nil
}

// CellAt finds the cell with these labels, one per axis.
func (r *SweepResult) CellAt(labels ...string) (int, bool) {
	for i, c := range r.Cells {
		if len(c.Labels) != len(labels) {
			continue
		}
		match := true
		for k := range labels {
			if c.Labels[k] != labels[k] {
				match = false
				break
			}
		}
		if match {
			return i, true
		}
	}
	return -1, false
}
