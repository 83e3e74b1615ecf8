package render

import (
	"bytes"
	"testing"

	"github.com/stormdrill/stormdrill/reports"
	"github.com/stormdrill/stormdrill/reports/internal/fixture"
	"github.com/stormdrill/stormdrill/reports/leakscan"
)

// TestNoSourceTextInReports renders every report variant with every
// writer, and the comparison of single and multi-seed runs, and scans what
// a reader sees for template or Go source text.
func TestNoSourceTextInReports(t *testing.T) {
	for _, v := range reportVariants(t) {
		for name, text := range renderedReports(t, v.run) {
			if name == "report.html" {
				text = leakscan.VisibleText(text)
			}
			for _, leak := range leakscan.Find(text) {
				t.Errorf("%s, %s: %s", v.name, name, leak)
			}
		}
	}
	for _, c := range []*reports.Comparison{fixture.Run(t).Baseline, seedsRun(t, true).Baseline} {
		md := string(render(t, func(b *bytes.Buffer) error { return WriteComparisonMarkdown(b, c) }))
		for _, leak := range leakscan.Find(md) {
			t.Errorf("compare: %s", leak)
		}
	}
}
