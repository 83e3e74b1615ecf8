package reports

import (
	"bytes"
	"math"
	"slices"
	"strings"
	"testing"
)

// TestWelchTextbook is the worked example of Welch's t-test (Welch 1947 as
// given in the usual references): t = −2.46, ν ≈ 24.99, p ≈ 0.021.
func TestWelchTextbook(t *testing.T) {
	a := []float64{27.5, 21.0, 19.0, 23.6, 17.0, 17.9, 16.9, 20.1, 21.9, 22.6, 23.1, 19.6, 19.0, 21.7, 21.4}
	b := []float64{27.1, 22.0, 20.8, 23.4, 23.4, 23.5, 25.8, 22.0, 24.8, 20.2, 21.9, 22.1, 22.9, 20.5, 24.4}
	w := Welch(a, b)
	if math.Abs(w.DF-24.99) > 0.02 {
		t.Errorf("df = %v, want 24.99", w.DF)
	}
	if math.Abs(w.P-0.021) > 0.001 {
		t.Errorf("p = %v, want 0.021", w.P)
	}
	if !w.Significant() || !(w.CILow > 0) || !(w.CIHigh > w.Diff) {
		t.Errorf("difference %v [%v, %v] should be significant and positive", w.Diff, w.CILow, w.CIHigh)
	}
	// Swapped, the same test with the sign turned.
	r := Welch(b, a)
	if math.Abs(r.Diff+w.Diff) > 1e-12 || math.Abs(r.P-w.P) > 1e-12 || math.Abs(r.CIHigh+w.CILow) > 1e-9 {
		t.Errorf("swapped: %+v vs %+v", r, w)
	}
}

func TestWelchWithoutSpread(t *testing.T) {
	if w := Welch([]float64{0, 0, 0}, []float64{0, 0}); w.P != 1 || w.Significant() {
		t.Errorf("equal constants: %+v, want p = 1", w)
	}
	if w := Welch([]float64{1, 1, 1}, []float64{2, 2}); w.P != 0 || !w.Significant() || w.CILow != 1 || w.CIHigh != 1 {
		t.Errorf("different constants: %+v, want p = 0 and an exact difference of 1", w)
	}
}

func TestMeanCI(t *testing.T) {
	mean, sd, lo, hi := meanCI([]float64{1, 2, 3, 4})
	// sd = 1.2910; t(0.975, 3) = 3.1824; half = 3.1824 × 1.2910 / 2 = 2.0543.
	if mean != 2.5 || math.Abs(sd-1.290994) > 1e-6 || math.Abs(hi-lo-2*2.0543) > 1e-3 {
		t.Errorf("meanCI = %v %v [%v, %v]", mean, sd, lo, hi)
	}
	if m, _, lo, hi := meanCI([]float64{7}); m != 7 || lo != 7 || hi != 7 {
		t.Errorf("one value: %v [%v, %v]", m, lo, hi)
	}
}

// seedSummary is a summary whose figures move with v.
func seedSummary(seed uint64, p99, amp float64, pass bool) *Summary {
	s := &Summary{Drill: "d", Seed: seed, Amplification: new(amp),
		HealthyLatencyS: Percentiles{Count: 100, P50: p99 / 4, P99: p99}}
	s.Deliveries = Deliveries{Created: 10, Delivered: 10}
	s.Gates = []GateResult{{Expr: "amplification <= 3", Value: amp, Display: FormatValue(Ratio, amp), Pass: pass}}
	Judge(s)
	return s
}

func multiSeed(first uint64, p99s, amps []float64) *Summary {
	var runs []*Run
	for i := range p99s {
		runs = append(runs, &Run{Summary: seedSummary(first+uint64(i), p99s[i], amps[i], true)})
	}
	return CombineSeeds(runs).Summary
}

func TestAggregateSeedsAndJudge(t *testing.T) {
	runs := []*Run{
		{Summary: seedSummary(42, 1, 1.0, true)},
		{Summary: seedSummary(43, 2, 1.1, false)},
		{Summary: seedSummary(44, 3, 1.2, true)},
	}
	s := CombineSeeds(runs).Summary
	f, ok := s.Seeds.Figure("healthy.latency.p99")
	if !ok || f.N != 3 || f.Mean != 2 || !(f.CILow < 2 && f.CIHigh > 2) || len(f.Values) != 3 {
		t.Fatalf("healthy.latency.p99 across seeds: %+v", f)
	}
	if _, ok := s.Seeds.Figure("drain_time"); ok {
		t.Error("drain_time applies to no seed but has statistics")
	}
	// Seed 43 failed its gate: the combined run fails and says which seed.
	if s.Pass || len(s.Failures) != 1 || s.Failures[0] != "seed 43: gate amplification <= 3 failed" {
		t.Errorf("pass %v, failures %q", s.Pass, s.Failures)
	}
	if v := VerdictText(s); v != "FAIL: gate amplification <= 3 failed on 1 of 3 seeds" {
		t.Errorf("verdict %q", v)
	}
	// Each gate across the seeds: where it held, and its figure's spread.
	if len(s.Seeds.Gates) != 1 {
		t.Fatalf("gate spreads %+v, want one", s.Seeds.Gates)
	}
	g := s.Seeds.Gates[0]
	if g.Expr != "amplification <= 3" || g.Held != 2 || g.Seeds != 3 || g.Measured != 3 ||
		g.Min == nil || *g.Min != 1.0 || math.Abs(*g.Mean-1.1) > 1e-12 || *g.Max != 1.2 {
		t.Errorf("gate spread %+v", g)
	}
	// The seed's own summary keeps no statistics.
	if runs[0].SeedSummaries[0].Seeds != nil {
		t.Error("the first seed's own summary carries the statistics")
	}
}

// TestCompareMultiSeedNeedsSignificance: a mean that moved beyond the
// tolerance fails only when Welch's test finds the move significant.
func TestCompareMultiSeedNeedsSignificance(t *testing.T) {
	amps := []float64{1, 1, 1, 1, 1}
	base := multiSeed(1, []float64{1.0, 1.4, 0.8, 1.2, 1.1}, amps)
	noisy := multiSeed(11, []float64{1.5, 0.9, 1.6, 0.9, 1.3}, amps)    // mean +12%, spread wide
	shifted := multiSeed(21, []float64{2.0, 2.2, 1.9, 2.1, 2.05}, amps) // mean +85%
	tol := mustTolerances(t, "healthy.latency.p99=+10%")

	c := Compare(base, noisy, tol)
	if c.Failed || !c.Tolerances[0].Pass {
		t.Errorf("noise failed the tolerance: %+v", c.Tolerances)
	}
	if c.BaseSeeds != 5 || c.CandidateSeeds != 5 {
		t.Errorf("seeds %d and %d, want 5 and 5: not compared as multi-seed runs", c.BaseSeeds, c.CandidateSeeds)
	}
	c = Compare(base, shifted, tol)
	if !c.Failed || c.Tolerances[0].Pass || c.Tolerances[0].Test == "" {
		t.Errorf("a significant +85%% passed: %+v", c.Tolerances)
	}
	// Single runs with the same means: every difference counts.
	b1, n1 := seedSummary(1, 1.1, 1, true), seedSummary(2, 1.24, 1, true)
	if c := Compare(b1, n1, tol); !c.Failed {
		t.Error("a single-run +12.7% passed a +10% tolerance")
	}
}

func TestFormatProbability(t *testing.T) {
	for _, c := range []struct {
		p    float64
		want string
	}{
		{1.586e-42, "< 0.000001"}, {0, "< 0.000001"}, {9.99e-7, "< 0.000001"},
		{0.0000123, "0.000012"}, {0.0213, "0.0213"}, {0.5, "0.5"}, {1, "1"}, {math.NaN(), "n/a"},
	} {
		if got := FormatProbability(c.p); got != c.want {
			t.Errorf("FormatProbability(%v) = %q, want %q", c.p, got, c.want)
		}
	}
}

// TestMultiSeedFirstScreen: with or without a baseline, the first screen
// of a multi-seed report states the seeds, the verdict over all of them
// and each gate's spread, and says whose run the other tables show.
func TestMultiSeedFirstScreen(t *testing.T) {
	for _, withBaseline := range []bool{false, true} {
		run := seedsRun(t, withBaseline)
		md := string(render(t, func(b *bytes.Buffer) error { return WriteMarkdown(b, run, nil) }))
		first := strings.Join(mdFirstScreen(md), "\n")
		for _, want := range []string{
			"3 seeds (7–9)",
			"FAIL: gate amplification <= 1.04 failed on 1 of 3 seeds, drain_time < 10m failed on 3 of 3 seeds",
			"The verdict and the gates cover all 3 seeds",
			"The other tables are seed 7's run",
		} {
			if !strings.Contains(first, want) {
				t.Errorf("baseline %v: the first screen does not say %q:\n%s", withBaseline, want, first)
			}
		}
		if strings.Contains(first, "· seed 7 ·") {
			t.Errorf("baseline %v: the header names one seed:\n%s", withBaseline, first)
		}
		gates := mdTable(md, "## Gates")
		want := [][]string{
			{"gate", "held on", "min", "mean", "max", "verdict"},
			{"healthy.latency.p99 < 30m", "3 of 3 seeds", "450ms", "654ms", "900ms", "pass"},
		}
		if len(gates) < 2 || !slices.Equal(gates[0], want[0]) || !slices.Equal(gates[1], want[1]) {
			t.Errorf("baseline %v: gates table starts %q, want %q", withBaseline, gates[:min(2, len(gates))], want)
		}
		// The tolerance table's candidate is the same mean as the gate's.
		if tols := mdTable(md, "## Tolerances against the baseline"); withBaseline && (len(tols) < 2 || tols[1][2] != "654ms") {
			t.Errorf("tolerances %q: the candidate is not the gates' mean, 654ms", tols)
		}
	}
}

// TestCompareOneRunWithSeveralSeeds: when only one side ran several seeds,
// its side of the comparison is its mean (as its gates and report are),
// not its first seed's figure, and every change beyond a tolerance counts.
func TestCompareOneRunWithSeveralSeeds(t *testing.T) {
	amps := []float64{1, 1, 1}
	several := multiSeed(11, []float64{1.5, 0.9, 1.5}, amps) // first seed 1.5, mean 1.3
	one := seedSummary(1, 1.2, 1, true)
	tol := mustTolerances(t, "healthy.latency.p99=+10%")

	c := Compare(one, several, tol)
	if got, want := c.Tolerances[0].Candidate, FormatValue(Duration, 1.3); got != want || c.CandidateMeanOf != 3 || c.Tolerances[0].Test != "" {
		t.Errorf("candidate %q (mean of %d, test %q), want %q, the mean of 3 without a test", got, c.CandidateMeanOf, c.Tolerances[0].Test, want)
	}
	// The mean moved +8.3%, within the tolerance; the first seed's +25%
	// must not decide.
	if c.Failed {
		t.Errorf("the first seed decided: %+v", c.Tolerances)
	}
	if m := comparisonMethod(c); !strings.Contains(m, "means over its 3 seeds") {
		t.Errorf("method %q does not say the candidate's figures are means", m)
	}
	// The other way round: the base's mean.
	if c := Compare(several, one, tol); c.BaseMeanOf != 3 || c.Tolerances[0].Base != FormatValue(Duration, 1.3) {
		t.Errorf("base %q (mean of %d), want the mean of 3", c.Tolerances[0].Base, c.BaseMeanOf)
	}
}
