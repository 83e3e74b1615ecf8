package experiments

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stormdrill/stormdrill/internal/testsuite"
	"github.com/stormdrill/stormdrill/reports/browsercheck"
)

// TestSweepReportInBrowser opens the report.html of two sweeps in headless
// Chromium with the network blocked: the demo scenarios (categories on
// the first axis, eleven metrics, several of them always 0) and the
// breaker sweep (numbers on the first axis). Each page must fit a
// 1,366 px window, draw one interactive chart per metric that is not
// always 0, show values on hover, and say which metrics it did not plot.
// Set STORMDRILL_SCREENSHOT=file.png for a screenshot of each.
func TestSweepReportInBrowser(t *testing.T) {
	testsuite.FullTier(t, "runs two sweeps and opens their reports in Chromium")
	chromium, err := browsercheck.Chromium()
	if err != nil {
		testsuite.NotRun(t, "Chromium", err.Error())
	}
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
			var opts []browsercheck.Option
			if os.Getenv("STORMDRILL_SCREENSHOT") != "" {
				opts = append(opts, browsercheck.Screenshots())
			}
			page, err := browsercheck.Visit(t.Context(), chromium, filepath.Join(dir, "report.html"), t.TempDir(), opts...)
			if err != nil {
				t.Fatal(err)
			}
			if p, err := page.SaveScreenshot("STORMDRILL_SCREENSHOT"); err != nil {
				t.Errorf("STORMDRILL_SCREENSHOT: %v", err)
			} else if p != "" {
				t.Logf("screenshot in %s", p)
			}
			for _, p := range page.Problems {
				t.Errorf("page: %s", p)
			}
			if l := page.Layout; l.ScrollWidth > l.InnerWidth {
				t.Errorf("page is %dpx wide in a %dpx window: it scrolls sideways", l.ScrollWidth, l.InnerWidth)
			}
			charts := sweepCharts(r)
			if page.Layout.ChartsDrawn != strconv.Itoa(len(charts)) || len(page.Charts) != len(charts) {
				t.Errorf("charts: script drew %q, page has %d, want %d", page.Layout.ChartsDrawn, len(page.Charts), len(charts))
			}
			for _, c := range page.Charts {
				if c.Width <= 0 || c.Width > float64(page.Layout.InnerWidth) || c.Painted < 1000 {
					t.Errorf("chart %s: canvas %vx%v, %d pixels painted", c.ID, c.Width, c.Height, c.Painted)
				}
			}
			for _, p := range page.HoverProblems() {
				t.Error(p)
			}
			if z := r.zeroLine(); z != "" && !strings.Contains(page.Text, z) {
				t.Errorf("the page does not say %q", z)
			}
			t.Logf("%d charts, %d metrics; %s", len(charts), len(e.Metrics), r.zeroLine())
		})
	}
}
