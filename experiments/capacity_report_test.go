package experiments

import (
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stormdrill/stormdrill/internal/testsuite"
)

// capacityFixture is a finished search over workers: 8 fails its drain
// gate, 16 and 32 pass; nothing is ever dead-lettered.
func capacityFixture() *CapacityResult {
	return &CapacityResult{Drill: "fanout-outage", Key: "dispatcher.workers", Integer: true, Found: true, Bracket: true,
		Answer: 16, Failing: 8, Seeds: 1, Baseline: 64, Note: "bracketed", Gates: []string{"drain_time < 10m", "lost == 0"},
		Probes: []Probe{
			{Value: 8, Seeds: 1, Amplification: 1.31, HealthyP99S: 0.75, DrainTimeS: 648, FailedGates: []string{"drain_time < 10m"}},
			{Value: 16, Seeds: 1, Passed: 1, Pass: true, Amplification: 1.2, HealthyP99S: 0.5, DrainTimeS: 286.19},
			{Value: 32, Seeds: 1, Passed: 1, Pass: true, Amplification: 1.1, HealthyP99S: 0.25, DrainTimeS: math.NaN()},
		}}
}

// The capacity table writes each metric in one unit and precision per
// column, leaves out of the charts a metric that is 0 on every probe and
// says so in one line, and charts passing and failing probes apart.
func TestCapacityReportView(t *testing.T) {
	r := capacityFixture()
	header, rows := r.capacityTable()
	if len(header) != 7 || len(rows) != 3 {
		t.Fatalf("table %q with %d rows", header, len(rows))
	}
	if got := []string{rows[0][4], rows[1][4], rows[2][4]}; got[0] != "10.8min" || got[1] != "4.8min" || got[2] != "not drained" {
		t.Errorf("drain time column %q: want one unit", got)
	}
	if rows[1][0] != "16 ◀" || rows[0][6] != "drain_time < 10m" {
		t.Errorf("rows %q", rows)
	}
	if z := r.zeroLine(); z != "0 on every probe, so not plotted: dead-lettered." {
		t.Errorf("zero line %q", z)
	}
	charts := capacityCharts(r)
	if len(charts) != 3 {
		t.Fatalf("%d charts, want 3 (dead-lettered is always 0)", len(charts))
	}
	pass, fail := charts[0].Series[0], charts[0].Series[1]
	if !math.IsNaN(pass.Values[0]) || fail.Values[0] != 1.31 || pass.Values[1] != 1.2 || !math.IsNaN(fail.Values[1]) {
		t.Errorf("amplification chart: pass %v, fail %v", pass.Values, fail.Values)
	}
}

// TestCapacityReportInBrowser opens a capacity report.html in headless
// Chromium: it fits a 1,366 px window and draws one chart per metric that
// is not always 0, with values on hover.
func TestCapacityReportInBrowser(t *testing.T) {
	testsuite.FullTier(t, "opens a capacity report in Chromium")
	r := capacityFixture()
	dir := t.TempDir()
	if err := WriteCapacity(dir, r); err != nil {
		t.Fatal(err)
	}
	page := openReport(t, filepath.Join(dir, "report.html"), len(capacityCharts(r)))
	if !strings.Contains(page.Text, r.zeroLine()) || !strings.Contains(page.Text, r.AnswerText()) {
		t.Errorf("the page lacks the answer or the zero line:\n%s", page.Text)
	}
}
