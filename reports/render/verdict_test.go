package render

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stormdrill/stormdrill/reports"
)

// TestBrokenAccountingFailsEveryOutput: a run whose deliveries do not add
// up fails, though every gate holds, and the terminal, the report headline,
// summary.json and junit.xml all say so.
func TestBrokenAccountingFailsEveryOutput(t *testing.T) {
	s := &reports.Summary{Drill: "leaky", Deliveries: reports.Deliveries{Created: 100, Delivered: 90, DeadLettered: 5, Pending: 2, Lost: 3}}
	gates, err := reports.ParseGates([]string{"dead_lettered <= 10"})
	if err != nil {
		t.Fatal(err)
	}
	reports.EvalGates(s, gates)
	if s.Pass || !s.Gates[0].Pass {
		t.Fatalf("pass %v with the gate %v: want a failed run whose gate holds", s.Pass, s.Gates[0].Pass)
	}
	run := &reports.Run{Summary: s}
	term := string(render(t, func(b *bytes.Buffer) error { return WriteTerminalSummary(b, run) }))
	first, _, _ := strings.Cut(term, "\n")
	if !strings.Contains(first, "FAIL") || !strings.Contains(first, "accounting identity broken") || !strings.Contains(term, "✗ accounting identity") {
		t.Errorf("terminal:\n%s", term)
	}
	md := string(render(t, func(b *bytes.Buffer) error { return WriteMarkdown(b, run, nil) }))
	if !strings.Contains(md, "**FAIL: accounting identity broken (lost 3)**") {
		t.Errorf("report.md headline does not name the broken identity:\n%.400s", md)
	}
	js := render(t, func(b *bytes.Buffer) error { return reports.WriteSummaryJSON(b, s) })
	var back reports.Summary
	if err := json.Unmarshal(js, &back); err != nil {
		t.Fatal(err)
	}
	if back.Pass || len(back.Failures) != 1 || !strings.Contains(back.Failures[0], "lost 3") {
		t.Errorf("summary.json: pass %v, failures %q", back.Pass, back.Failures)
	}
	junit := string(render(t, func(b *bytes.Buffer) error { return WriteJUnit(b, s) }))
	if !strings.Contains(junit, `<testcase name="accounting identity"`) || !strings.Contains(junit, `type="AccountingBroken"`) ||
		!strings.Contains(junit, `failures="1"`) {
		t.Errorf("junit.xml:\n%s", junit)
	}
}
