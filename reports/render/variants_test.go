package render

import (
	"bytes"
	"testing"

	"github.com/stormdrill/stormdrill/reports"
	"github.com/stormdrill/stormdrill/reports/internal/fixture"
)

// reportVariant is one kind of run a report is written for.
type reportVariant struct {
	name string
	run  *reports.Run
}

// plainRun is the fixture as a simulated single-seed run without a
// baseline: no tolerances, no wall-clock sections.
func plainRun(t *testing.T) *reports.Run {
	t.Helper()
	run := fixture.Run(t)
	s := run.Summary
	s.Mode, s.Speed, s.Lateness, s.Alerts, s.Restarts = "sim", 0, nil, nil, nil
	run.Baseline = nil
	reports.ApplyComparison(s, nil)
	s.Baseline = ""
	return run
}

// seedsRun is plainRun over three seeds whose figures differ, with a
// baseline of three other seeds when withBaseline is set.
func seedsRun(t *testing.T, withBaseline bool) *reports.Run {
	t.Helper()
	var runs []*reports.Run
	for i, p99 := range []float64{0.61234, 0.45, 0.9} {
		r := plainRun(t)
		r.Summary.Seed = 7 + uint64(i)
		r.Summary.HealthyLatencyS.P99 = p99
		r.Summary.Amplification = new(1.03 + 0.01*float64(i))
		gates, err := reports.ParseGates(fixture.Gates)
		if err != nil {
			t.Fatal(err)
		}
		reports.EvalGates(r.Summary, gates)
		reports.Judge(r.Summary)
		runs = append(runs, r)
	}
	run := reports.CombineSeeds(runs)
	if withBaseline {
		var bases []*reports.Run
		for i, p99 := range []float64{0.5, 0.52, 0.48} {
			r := plainRun(t)
			r.Summary.Seed = 42 + uint64(i)
			r.Summary.HealthyLatencyS.P99 = p99
			bases = append(bases, r)
		}
		base := reports.CombineSeeds(bases).Summary
		run.Baseline = reports.Compare(base, run.Summary, fixture.Tolerances(t, "healthy.latency.p99=+10%", "amplification=+0.05"))
		run.Baseline.Base = "out/baseline"
		reports.ApplyComparison(run.Summary, run.Baseline)
	}
	return run
}

// externalRun is the fixture as an external run: what the partners saw.
func externalRun(t *testing.T) *reports.Run {
	t.Helper()
	run := plainRun(t)
	s := run.Summary
	s.Mode = "external"
	s.Lateness = &reports.Percentiles{Count: 100, P50: 0.001, P90: 0.002, P99: 0.004, P999: 0.01, Max: 0.02}
	s.Restarts = []reports.Restart{{AtS: 900, DownS: 3, InFlight: 2}}
	gap := 2.5
	s.External = &reports.External{
		System: "command ./sender", DeadLetterSource: "endpoint", LostClaimed: true, Unresolved: 3,
		Unidentified: 170, UnidentifiedByCohort: map[string]int64{"acme": 170},
		UnknownDeadLetters: 2, IngestRefusedEvents: 19,
		RetryAfter:     reports.RetryAfterCompliance{Checked: 12, Early: 1, ShortestGapS: &gap, MedianGapS: &gap},
		Backoff:        []reports.BackoffGap{{Ordinal: 2, Count: 40, P50S: 2, P90S: 3.5, MinS: 0.5, MaxS: 4}},
		CallsWhileDown: []reports.DownCalls{{Partner: "acme", Kind: "unavailable", StartS: 600, EndS: 1800, Calls: 12}},
		Concurrency:    []reports.Concurrency{{Partner: "acme", Max: 4}},
	}
	return run
}

// reportVariants is every kind of run a report is written for: single
// seed with and without a baseline, several seeds with and without one,
// external (with findings, one expected, and without) and live.
func reportVariants(t *testing.T) []reportVariant {
	t.Helper()
	live := fixture.Run(t) // a live run compared with a baseline
	liveAlone := fixture.Run(t)
	liveAlone.Baseline = nil
	reports.ApplyComparison(liveAlone.Summary, nil)
	return []reportVariant{
		{"single seed", plainRun(t)},
		{"single seed with baseline", func() *reports.Run {
			r := plainRun(t)
			r.Baseline = live.Baseline
			reports.ApplyComparison(r.Summary, r.Baseline)
			return r
		}()},
		{"multi-seed", seedsRun(t, false)},
		{"multi-seed with baseline", seedsRun(t, true)},
		{"external", externalRun(t)},
		{"external with findings", func() *reports.Run {
			r := externalRun(t)
			at := 1.5
			reports.AddFindings(r.Summary, []reports.Finding{
				{Kind: reports.FindingSystemExited, Count: 1, FirstAtS: &at, Message: "the system exited on its own", Detail: []string{"panic: boom"}},
				{Kind: reports.FindingIngestRefused, Count: 3, Message: "the ingest refused 3 of 10 events"},
			}, []string{reports.FindingIngestRefused})
			return r
		}()},
		{"live", liveAlone},
		{"live with baseline", live},
		{"no summary", &reports.Run{}},
	}
}

// renderedReports renders each writer of a run: Markdown, HTML (with its
// plots missing, which only changes what the figures show) and terminal.
func renderedReports(t *testing.T, run *reports.Run) map[string]string {
	t.Helper()
	out := map[string]string{}
	out["report.md"] = string(render(t, func(b *bytes.Buffer) error { return WriteMarkdown(b, run, fixturePlots) }))
	out["report.html"] = string(render(t, func(b *bytes.Buffer) error {
		return WriteHTML(b, run, fixturePlots, fakePlotFiles(map[string]string{"attempts.svg": tinySVG}))
	}))
	out["terminal"] = string(render(t, func(b *bytes.Buffer) error { return WriteTerminalSummary(b, run) }))
	return out
}
