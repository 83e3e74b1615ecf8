package render

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stormdrill/stormdrill/reports"
)

// A finding fails the run unless the drill expects its kind; either way
// the verdict, the terminal's first lines and summary.json carry it, and a
// figure that could not be measured is null, "unknown", and fails its gate
// saying why.
func TestFindingsFailTheRunUnlessExpected(t *testing.T) {
	at := 1.5
	newSummary := func() *reports.Summary {
		s := &reports.Summary{Drill: "d", Mode: "external", Duplicates: new(int64(0)),
			External: &reports.External{Unidentified: 12}, Findings: []reports.Finding{}}
		gates, err := reports.ParseGates([]string{"amplification <= 3", "duplicates == 0", "lost == 0"})
		if err != nil {
			t.Fatal(err)
		}
		reports.EvalGates(s, gates)
		return s
	}
	s := newSummary()
	if s.Pass || s.Gates[0].Pass || s.Gates[0].Display != "unknown: 12 attempts could not be identified" || !s.Gates[1].Pass {
		t.Fatalf("gates %+v: want amplification (null) failed as unknown, duplicates (0) held", s.Gates)
	}
	reports.AddFindings(s, []reports.Finding{
		{Kind: reports.FindingUnknownKeys, Count: 12, Message: "12 attempts could not be identified"},
		{Kind: reports.FindingSystemExited, Count: 1, FirstAtS: &at, Message: "the system exited on its own (signal: killed)", Detail: []string{"panic: boom"}},
	}, nil)
	if got := reports.VerdictText(s); got != "FAIL: findings system-exited, unknown-keys; gate amplification <= 3 failed" {
		t.Errorf("verdict %q", got)
	}
	if len(s.Failures) != 3 || !strings.HasPrefix(s.Failures[0], "finding system-exited: the system exited on its own (signal: killed) (first at 1.5s)") {
		t.Errorf("failures %q: want the findings first, the crash first of them", s.Failures)
	}
	var b strings.Builder
	if err := WriteTerminalSummary(&b, &reports.Run{Summary: s}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(b.String(), "\n")
	if len(lines) < 4 || lines[1] != "  ! system-exited: the system exited on its own (signal: killed) (first at 1.5s)" ||
		lines[2] != "      panic: boom" || lines[3] != "  ! unknown-keys: 12 attempts could not be identified" {
		t.Errorf("terminal:\n%s\nwant the verdict, then each finding with its detail", b.String())
	}
	data, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"amplification":null`) || !strings.Contains(string(data), `"kind":"system-exited","count":1,"first_at_s":1.5`) {
		t.Errorf("summary.json %s: want amplification null and the findings", data)
	}

	// The same findings, expected by the drill: reported, not failing.
	s = newSummary()
	s.Amplification = new(1.2)
	reports.EvalGates(s, mustGates(t, "amplification <= 3"))
	reports.AddFindings(s, []reports.Finding{{Kind: reports.FindingIngestRefused, Count: 3, Message: "the ingest refused 3 of 10 events"}}, []string{reports.FindingIngestRefused})
	if !s.Pass || reports.VerdictText(s) != "PASS: the gate holds; 1 expected finding(s)" || !strings.HasSuffix(reports.FindingText(s.Findings[0]), "; expected by the drill") {
		t.Errorf("pass %v, verdict %q, finding %q: want a pass that names the expected finding", s.Pass, reports.VerdictText(s), reports.FindingText(s.Findings[0]))
	}
}

func mustGates(t *testing.T, exprs ...string) []reports.Gate {
	t.Helper()
	g, err := reports.ParseGates(exprs)
	if err != nil {
		t.Fatal(err)
	}
	return g
}
