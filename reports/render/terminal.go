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
	s := r.Summary
	for i, f := range s.Findings {
		if i >= maxTerminalFailures {
			m.line(fmt.Sprintf("  … and %d more findings (see the report)", len(s.Findings)-i))
			break
		}
		m.line("  ! " + reports.FindingText(f))
		for _, d := range f.Detail {
			m.line("      " + reports.OneLine(d))
		}
	}
	if v.SeedScope != "" {
		m.line(fmt.Sprintf("  %d seeds (%s): the gates cover every seed; the cohort lines are %s's", v.SeedCount, seedRangeText(s.Seeds), v.SeedScope))
	}
	sides, omitted := cohortSides(s)
	for _, sd := range sides {
		m.line("  " + terminalSide(s, sd))
	}
	if omitted > 0 {
		m.line(fmt.Sprintf("  … and %d more faulty cohorts (see the report)", omitted))
	}
	for _, o := range v.OutageLines {
		m.line("  " + o)
	}
	if v.OutageLinesOmitted > 0 {
		m.line(fmt.Sprintf("  … and %d more outages (see the report)", v.OutageLinesOmitted))
	}
	for i, rp := range s.Replays {
		if i >= maxTerminalGates {
			break
		}
		row := replayViewRow(rp)
		m.line(fmt.Sprintf("  replay %s (%s): %s replayed · amplification %s · drain time %s · load %s → %s (peak %s) · healthy p99 %s",
			row.Action, row.Selection, row.Replayed, row.Amplification, row.Drain, row.LoadBefore, row.LoadDuring, row.LoadPeak, row.HealthyP99))
	}
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
			m.line(fmt.Sprintf("  … and %d more gates", len(s.Gates)-i))
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
	if !reports.AccountingHolds(s) {
		m.line("  ✗ accounting identity: " + reports.AccountingText(s))
	}
	if s.Seeds != nil {
		for i, f := range s.Failures {
			if !strings.HasPrefix(f, "seed ") {
				continue
			}
			if i >= maxTerminalFailures {
				m.line("  … and more failures on other seeds (see summary.json)")
				break
			}
			m.line("  ✗ " + reports.OneLine(f))
		}
		m.line(fmt.Sprintf("  %d seeds: per-seed summaries in seeds/, mean and 95%% CI of every figure in summary.json", len(s.Seeds.Runs)))
	}
	if r.Dir != "" {
		m.line("  report: " + filepath.Join(r.Dir, "report.html"))
	}
	return m.err
}

// terminalSide is one cohort line: a faulty cohort leads with its
// amplification and drain time; the healthy cohorts with amplification and
// latency against the SLO; the pipeline with its totals.
func terminalSide(s *reports.Summary, sd sideView) string {
	var parts []string
	switch {
	case strings.HasSuffix(sd.Label, "(faulty)"):
		parts = append(parts, "amplification "+sd.Amplification, "drain time "+sd.Drain)
		if sd.OldestAge != "—" {
			parts = append(parts, "oldest age "+sd.OldestAge)
		}
		parts = append(parts, "DLQ "+sd.DeadLetters)
	case sd.Label == "pipeline":
		parts = append(parts, "amplification "+sd.Amplification)
		if len(s.Cohorts) == 0 || !anyFaulty(s) {
			parts = append(parts, "healthy p99 "+healthyP99Text(s))
			if len(s.Outages) > 0 {
				parts = append(parts, "drain time "+sd.Drain)
			}
		}
		parts = append(parts, "DLQ "+sd.DeadLetters, "lost "+reports.GroupDigits(s.Deliveries.Lost))
	default:
		parts = append(parts, "amplification "+sd.Amplification, "p99 "+healthyP99Text(s), "DLQ "+sd.DeadLetters)
	}
	label := sd.Label
	if sd.Label == "healthy" {
		label = fmt.Sprintf("healthy (%s subscribers)", sd.Subscribers)
	}
	return label + ": " + strings.Join(parts, " · ")
}

func anyFaulty(s *reports.Summary) bool {
	for _, c := range s.Cohorts {
		if c.Faulty {
			return true
		}
	}
	return false
}

// healthyP99Text is the healthy p99 with the SLO beside it.
func healthyP99Text(s *reports.Summary) string {
	p99 := "n/a"
	if s.HealthyLatencyS.Count > 0 {
		p99 = reports.FormatDuration(s.HealthyLatencyS.P99)
	}
	if s.SLOS > 0 {
		p99 += " (SLO " + reports.FormatDuration(s.SLOS) + ")"
	}
	return p99
}
