package render

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stormdrill/stormdrill/reports"
)

// A live run whose injection lateness p99 exceeds a tenth of the smallest
// latency its report gives is flagged, in summary.json's findings and in
// report.md and report.html, without failing the run; below that, or with
// no lateness measured, it is not.
func TestLateInjectionFlagsALiveRun(t *testing.T) {
	newSummary := func(latenessP99 float64, speed float64) *reports.Summary {
		s := &reports.Summary{Drill: "d", Mode: "live", Speed: speed, Findings: []reports.Finding{},
			HealthyLatencyS: reports.Percentiles{Count: 100, P50: 0.080, P99: 0.6},
			Cohorts: []reports.Cohort{
				{Name: "healthy", LatencyS: reports.Percentiles{Count: 90, P50: 0.080}},
				{Name: "fast", LatencyS: reports.Percentiles{Count: 10, P50: 0.020}},
				{Name: "idle"}, // no latency measured: not the smallest
			},
			Lateness: &reports.Percentiles{Count: 1000, P50: 0.0005, P99: latenessP99}}
		gates, err := reports.ParseGates([]string{"lost == 0"})
		if err != nil {
			t.Fatal(err)
		}
		reports.EvalGates(s, gates)
		return s
	}
	// The smallest latency is cohort fast's p50, 20 ms: the limit is 2 ms.
	for _, c := range []struct {
		p99, speed float64
		flagged    bool
	}{
		{0.0019, 0, false},
		{0.0021, 0, true},
		{0.0021, 1, true},
		// At speed 10 the 20 ms of drill time are 2 ms of wall time: the
		// limit is 0.2 ms of lateness.
		{0.00019, 10, false},
		{0.00021, 10, true},
	} {
		s := newSummary(c.p99, c.speed)
		f := reports.LateInjection(s)
		if (f != nil) != c.flagged {
			t.Fatalf("lateness p99 %gs at speed %g: finding %+v, want flagged %v", c.p99, c.speed, f, c.flagged)
		}
		if f == nil {
			continue
		}
		if f.Kind != reports.FindingLateInjection || !f.Advisory || !strings.Contains(f.Message, "cohort fast's latency p50") {
			t.Errorf("finding %+v: want an advisory late-injection naming cohort fast", f)
		}
		reports.AddFindings(s, []reports.Finding{*f}, nil)
		if !s.Pass || len(s.Failures) != 0 {
			t.Errorf("flagged run failed: %q; the flag must not fail it", s.Failures)
		}
		var md, html bytes.Buffer
		if err := WriteMarkdown(&md, &reports.Run{Summary: s}, nil); err != nil {
			t.Fatal(err)
		}
		if err := WriteHTML(&html, &reports.Run{Summary: s}, nil, nil); err != nil {
			t.Fatal(err)
		}
		for name, out := range map[string]string{"report.md": md.String(), "report.html": html.String()} {
			if !strings.Contains(out, "late-injection: lateness p99") || !strings.Contains(out, "flagged, it does not fail the run") {
				t.Errorf("%s does not show the flag:\n%s", name, out)
			}
		}
	}
	if f := reports.LateInjection(&reports.Summary{Mode: "live", HealthyLatencyS: reports.Percentiles{Count: 1, P50: 0.001}}); f != nil {
		t.Errorf("no lateness measured, flagged: %+v", f)
	}
}
