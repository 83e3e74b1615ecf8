package experiments

import (
	"os"
	"strconv"
	"testing"

	"github.com/stormdrill/stormdrill/internal/testsuite"
	"github.com/stormdrill/stormdrill/reports/browsercheck"
)

// openReport opens the report.html at path in headless Chromium with the
// network blocked and checks what every experiment page owes its reader:
// no error and no request leaving the page, nothing wider than a 1,366 px
// window, the wanted number of interactive charts drawn, values on hover.
// Set STORMDRILL_SCREENSHOT=file.png for a screenshot.
func openReport(t *testing.T, path string, wantCharts int) *browsercheck.Page {
	t.Helper()
	chromium, err := browsercheck.Chromium()
	if err != nil {
		testsuite.NotRun(t, "Chromium", err.Error())
	}
	var opts []browsercheck.Option
	if os.Getenv("STORMDRILL_SCREENSHOT") != "" {
		opts = append(opts, browsercheck.Screenshots())
	}
	page, err := browsercheck.Visit(t.Context(), chromium, path, t.TempDir(), opts...)
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
	if page.Layout.ChartsDrawn != strconv.Itoa(wantCharts) || len(page.Charts) != wantCharts {
		t.Errorf("charts: script drew %q, page has %d, want %d", page.Layout.ChartsDrawn, len(page.Charts), wantCharts)
	}
	for _, c := range page.Charts {
		if c.Width <= 0 || c.Width > float64(page.Layout.InnerWidth) || c.Painted < 100 {
			t.Errorf("chart %s: canvas %vx%v, %d pixels painted", c.ID, c.Width, c.Height, c.Painted)
		}
	}
	for _, p := range page.HoverProblems() {
		t.Error(p)
	}
	return page
}
