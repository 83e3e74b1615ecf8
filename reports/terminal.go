package reports

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
)

// maxTerminalGates bounds the gate lines printed after a run.
const maxTerminalGates = 20

// WriteTerminalSummary writes what a person at a terminal wants after a
// run: the verdict, each gate with ✓ or ✗, five key figures and where the
// report is.
func WriteTerminalSummary(w io.Writer, r *Run) error {
	v := buildView(r, nil)
	m := &mdWriter{w: w}
	m.line(fmt.Sprintf("%s: %s", v.Title, v.Verdict))
	if r == nil || r.Summary == nil {
		return m.err
	}
	s := r.Summary
	width := 0
	for i, g := range v.Gates {
		if i < maxTerminalGates {
			width = max(width, len([]rune(g.Expr)))
		}
	}
	for i, g := range v.Gates {
		if i >= maxTerminalGates {
			m.line(fmt.Sprintf("  … and %d more gates", len(s.Gates)-i))
			break
		}
		mark := "✓"
		if !g.Pass {
			mark = "✗"
		}
		pad := strings.Repeat(" ", width-len([]rune(g.Expr)))
		m.line(fmt.Sprintf("  %s %s%s  %s", mark, g.Expr, pad, g.Measured))
	}
	p99 := "n/a"
	if s.HealthyLatencyS.Count > 0 {
		p99 = FormatDuration(s.HealthyLatencyS.P99)
	}
	if s.SLOS > 0 {
		p99 += " (SLO " + FormatDuration(s.SLOS) + ")"
	}
	// Drain time is about outages: a drill without one does not mention it.
	drain := ""
	if len(s.Outages) > 0 {
		drain = " · drain time " + notApplicable(s, "drain_time")
		if d, ok, _ := s.Metric("drain_time"); ok {
			drain = " · drain time " + FormatDuration(d)
		}
	}
	m.line(fmt.Sprintf("  amplification %s · healthy p99 %s%s · DLQ %s · lost %s",
		FormatValue(Ratio, s.Amplification), p99, drain,
		groupDigits(s.Deliveries.DeadLettered), groupDigits(s.Deliveries.Lost)))
	if r.Dir != "" {
		m.line("  report: " + filepath.Join(r.Dir, "report.html"))
	}
	return m.err
}
