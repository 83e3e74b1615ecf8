package render

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/stormdrill/stormdrill/reports"
)

// Bounds on what the terminal summary prints.
const (
	maxTerminalGates    = 20
	maxTerminalFailures = 10
)

// WriteTerminalSummary writes what a person at a terminal wants after a
// run: the verdict naming what failed; the faulty cohorts against the
// healthy ones (amplification and drain time first), then the pipeline
// totals; each gate and tolerance with ✓ or ✗; and where the report is.
func WriteTerminalSummary(w io.Writer, r *reports.Run) error {
	v := buildView(r, nil)
	m := &mdWriter{w: w}
	m.line(fmt.Sprintf("%s: %s", v.Title, v.Verdict))
	if r == nil || r.Summary == nil {
		return m.err
	}
	for i, f := range v.Findings {
		if i >= maxTerminalFailures {
			m.line(fmt.Sprintf("  … and %d more findings (see the report)", len(v.Findings)-i))
			break
		}
		m.line("  ! " + f.Text)
		for _, d := range f.Detail {
			m.line("      " + d)
		}
	}
	if v.SeedScope != "" {
		m.line(fmt.Sprintf("  %d seeds (%s): the gates cover every seed; the cohort lines are %s's", v.SeedCount, v.SeedRange, v.SeedScope))
	}
	for _, line := range v.CohortLines {
		m.line("  " + line)
	}
	if v.CohortLinesOmitted > 0 {
		m.line(fmt.Sprintf("  … and %d more faulty cohorts (see the report)", v.CohortLinesOmitted))
	}
	for _, o := range v.OutageLines {
		m.line("  " + o)
	}
	if v.OutageLinesOmitted > 0 {
		m.line(fmt.Sprintf("  … and %d more outages (see the report)", v.OutageLinesOmitted))
	}
	for i, row := range v.Replays {
		if i >= maxTerminalGates {
			break
		}
		m.line(fmt.Sprintf("  replay %s (%s): %s replayed · amplification %s · drain time %s · load %s → %s (peak %s) · healthy p99 %s",
			row.Action, row.Selection, row.Replayed, row.Amplification, row.Drain, row.LoadBefore, row.LoadDuring, row.LoadPeak, row.HealthyP99))
	}
	writeTerminalGates(m, v)
	if v.Accounting != "" {
		m.line("  ✗ accounting identity: " + v.Accounting)
	}
	if v.SeedCount > 0 {
		for _, f := range v.SeedFailures {
			m.line("  ✗ " + f)
		}
		if v.SeedFailuresOmitted {
			m.line("  … and more failures on other seeds (see summary.json)")
		}
		m.line(fmt.Sprintf("  %d seeds: per-seed summaries in seeds/, mean and 95%% CI of every figure in summary.json", v.SeedCount))
	}
	if v.Dir != "" {
		m.line("  report: " + filepath.Join(v.Dir, "report.html"))
	}
	return m.err
}

// writeTerminalGates writes each gate and tolerance with ✓ or ✗, their
// expressions padded to one width.
func writeTerminalGates(m *mdWriter, v *reportView) {
	width := 0
	for i, g := range v.Gates {
		if i < maxTerminalGates {
			width = max(width, len([]rune(g.Expr)))
		}
	}
	for _, t := range v.Tolerances {
		width = max(width, len([]rune(t.Expr)))
	}
	mark := func(pass bool) string {
		if pass {
			return "✓"
		}
		return "✗"
	}
	pad := func(s string) string { return s + strings.Repeat(" ", max(0, width-len([]rune(s)))) }
	for i, g := range v.Gates {
		if i >= maxTerminalGates {
			m.line(fmt.Sprintf("  … and %d more gates", len(v.Gates)+v.GatesOmitted-i))
			break
		}
		if v.SeedGates {
			m.line(fmt.Sprintf("  %s %s  held on %s · min %s · mean %s · max %s", mark(g.Pass), pad(g.Expr), g.HeldOn, g.Min, g.Mean, g.Max))
			continue
		}
		m.line(fmt.Sprintf("  %s %s  %s", mark(g.Pass), pad(g.Expr), g.Measured))
	}
	for i, t := range v.Tolerances {
		if i >= maxTerminalGates {
			m.line(fmt.Sprintf("  … and %d more tolerances", len(v.Tolerances)-i))
			break
		}
		line := fmt.Sprintf("  %s %s  %s → %s, %s", mark(t.Pass), pad(t.Expr), t.Base, t.Candidate, t.Change)
		if t.Test != "" {
			line += " " + t.Test
		}
		m.line(line)
	}
}
