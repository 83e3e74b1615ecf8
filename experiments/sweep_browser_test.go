package experiments

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stormdrill/stormdrill/internal/testsuite"
)

// TestSweepReportInBrowser opens the report.html of two sweeps in headless
// Chromium with the network blocked: the demo scenarios (categories on
// the first axis, eleven metrics, several of them always 0) and the
// breaker sweep (numbers on the first axis). Each page must fit a
// 1,366 px window, draw one interactive chart per metric that is not
// always 0, show values on hover, and say which metrics it did not plot.
func TestSweepReportInBrowser(t *testing.T) {
	testsuite.FullTier(t, "runs two sweeps and opens their reports in Chromium")
	for _, tc := range []struct {
		file   string
		values int // of the first axis, to keep the sweep short
	}{
		{"demo-scenarios.toml", 6},
		{"breaker.toml", 3},
	} {
		t.Run(tc.file, func(t *testing.T) {
			e, err := LoadExperiment(tc.file)
			if err != nil {
				t.Fatal(err)
			}
			e.Seeds = 2
			e.Axes[0].Values = e.Axes[0].Values[:min(tc.values, len(e.Axes[0].Values))]
			if len(e.Axes) > 1 {
				e.Axes[1].Values = e.Axes[1].Values[:min(2, len(e.Axes[1].Values))]
			}
			r, err := RunSweep(e, SweepOptions{Workers: 2})
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			if err := WriteSweep(dir, r); err != nil {
				t.Fatal(err)
			}
			charts := sweepCharts(r)
			page := openReport(t, filepath.Join(dir, "report.html"), len(charts))
			if z := r.zeroLine(); z != "" && !strings.Contains(page.Text, z) {
				t.Errorf("the page does not say %q", z)
			}
			t.Logf("%d charts, %d metrics; %s", len(charts), len(e.Metrics), r.zeroLine())
		})
	}
}
