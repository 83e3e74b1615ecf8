package reports_test

import (
	"math"
	"testing"

	"github.com/stormdrill/stormdrill/reports"
	"github.com/stormdrill/stormdrill/reports/internal/fixture"
)

// TestWelchTextbook is the worked example of Welch's t-test (Welch 1947 as
// given in the usual references): t = −2.46, ν ≈ 24.99, p ≈ 0.021.
func TestWelchTextbook(t *testing.T) {
	a := []float64{27.5, 21.0, 19.0, 23.6, 17.0, 17.9, 16.9, 20.1, 21.9, 22.6, 23.1, 19.6, 19.0, 21.7, 21.4}
	b := []float64{27.1, 22.0, 20.8, 23.4, 23.4, 23.5, 25.8, 22.0, 24.8, 20.2, 21.9, 22.1, 22.9, 20.5, 24.4}
	w := reports.Welch(a, b)
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
	r := reports.Welch(b, a)
	if math.Abs(r.Diff+w.Diff) > 1e-12 || math.Abs(r.P-w.P) > 1e-12 || math.Abs(r.CIHigh+w.CILow) > 1e-9 {
		t.Errorf("swapped: %+v vs %+v", r, w)
	}
}

func TestWelchWithoutSpread(t *testing.T) {
	if w := reports.Welch([]float64{0, 0, 0}, []float64{0, 0}); w.P != 1 || w.Significant() {
		t.Errorf("equal constants: %+v, want p = 1", w)
	}
	if w := reports.Welch([]float64{1, 1, 1}, []float64{2, 2}); w.P != 0 || !w.Significant() || w.CILow != 1 || w.CIHigh != 1 {
		t.Errorf("different constants: %+v, want p = 0 and an exact difference of 1", w)
	}
}

func TestMeanCI(t *testing.T) {
	mean, sd, lo, hi := reports.MeanCI([]float64{1, 2, 3, 4})
	// sd = 1.2910; t(0.975, 3) = 3.1824; half = 3.1824 × 1.2910 / 2 = 2.0543.
	if mean != 2.5 || math.Abs(sd-1.290994) > 1e-6 || math.Abs(hi-lo-2*2.0543) > 1e-3 {
		t.Errorf("meanCI = %v %v [%v, %v]", mean, sd, lo, hi)
	}
	if m, _, lo, hi := reports.MeanCI([]float64{7}); m != 7 || lo != 7 || hi != 7 {
		t.Errorf("one value: %v [%v, %v]", m, lo, hi)
	}
}

func TestAggregateSeedsAndJudge(t *testing.T) {
	runs := []*reports.Run{
		{Summary: fixture.SeedSummary(42, 1, 1.0, true)},
		{Summary: fixture.SeedSummary(43, 2, 1.1, false)},
		{Summary: fixture.SeedSummary(44, 3, 1.2, true)},
	}
	s := reports.CombineSeeds(runs).Summary
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
	if v := reports.VerdictText(s); v != "FAIL: gate amplification <= 3 failed on 1 of 3 seeds" {
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
	base := fixture.MultiSeed(1, []float64{1.0, 1.4, 0.8, 1.2, 1.1}, amps)
	noisy := fixture.MultiSeed(11, []float64{1.5, 0.9, 1.6, 0.9, 1.3}, amps)    // mean +12%, spread wide
	shifted := fixture.MultiSeed(21, []float64{2.0, 2.2, 1.9, 2.1, 2.05}, amps) // mean +85%
	tol := fixture.Tolerances(t, "healthy.latency.p99=+10%")

	c := reports.Compare(base, noisy, tol)
	if c.Failed || !c.Tolerances[0].Pass {
		t.Errorf("noise failed the tolerance: %+v", c.Tolerances)
	}
	if c.BaseSeeds != 5 || c.CandidateSeeds != 5 {
		t.Errorf("seeds %d and %d, want 5 and 5: not compared as multi-seed runs", c.BaseSeeds, c.CandidateSeeds)
	}
	c = reports.Compare(base, shifted, tol)
	if !c.Failed || c.Tolerances[0].Pass || c.Tolerances[0].Test == "" {
		t.Errorf("a significant +85%% passed: %+v", c.Tolerances)
	}
	// Single runs with the same means: every difference counts.
	b1, n1 := fixture.SeedSummary(1, 1.1, 1, true), fixture.SeedSummary(2, 1.24, 1, true)
	if c := reports.Compare(b1, n1, tol); !c.Failed {
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
		if got := reports.FormatProbability(c.p); got != c.want {
			t.Errorf("FormatProbability(%v) = %q, want %q", c.p, got, c.want)
		}
	}
}
