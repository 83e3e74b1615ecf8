package reports

import (
	"math"
	"sort"

	"github.com/montanaflynn/stats"
	"gonum.org/v1/gonum/stat/distuv"
)

// Significance is the level of the two-sided tests and the confidence
// intervals of multi-seed runs: 95% intervals, p < 0.05.
const Significance = 0.05

// MaxSeeds bounds `run --seeds N`.
const MaxSeeds = 1000

// SeedStats is a drill run over several seeds: which seeds, how each did,
// and every figure's mean and 95% confidence interval across them.
type SeedStats struct {
	Runs []SeedRun `json:"runs"`
	// Figures has one entry per metric that applies to at least one seed,
	// sorted by metric name.
	Figures []FigureStats `json:"figures"`
	// Gates has one entry per gate of the drill, in the drill's order: on
	// how many seeds it held and the spread of what it measured.
	Gates []GateSpread `json:"gates"`
}

// GateSpread is one gate across the seeds of a multi-seed run. Min, Mean
// and Max are over the seeds whose figure could be measured (Measured of
// them); null when none could.
type GateSpread struct {
	Expr     string   `json:"expr"`
	Held     int      `json:"held"`
	Seeds    int      `json:"seeds"`
	Measured int      `json:"measured"`
	Min      *float64 `json:"min"`
	Mean     *float64 `json:"mean"`
	Max      *float64 `json:"max"`
}

// gateSpreads measures each gate of the first run across runs. A gate is
// matched by its expression; a seed without it counts as not measured.
func gateSpreads(runs []*Summary) []GateSpread {
	if len(runs) == 0 {
		return nil
	}
	spreads := make([]GateSpread, 0, len(runs[0].Gates))
	for _, g := range runs[0].Gates {
		sp := GateSpread{Expr: g.Expr, Seeds: len(runs)}
		metric := ""
		if pg, err := ParseGate(g.Expr); err == nil {
			metric = pg.Metric
		}
		var values []float64
		for _, s := range runs {
			for _, r := range s.Gates {
				if r.Expr != g.Expr {
					continue
				}
				if r.Pass {
					sp.Held++
				}
				if _, ok, err := s.Metric(metric); ok && err == nil {
					values = append(values, r.Value)
				}
				break
			}
		}
		sp.Measured = len(values)
		if len(values) > 0 {
			lo, _ := stats.Min(values)
			hi, _ := stats.Max(values)
			mean, _ := stats.Mean(values)
			sp.Min, sp.Mean, sp.Max = &lo, &mean, &hi
		}
		spreads = append(spreads, sp)
	}
	return spreads
}

// SeedRun is the verdict of one seed of a multi-seed run.
type SeedRun struct {
	Seed        uint64   `json:"seed"`
	Pass        bool     `json:"pass"`
	FailedGates []string `json:"failed_gates,omitempty"`
	Lost        int64    `json:"lost,omitempty"`
}

// FigureStats is one metric across seeds. Values holds the figure of each
// seed it applies to, in the order of SeedStats.Runs; NotApplicable counts
// the seeds it does not apply to (an outage that never drained).
type FigureStats struct {
	Metric        string    `json:"metric"`
	N             int       `json:"n"`
	NotApplicable int       `json:"not_applicable,omitempty"`
	Mean          float64   `json:"mean"`
	SD            float64   `json:"sd"` // sample standard deviation (n−1)
	CILow         float64   `json:"ci95_low"`
	CIHigh        float64   `json:"ci95_high"`
	Values        []float64 `json:"values"`
}

// AggregateSeeds summarises the runs of one drill over several seeds. The
// confidence interval of each mean is Student's t with n−1 degrees of
// freedom; with one value it is that value.
func AggregateSeeds(runs []*Summary) *SeedStats {
	st := &SeedStats{}
	for _, s := range runs {
		r := SeedRun{Seed: s.Seed, Pass: s.Pass, Lost: s.Deliveries.Lost}
		for _, g := range s.Gates {
			if !g.Pass {
				r.FailedGates = append(r.FailedGates, g.Expr)
			}
		}
		st.Runs = append(st.Runs, r)
	}
	for _, name := range metricNames {
		f := FigureStats{Metric: name}
		for _, s := range runs {
			v, ok, _ := s.Metric(name)
			if !ok {
				f.NotApplicable++
				continue
			}
			f.Values = append(f.Values, v)
		}
		if len(f.Values) == 0 {
			continue
		}
		f.N = len(f.Values)
		f.Mean, f.SD, f.CILow, f.CIHigh = meanCI(f.Values)
		st.Figures = append(st.Figures, f)
	}
	st.Gates = gateSpreads(runs)
	return st
}

// Figure returns the statistics of metric, if the runs measured it.
func (st *SeedStats) Figure(metric string) (FigureStats, bool) {
	if st == nil {
		return FigureStats{}, false
	}
	i := sort.Search(len(st.Figures), func(i int) bool { return st.Figures[i].Metric >= metric })
	if i < len(st.Figures) && st.Figures[i].Metric == metric {
		return st.Figures[i], true
	}
	return FigureStats{}, false
}

// meanCI is the mean, the sample standard deviation and the 95% confidence
// interval of the mean of xs (non-empty).
func meanCI(xs []float64) (mean, sd, lo, hi float64) {
	mean, _ = stats.Mean(xs)
	if len(xs) < 2 {
		return mean, 0, mean, mean
	}
	sd, _ = stats.StandardDeviationSample(xs)
	half := tQuantile(1-Significance/2, float64(len(xs)-1)) * sd / math.Sqrt(float64(len(xs)))
	return mean, sd, mean - half, mean + half
}

// tQuantile is the p quantile of Student's t with df degrees of freedom
// (df may be fractional, as in Welch's test).
func tQuantile(p, df float64) float64 {
	return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Quantile(p)
}

// WelchResult is Welch's unequal-variance t-test of the difference of two
// means, candidate − base.
type WelchResult struct {
	Diff          float64 // mean(cand) − mean(base)
	CILow, CIHigh float64 // 95% confidence interval of Diff
	P             float64 // two-sided p-value of "no difference"
	DF            float64 // Welch–Satterthwaite degrees of freedom
}

// Significant reports whether the difference is significant at the 5%
// level: the 95% interval of the difference excludes 0.
func (w WelchResult) Significant() bool { return w.P < Significance }

// Welch runs Welch's t-test on two samples of at least two values each.
// When both samples have no spread at all the difference is exact: p is 0
// if the means differ and 1 if they do not.
func Welch(base, cand []float64) WelchResult {
	mb, _ := stats.Mean(base)
	mc, _ := stats.Mean(cand)
	vb, _ := stats.VarS(base)
	vc, _ := stats.VarS(cand)
	nb, nc := float64(len(base)), float64(len(cand))
	r := WelchResult{Diff: mc - mb}
	qb, qc := vb/nb, vc/nc
	se := math.Sqrt(qb + qc)
	if !(se > 1e-12*math.Max(1, math.Max(math.Abs(mb), math.Abs(mc)))) {
		r.CILow, r.CIHigh, r.P, r.DF = r.Diff, r.Diff, 1, math.Inf(1)
		if math.Abs(r.Diff) > 1e-9*math.Max(1, math.Max(math.Abs(mb), math.Abs(mc))) {
			r.P = 0
		}
		return r
	}
	r.DF = (qb + qc) * (qb + qc) / (qb*qb/(nb-1) + qc*qc/(nc-1))
	t := r.Diff / se
	dist := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: r.DF}
	r.P = 2 * dist.CDF(-math.Abs(t))
	half := dist.Quantile(1-Significance/2) * se
	r.CILow, r.CIHigh = r.Diff-half, r.Diff+half
	return r
}

// CombineSeeds makes one run of a drill run over several seeds: the first
// run, with every seed's summary kept in SeedSummaries and the statistics
// across seeds in Summary.Seeds, judged again so that a gate failing on any
// seed fails the whole.
func CombineSeeds(runs []*Run) *Run {
	if len(runs) == 0 {
		return nil
	}
	first := runs[0]
	if len(runs) == 1 {
		return first
	}
	summaries := make([]*Summary, len(runs))
	for i, r := range runs {
		own := *r.Summary // the seed's own summary, without the statistics
		summaries[i] = &own
	}
	first.SeedSummaries = summaries
	first.Summary.Seeds = AggregateSeeds(summaries)
	Judge(first.Summary)
	return first
}
