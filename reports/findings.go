package reports

import (
	"fmt"
	"strings"
)

// Finding is something the harness saw go wrong outside the policy under
// test: an ingest that refused events, attempts it could not identify, a
// system that exited. A finding fails the run (see Judge) unless the drill
// declared its kind expected (the drill key `expect`).
type Finding struct {
	Kind  string `json:"kind"`
	Count int64  `json:"count"`
	// FirstAtS is the drill time of the first occurrence, in seconds;
	// null when the harness cannot tell when it happened.
	FirstAtS *float64 `json:"first_at_s"`
	Message  string   `json:"message"`
	// Detail holds supporting lines: the last lines a crashed system
	// logged, a key the harness never issued.
	Detail   []string `json:"detail,omitempty"`
	Expected bool     `json:"expected"`
	// Advisory: the finding casts doubt on the run's figures but does not
	// fail it (a live run's late injection: see LateInjection).
	Advisory bool `json:"advisory,omitempty"`
}

// FindingKind is one kind of finding: its name, as `expect` and
// summary.json spell it, and what it means.
type FindingKind struct {
	Name, Means string
}

// Finding kinds, as the drill key `expect` names them.
const (
	FindingIngestRefused       = "ingest-refused"
	FindingUnidentified        = "unidentified-attempts"
	FindingUnknownKeys         = "unknown-keys"
	FindingUnknownDeadLetters  = "unknown-dead-letters"
	FindingSystemExited        = "system-exited"
	FindingLateInjection       = "late-injection"
	FindingDeadLetterListError = "dead-letter-command-failed"
	FindingReportsRefused      = "reports-refused"
)

// FindingKinds is the table of every kind of finding, in the order a
// report lists them when several occur.
var FindingKinds = []FindingKind{
	{FindingSystemExited, "the system under drill exited on its own (a restart the drill scripts is a fault, not a finding); the report covers what the partners saw until then"},
	{FindingIngestRefused, "the system's ingest refused events for good (an error answer, or 429/503 past the injector's retries); their deliveries are counted as refused, not created"},
	{FindingUnidentified, "attempts that carried no idempotency key: they cannot be tied to a delivery, so amplification and duplicates are unknown"},
	{FindingUnknownKeys, "attempts whose idempotency key the harness never issued (a system that changes the key on retries): amplification and duplicates of their cohorts are unknown"},
	{FindingUnknownDeadLetters, "dead letters for ids the harness never issued"},
	{FindingReportsRefused, "the partner server refused dead letters or alerts the system posted (a body it cannot read, a missing token): what they reported is missing from the run"},
	{FindingDeadLetterListError, "system.dead_letter_command failed or printed something other than dead letters: the dead letters it should have listed are missing"},
	{FindingLateInjection, "the injector sent events so late that latencies measured from the schedule mean little: in an external run, lateness p99 above both 100 ms and 10% of the healthy p50 (fails the run); in a live run, above 10% of the smallest latency the report gives (flagged, does not fail the run)"},
}

// FindingKindNames lists the kinds' names, for messages.
func FindingKindNames() []string {
	out := make([]string, len(FindingKinds))
	for i, k := range FindingKinds {
		out[i] = k.Name
	}
	return out
}

// IsFindingKind reports whether name is a kind in FindingKinds.
func IsFindingKind(name string) bool {
	for _, k := range FindingKinds {
		if k.Name == name {
			return true
		}
	}
	return false
}

// findingOrder is a kind's place in FindingKinds.
func findingOrder(kind string) int {
	for i, k := range FindingKinds {
		if k.Name == kind {
			return i
		}
	}
	return len(FindingKinds)
}

// AddFindings puts fs into s in the table's order, marks those whose kind
// expect names as expected, and judges s again.
func AddFindings(s *Summary, fs []Finding, expect []string) {
	for _, f := range fs {
		for _, e := range expect {
			if e == f.Kind {
				f.Expected = true
			}
		}
		s.Findings = append(s.Findings, f)
	}
	// A stable insertion sort: a handful of findings at most.
	for i := 1; i < len(s.Findings); i++ {
		for j := i; j > 0 && findingOrder(s.Findings[j].Kind) < findingOrder(s.Findings[j-1].Kind); j-- {
			s.Findings[j], s.Findings[j-1] = s.Findings[j-1], s.Findings[j]
		}
	}
	Judge(s)
}

// FindingText is one finding in words, as the console and the reports
// print it: "ingest-refused: the ingest refused 4 of 24 events (first at
// 1.2s)", with "; expected by the drill" when it is.
func FindingText(f Finding) string {
	var b strings.Builder
	b.WriteString(f.Kind + ": " + OneLine(f.Message))
	if f.FirstAtS != nil {
		fmt.Fprintf(&b, " (first at %s)", FormatDuration(*f.FirstAtS))
	}
	if f.Expected {
		b.WriteString("; expected by the drill")
	}
	if f.Advisory {
		b.WriteString("; flagged, it does not fail the run")
	}
	return b.String()
}

// unexpectedFindings counts the findings that fail the run.
func unexpectedFindings(s *Summary) []Finding {
	var out []Finding
	for _, f := range s.Findings {
		if !f.Expected && !f.Advisory {
			out = append(out, f)
		}
	}
	return out
}

// Unknown is how every writer shows a figure that could not be measured
// (null in summary.json).
const Unknown = "unknown"

// RatioText is a ratio such as amplification, or Unknown when nil.
func RatioText(v *float64) string {
	if v == nil {
		return Unknown
	}
	return FormatValue(Ratio, *v)
}

// unidentifiedAttempts is how many attempts of an external run could not
// be tied to a delivery: 0 in other modes.
func unidentifiedAttempts(s *Summary) int64 {
	if s.External == nil {
		return 0
	}
	return s.External.Unidentified
}

// CountText is a count such as duplicates, or Unknown when nil.
func CountText(v *int64) string {
	if v == nil {
		return Unknown
	}
	return GroupDigits(*v)
}
