package render

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/stormdrill/stormdrill/reports"
	"github.com/stormdrill/stormdrill/reports/internal/fixture"
)

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
	several := fixture.MultiSeed(11, []float64{1.5, 0.9, 1.5}, amps) // first seed 1.5, mean 1.3
	one := fixture.SeedSummary(1, 1.2, 1, true)
	tol := fixture.Tolerances(t, "healthy.latency.p99=+10%")

	c := reports.Compare(one, several, tol)
	if got, want := c.Tolerances[0].Candidate, reports.FormatValue(reports.Duration, 1.3); got != want || c.CandidateMeanOf != 3 || c.Tolerances[0].Test != "" {
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
	if c := reports.Compare(several, one, tol); c.BaseMeanOf != 3 || c.Tolerances[0].Base != reports.FormatValue(reports.Duration, 1.3) {
		t.Errorf("base %q (mean of %d), want the mean of 3", c.Tolerances[0].Base, c.BaseMeanOf)
	}
}
