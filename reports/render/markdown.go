package render

import (
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/stormdrill/stormdrill/reports"
)

// PlotRef is one plot written by WritePlots: its title and the base names
// of its PNG and SVG files in the run directory.
type PlotRef struct{ Title, PNG, SVG string }

// Bounds on report tables; what is left out is counted in the report.
const (
	maxGateRows    = 200
	maxCohortRows  = 50
	maxOutageRows  = 50
	maxBreakerRows = 50
	maxPolicyRows  = 100
	maxAlertRows   = 50
	maxRestartRows = 50
	maxReasonRows  = 50
	maxPlots       = 50
	maxFailureRows = 50
	maxSeedRows    = 200
)

// Anchors the key figures link to; the glossary (GlossaryMarkdown) carries these headings.
const (
	anchorDelivery      = "delivery"
	anchorAttempt       = "attempt"
	anchorAmplification = "retry-amplification"
	anchorDrain         = "drain-time"
	anchorReadyAge      = "oldest-ready-age"
	anchorDelayedAge    = "oldest-delayed-age"
	anchorHealthy       = "healthy-subscriber-latency"
	anchorDeadLettered  = "dead-lettered"
	anchorLost          = "lost"
	anchorDuplicates    = "duplicates"
	anchorRetryAfter    = "retry-after"
	anchorBackPressure  = "back-pressure"
	anchorBreaker       = "circuit-breaker"
	anchorTimeSeries    = "time-series"
	anchorLateness      = "lateness"
	anchorStatusCodes   = "status-codes"
	anchorSeeds         = "seeds"
	anchorRetrySpread   = "retry-spread"
	anchorReplay        = "dlq-replay"
)

// WriteMarkdown writes report.md: the verdict and what failed; the faulty
// cohorts against the healthy ones (after the gates in a multi-seed run,
// whose gates cover every seed), then the pipeline totals; gates,
// tolerances, key figures, cohorts, dead letters, outages, breaker
// transitions, plots, policy, the baseline comparison, the spread across
// seeds, the live-mode sections when they apply, and the definitions every
// link points to (inside the report, so no link leaves it).
func WriteMarkdown(w io.Writer, r *reports.Run, plots []PlotRef) error {
	v := buildView(r, plots)
	m := &mdWriter{w: w}
	m.line("# " + mdCell(v.Title))
	m.line("")
	if v.Description != "" {
		m.line(mdCell(v.Description))
		m.line("")
	}
	m.line("**" + mdCell(v.Verdict) + "** · " + v.Meta)
	if r == nil || r.Summary == nil {
		return m.err
	}
	for _, section := range []func(*mdWriter, *reportView){
		writeMarkdownFirstScreen,
		writeMarkdownSides,
		writeMarkdownTotals,
		writeMarkdownEvents,
		writeMarkdownRunFiles,
		writeMarkdownSeeds,
		writeMarkdownWallClock,
		writeMarkdownDefinitions,
	} {
		section(m, v)
	}
	return m.err
}

// writeMarkdownFirstScreen writes what sits under the verdict: findings,
// failures, one line per outage and the note on a multi-seed run.
func writeMarkdownFirstScreen(m *mdWriter, v *reportView) {
	if len(v.Findings) > 0 {
		m.heading("## Findings")
		for _, f := range v.Findings {
			mark := "⚠️ "
			if f.Expected {
				mark = ""
			}
			m.line("- " + mark + mdCell(f.Text))
			for _, d := range f.Detail {
				m.line("  - `" + strings.ReplaceAll(d, "`", "'") + "`")
			}
		}
	}
	if len(v.Failures) > 0 {
		m.line("")
		for _, f := range v.Failures {
			m.line("- ❌ " + mdCell(f))
		}
		m.omitted(v.FailuresOmitted, "failures")
	}
	if len(v.OutageLines) > 0 {
		m.line("")
		for _, o := range v.OutageLines {
			m.line("- " + mdCell(o))
		}
		if v.OutageLinesOmitted > 0 {
			m.line(fmt.Sprintf("- … and %d more outages (see Outages)", v.OutageLinesOmitted))
		}
	}
	if v.SeedNote != "" {
		m.line("")
		m.line(mdCell(v.SeedNote))
	}

}

// writeMarkdownSides writes the faulty cohorts against the healthy ones
// and the gates: a multi-seed run's gates cover every seed, so they come
// before the tables of the first seed's run.
func writeMarkdownSides(m *mdWriter, v *reportView) {
	// A multi-seed run's gates cover every seed: they come before the
	// tables of the first seed's run.
	if v.SeedGates {
		writeMarkdownGates(m, v)
	}

	if len(v.Sides) > 0 {
		m.heading("## Faulty against healthy" + scopeSuffix(v))
		head := "| |"
		align := "| --- |"
		for _, sd := range v.Sides {
			head += " " + mdCell(sd.Label) + " |"
			align += " ---: |"
		}
		m.line(head)
		m.line(align)
		rows := []struct {
			label, anchor string
			get           func(sideView) string
		}{
			{"subscribers", anchorDelivery, func(s sideView) string { return s.Subscribers }},
			{"retry amplification", anchorAmplification, func(s sideView) string { return s.Amplification }},
			{"dead letters by reason", anchorDeadLettered, func(s sideView) string { return s.DeadLetters }},
			{"drain time", anchorDrain, func(s sideView) string { return s.Drain }},
			{"oldest age (max)", anchorReadyAge, func(s sideView) string { return s.OldestAge }},
			{"latency p99", anchorHealthy, func(s sideView) string { return s.P99 }},
			{"attempts", anchorAttempt, func(s sideView) string { return s.Attempts }},
			{"status codes", anchorStatusCodes, func(s sideView) string { return s.StatusCodes }},
		}
		for _, row := range rows {
			cells := []string{fmt.Sprintf("[%s](#%s)", row.label, row.anchor)}
			for _, sd := range v.Sides {
				cells = append(cells, mdCell(row.get(sd)))
			}
			m.row(cells...)
		}
		m.omitted(v.SidesOmitted, "faulty cohorts (see Cohorts)")
	}

	if !v.SeedGates {
		writeMarkdownGates(m, v)
	}

}

// writeMarkdownTotals writes the pipeline totals, the cohorts and the dead
// letters.
func writeMarkdownTotals(m *mdWriter, v *reportView) {
	m.heading("## Pipeline totals" + scopeSuffix(v))
	m.line("| figure | value |")
	m.line("| --- | ---: |")
	for _, f := range v.Figures {
		m.row(fmt.Sprintf("[%s](#%s)", mdCell(f.Label), f.Anchor), mdCell(f.Value))
	}

	if len(v.Cohorts) > 0 {
		m.heading("## Cohorts")
		m.line("| cohort | subscribers | faulty | deliveries | delivered | DLQ | pending | attempts | amplification | p99 |")
		m.line("| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
		for _, c := range v.Cohorts {
			m.row(mdCell(c.Name), c.Subscribers, c.Faulty, c.Deliveries, c.Delivered, c.DLQ, c.Pending, c.Attempts, c.Amplification, c.P99)
		}
		m.omitted(v.CohortsOmitted, "cohorts")
		if codes := v.CohortCodes; len(codes) > 0 {
			m.line("")
			m.line(fmt.Sprintf("[Status codes](#%s) per cohort:", anchorStatusCodes))
			m.line("")
			m.line("| cohort | status codes |")
			m.line("| --- | --- |")
			for _, c := range codes {
				m.row(mdCell(c.Key), mdCell(c.Value))
			}
		}
	}

	m.heading(fmt.Sprintf("## [Dead letters](#%s)", anchorDeadLettered))
	if len(v.DeadLetters) == 0 {
		m.line("No dead letters.")
	} else {
		m.line("| reason | count | share |")
		m.line("| --- | ---: | ---: |")
		for _, d := range v.DeadLetters {
			m.row(mdCode(d.Reason), d.Count, d.Share)
		}
		m.omitted(v.DeadLettersOmitted, "reasons")
	}

}

// writeMarkdownEvents writes the outages, operator actions, DLQ replays
// and breaker transitions.
func writeMarkdownEvents(m *mdWriter, v *reportView) {
	if len(v.Outages) > 0 {
		m.heading(fmt.Sprintf("## Outages and [drain time](#%s)", anchorDrain))
		m.line(fmt.Sprintf("| partner | kind | start | end | drain time | [retry spread](#%s) |", anchorRetrySpread))
		m.line("| --- | --- | ---: | ---: | ---: | --- |")
		for _, o := range v.Outages {
			m.row(mdCell(o.Partner), mdCell(o.Kind), o.Start, o.End, o.Drain, mdCell(o.Spread))
		}
		m.omitted(v.OutagesOmitted, "outages")
	}

	if len(v.Actions) > 0 {
		m.heading("## Operator actions")
		m.line("| at | action | what it did |")
		m.line("| ---: | --- | --- |")
		for _, a := range v.Actions {
			m.row(a.At, mdCode(a.Kind), mdCell(a.Detail))
		}
		m.omitted(v.ActionsOmitted, "actions")
	}

	if len(v.Replays) > 0 {
		m.heading(fmt.Sprintf("## [DLQ replay](#%s)", anchorReplay))
		m.line("| action | selection | replayed | batches | amplification | drain time | load before | load during | peak | healthy p99 during | outcome |")
		m.line("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
		for _, r := range v.Replays {
			m.row(r.Action, mdCell(r.Selection), r.Replayed, r.Batches, r.Amplification, r.Drain, r.LoadBefore, r.LoadDuring, r.LoadPeak, r.HealthyP99, r.Outcome)
		}
	}

	if len(v.Breaker) > 0 {
		m.heading(fmt.Sprintf("## [Breaker](#%s) transitions", anchorBreaker))
		m.line("| at | partner | from | to |")
		m.line("| ---: | --- | --- | --- |")
		for _, b := range v.Breaker {
			m.row(b.At, mdCell(b.Partner), mdCell(b.From), mdCell(b.To))
		}
		m.omitted(v.BreakerOmitted, "rows of transitions")
	}

}

// writeMarkdownRunFiles writes the plots, the policy, the baseline
// comparison and what the partners saw of an external system.
func writeMarkdownRunFiles(m *mdWriter, v *reportView) {
	if len(v.Plots) > 0 {
		m.line("")
		m.line("## Plots")
		for _, p := range v.Plots {
			m.heading("### " + mdCell(p.Title))
			if p.PNG != "" {
				m.line(fmt.Sprintf("![%s](%s)", mdCell(p.Title), mdLink(p.PNG)))
			}
			if p.SVG != "" {
				m.line("")
				m.line(fmt.Sprintf("[SVG](%s)", mdLink(p.SVG)))
			}
		}
		m.omitted(v.PlotsOmitted, "plots")
	}

	if len(v.Policy) > 0 {
		m.heading("## Policy")
		m.line("| setting | value |")
		m.line("| --- | --- |")
		for _, kv := range v.Policy {
			m.row(mdCode(kv.Key), mdCell(kv.Value))
		}
		m.omitted(v.PolicyOmitted, "settings")
	}

	if v.Baseline != nil {
		m.heading("## Compared with the baseline")
		writeComparisonBody(m, v.Baseline)
	}

	if rows := v.External; len(rows) > 0 {
		m.heading("## Seen from the partners (external run)")
		m.line("| figure | value |")
		m.line("| --- | --- |")
		for _, kv := range rows {
			m.row(mdCell(kv[0]), mdCell(kv[1]))
		}
	}

}

// writeMarkdownSeeds writes every figure across the seeds of a multi-seed
// run.
func writeMarkdownSeeds(m *mdWriter, v *reportView) {
	if v.SeedCount > 0 {
		m.heading(fmt.Sprintf("## Across %d [seeds](#%s)", v.SeedCount, anchorSeeds))
		m.line(fmt.Sprintf("Seeds %s. The rest of this report is seed %d; per-seed summaries are in `seeds/`. "+
			"95%% CI: confidence interval of the mean, Student's t with n−1 degrees of freedom.", v.SeedList, v.Seed))
		m.line("")
		m.line("| metric | mean | 95% CI | min – max | seeds |")
		m.line("| --- | ---: | ---: | ---: | ---: |")
		for _, f := range v.SeedFigures {
			m.row(mdCode(f.Metric), f.Mean, f.CI, f.Range, f.N)
		}
	}

}

// writeMarkdownWallClock writes the live and external sections.
func writeMarkdownWallClock(m *mdWriter, v *reportView) {
	if v.Lateness != "" || len(v.Alerts) > 0 || len(v.Restarts) > 0 {
		m.line("")
		m.line("## " + v.RunHeading)
		if v.Lateness != "" {
			m.line("")
			m.line(fmt.Sprintf("[Arrival lateness](#%s) p50 / p90 / p99 / p99.9 / max: %s", anchorLateness, v.Lateness))
		}
		if len(v.Restarts) > 0 {
			m.heading("### " + v.RestartsHeading)
			m.line("| at | down for | kind | in flight |")
			m.line("| ---: | ---: | --- | ---: |")
			for _, rs := range v.Restarts {
				m.row(rs.At, rs.Down, rs.Kind, rs.InFlight)
			}
			m.omitted(v.RestartsOmitted, "restarts")
		}
		if len(v.Alerts) > 0 {
			m.heading("### DLQ alerts")
			m.line("| at | partner | reason | count |")
			m.line("| ---: | --- | --- | ---: |")
			for _, a := range v.Alerts {
				m.row(a.At, mdCell(a.Partner), mdCode(a.Reason), a.Count)
			}
			m.omitted(v.AlertsOmitted, "alerts")
		}
	}

}

// writeMarkdownDefinitions writes the glossary every link points to.
func writeMarkdownDefinitions(m *mdWriter, _ *reportView) {
	m.heading("## Definitions")
	m.line("What the harness measures; the links above point here.")
	m.line("")
	for _, line := range strings.Split(strings.TrimRight(GlossaryMarkdown(), "\n"), "\n") {
		m.line(line)
	}
}

// writeMarkdownGates writes the gates and the tolerances.
func writeMarkdownGates(m *mdWriter, v *reportView) {
	m.heading("## Gates")
	if len(v.Gates) == 0 {
		m.line("No gates.")
	} else {
		if v.SeedGates {
			m.line("| gate | held on | min | mean | max | verdict |")
			m.line("| --- | --- | ---: | ---: | ---: | --- |")
		} else {
			m.line("| gate | measured | verdict |")
			m.line("| --- | ---: | --- |")
		}
		for _, g := range v.Gates {
			if v.SeedGates {
				m.row(mdCode(g.Expr), mdCell(g.HeldOn), mdCell(g.Min), mdCell(g.Mean), mdCell(g.Max), passText(g.Pass))
				continue
			}
			m.row(mdCode(g.Expr), mdCell(g.Measured), passText(g.Pass))
		}
		m.omitted(v.GatesOmitted, "gates")
	}

	if len(v.Tolerances) > 0 {
		m.heading("## Tolerances against the baseline")
		m.line("| tolerance | base | candidate | change | test | verdict |")
		m.line("| --- | ---: | ---: | ---: | --- | --- |")
		for _, t := range v.Tolerances {
			test := t.Test
			if test == "" {
				test = "—"
			}
			m.row(mdCode(t.Expr), mdCell(t.Base), mdCell(t.Candidate), mdCell(t.Change), mdCell(test), passText(t.Pass))
		}
	}
}

// scopeSuffix marks the headings of a multi-seed run's first-seed tables.
func scopeSuffix(v *reportView) string {
	if v.SeedScope == "" {
		return ""
	}
	return " (" + v.SeedScope + ")"
}

func passText(pass bool) string {
	if pass {
		return "✅ pass"
	}
	return "❌ FAIL"
}

// isFinite is used by writers that must not print NaN.
func isFinite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
