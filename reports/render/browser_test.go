package render

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stormdrill/stormdrill/internal/testsuite"
	"github.com/stormdrill/stormdrill/reports"
	"github.com/stormdrill/stormdrill/reports/browsercheck"
	"github.com/stormdrill/stormdrill/reports/internal/fixture"
	"github.com/stormdrill/stormdrill/reports/leakscan"
)

// browserRun is the golden fixture (gates, cohorts, outages, baseline) with
// an hour of synthetic samples and both latency CDFs, so that every plot is
// drawn from realistic data rather than from three samples.
func browserRun(t *testing.T) *reports.Run {
	t.Helper()
	run := fixture.Run(t)
	synthetic := syntheticRun(int(run.Summary.DurationS), []string{"acme", "globex"})
	run.Timeseries = synthetic.Timeseries
	// Name the synthetic dead-letter columns after the fixture's reasons,
	// so that the plot's legend agrees with the dead-letter table: the
	// third column fills late in the outage, as window-expired does.
	run.Timeseries.Reasons = []string{"permanent", "zz-custom", "window-expired"}
	run.HealthyCDF = synthetic.HealthyCDF
	run.HealthyOutageCDF = synthetic.HealthyOutageCDF
	return run
}

// chromiumOrSkip is the chromium binary; without one the test is skipped,
// or fails in CI, where it must be installed.
func chromiumOrSkip(t *testing.T) string {
	t.Helper()
	chromium, err := browsercheck.Chromium()
	if err != nil {
		testsuite.NotRun(t, "Chromium", err.Error())
	}
	return chromium
}

// checkReadable checks what every report page must give its reader: no
// error and no request leaving the page, no dead link, no template or Go
// source text in the rendered text, and a line for each outage.
func checkReadable(t *testing.T, page *browsercheck.Page, s *reports.Summary) {
	t.Helper()
	for _, p := range page.Problems {
		t.Errorf("page: %s", p)
	}
	for _, d := range page.DeadLinks {
		t.Errorf("dead link: %s", d)
	}
	for _, leak := range leakscan.Find(page.Text) {
		t.Errorf("rendered text: %s", leak)
	}
	lines, _ := outageLines(s)
	for _, l := range lines {
		if !strings.Contains(page.Text, l) {
			t.Errorf("the page does not say %q", l)
		}
	}
}

// TestReportHTMLInBrowser opens report.html, as WriteRunFiles writes it, in
// headless Chromium with the network blocked, and checks what a reader
// would: no errors and no request leaving the page, no dead link, no
// template or Go source text, the outage lines, every plot drawn (as an
// image, or as an interactive chart whose legend shows values on hover),
// the gates table complete, the title, nothing wider than a laptop screen.
// Set STORMDRILL_SCREENSHOT=file.png for a screenshot.
func TestReportHTMLInBrowser(t *testing.T) {
	chromium := chromiumOrSkip(t)
	run := browserRun(t)
	dir := t.TempDir()
	if err := WriteRunFiles(dir, run); err != nil {
		t.Fatal(err)
	}
	svgs, err := filepath.Glob(filepath.Join(dir, "*.svg"))
	if err != nil || len(svgs) == 0 {
		t.Fatalf("WriteRunFiles wrote no plots (err %v)", err)
	}
	start := time.Now()
	var opts []browsercheck.Option
	if os.Getenv("STORMDRILL_SCREENSHOT") != "" {
		opts = append(opts, browsercheck.Screenshots())
	}
	page, err := browsercheck.Visit(t.Context(), chromium, filepath.Join(dir, "report.html"), t.TempDir(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("browser checks took %v", time.Since(start).Round(time.Millisecond))
	if p, err := page.SaveScreenshot("STORMDRILL_SCREENSHOT"); err != nil {
		t.Errorf("STORMDRILL_SCREENSHOT: %v", err)
	} else if p != "" {
		t.Logf("screenshot of report.html in %s", p)
	}
	checkReadable(t, page, run.Summary)
	if !strings.Contains(page.Title, run.Summary.Drill) {
		t.Errorf("title %q does not name the drill %q", page.Title, run.Summary.Drill)
	}
	layout := page.Layout
	if layout.ReadyState != "complete" {
		t.Errorf("document.readyState %q after load, want complete", layout.ReadyState)
	}

	// Every plot shows: the time series as interactive charts (their
	// images only in <noscript>), the others as images.
	charts := interactiveCharts(run)
	if len(charts) < 6 {
		t.Fatalf("%d interactive charts; the fixture should give at least 6", len(charts))
	}
	if layout.ChartsDrawn != fmt.Sprint(len(charts)) || len(page.Charts) != len(charts) {
		t.Errorf("charts: script drew %q, page has %d, want %d", layout.ChartsDrawn, len(page.Charts), len(charts))
	}
	for i, c := range page.Charts {
		if c.Width <= 0 || c.Height <= 0 || c.Painted < 1000 {
			t.Errorf("chart %s is not drawn: canvas %vx%v, %d pixels painted", c.ID, c.Width, c.Height, c.Painted)
		}
		if i < len(charts) && c.Series != len(charts[i].Series) {
			t.Errorf("chart %s: legend has %d series, want %d", c.ID, c.Series, len(charts[i].Series))
		}
	}
	for _, p := range page.HoverProblems() {
		t.Error(p)
	}
	if len(page.Images)+layout.Noscript != len(svgs) {
		t.Errorf("%d images and %d <noscript> fallbacks, want one per plot (%d)", len(page.Images), layout.Noscript, len(svgs))
	}
	for i, img := range page.Images {
		name := fmt.Sprintf("image %d (%q)", i, img.Alt)
		if !img.Complete || !img.Decoded || img.NaturalWidth <= 0 || img.NaturalHeight <= 0 {
			t.Errorf("%s did not load: complete %v, decoded %v, natural size %dx%d",
				name, img.Complete, img.Decoded, img.NaturalWidth, img.NaturalHeight)
		}
		if img.Width <= 0 || img.Height <= 0 {
			t.Errorf("%s is drawn %vx%v", name, img.Width, img.Height)
		}
		if img.Left < 0 || img.Right > float64(layout.InnerWidth) {
			t.Errorf("%s spans x %v..%v, outside the %dpx viewport", name, img.Left, img.Right, layout.InnerWidth)
		}
	}
	if layout.ScrollWidth > layout.InnerWidth {
		t.Errorf("page is %dpx wide, wider than the %dpx viewport: it scrolls sideways", layout.ScrollWidth, layout.InnerWidth)
	}

	// One row per gate, in order, with the gate's own verdict.
	gates := run.Summary.Gates
	if len(page.GateRows) != len(gates) {
		t.Fatalf("#gates has %d rows, want one per gate (%d)", len(page.GateRows), len(gates))
	}
	for i, g := range gates {
		cells := page.GateRows[i].Cells
		if len(cells) != 3 {
			t.Errorf("gate row %d has %d cells, want 3: %q", i, len(cells), cells)
			continue
		}
		want := "FAIL"
		if g.Pass {
			want = "pass"
		}
		if cells[0] != g.Expr || !strings.Contains(cells[2], want) {
			t.Errorf("gate row %d reads %q, want %q with verdict %q", i, cells, g.Expr, want)
		}
	}
}

// TestReportVariantsInBrowser opens the report.html of a multi-seed and an
// external run in headless Chromium (TestReportHTMLInBrowser opens a live
// one) and checks what a reader sees: checkReadable, every chart drawn and
// the gates table.
// Set STORMDRILL_SCREENSHOT_DIR=dir for screenshots of each.
func TestReportVariantsInBrowser(t *testing.T) {
	chromium := chromiumOrSkip(t)
	synthetic := browserRun(t)
	for _, v := range []reportVariant{
		{"multi-seed", seedsRun(t, true)},
		{"external", externalRun(t)},
	} {
		t.Run(v.name, func(t *testing.T) {
			run := v.run
			run.Timeseries, run.HealthyCDF, run.HealthyOutageCDF = synthetic.Timeseries, synthetic.HealthyCDF, synthetic.HealthyOutageCDF
			dir := t.TempDir()
			if err := WriteRunFiles(dir, run); err != nil {
				t.Fatal(err)
			}
			shots := os.Getenv("STORMDRILL_SCREENSHOT_DIR")
			var opts []browsercheck.Option
			if shots != "" {
				opts = append(opts, browsercheck.Screenshots())
			}
			page, err := browsercheck.Visit(t.Context(), chromium, filepath.Join(dir, "report.html"), t.TempDir(), opts...)
			if err != nil {
				t.Fatal(err)
			}
			if shots != "" {
				t.Setenv("STORMDRILL_SCREENSHOT", filepath.Join(shots, strings.ReplaceAll(v.name, " ", "-")+".png"))
				if _, err := page.SaveScreenshot("STORMDRILL_SCREENSHOT"); err != nil {
					t.Error(err)
				}
			}
			checkReadable(t, page, run.Summary)
			if len(page.Charts) < 6 {
				t.Errorf("%d interactive charts, want at least 6", len(page.Charts))
			}
			for _, c := range page.Charts {
				if c.Painted < 1000 {
					t.Errorf("chart %s is not drawn (%d pixels painted)", c.ID, c.Painted)
				}
			}
			wantCells := 3
			if run.Summary.Seeds != nil {
				wantCells = 6
			}
			if len(page.GateRows) != len(run.Summary.Gates) {
				t.Errorf("#gates has %d rows, want %d", len(page.GateRows), len(run.Summary.Gates))
			}
			for i, r := range page.GateRows {
				if len(r.Cells) != wantCells {
					t.Errorf("gate row %d has %d cells, want %d: %q", i, len(r.Cells), wantCells, r.Cells)
				}
			}
		})
	}
}
