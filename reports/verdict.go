package reports

import (
	"cmp"
	"fmt"
	"strings"
)

// ToleranceResult is one --fail-on tolerance checked against a baseline, as
// summary.json records it.
type ToleranceResult struct {
	Expr string `json:"expr"`
	// Base and Candidate are the figure in each run (the mean over seeds
	// for a multi-seed run), formatted in the metric's unit.
	Base      string `json:"base"`
	Candidate string `json:"candidate"`
	// Change is candidate − base, formatted, with the 95% confidence
	// interval of the difference when both runs have several seeds.
	Change string `json:"change"`
	// Test names the significance test used ("welch-t") and its p-value;
	// empty for single runs, where every difference counts.
	Test string `json:"test,omitempty"`
	Pass bool   `json:"pass"`
}

// Judge recomputes s.Pass and s.Failures from everything that can fail a
// run: the gates, the --fail-on tolerances against a baseline, the gates of
// the other seeds of a multi-seed run, and the accounting identity. Every
// writer reads the verdict from there, so the terminal, the reports,
// summary.json and junit.xml cannot disagree.
func Judge(s *Summary) {
	if s == nil {
		return
	}
	s.Failures = nil
	// Findings first: what went wrong outside the policy frames every
	// figure after it.
	for _, f := range unexpectedFindings(s) {
		s.Failures = append(s.Failures, "finding "+FindingText(f))
	}
	// A multi-seed run's failures each name their seed, this one's too.
	own := ""
	if s.Seeds != nil && len(s.Seeds.Runs) > 1 {
		own = fmt.Sprintf("seed %d: ", s.Seed)
	}
	for _, g := range s.Gates {
		if !g.Pass {
			s.Failures = append(s.Failures, fmt.Sprintf("%sgate %s failed: measured %s", own, g.Expr, g.Display))
		}
	}
	for _, t := range s.Tolerances {
		if !t.Pass {
			s.Failures = append(s.Failures, fmt.Sprintf("tolerance %s exceeded: base %s, candidate %s, change %s", t.Expr, t.Base, t.Candidate, t.Change))
		}
	}
	if s.Seeds != nil {
		for _, r := range s.Seeds.Runs {
			if r.Seed == s.Seed {
				continue // its gates are s.Gates, listed above
			}
			for _, g := range r.FailedGates {
				s.Failures = append(s.Failures, fmt.Sprintf("seed %d: gate %s failed", r.Seed, g))
			}
			if r.Lost != 0 {
				s.Failures = append(s.Failures, fmt.Sprintf("seed %d: accounting identity broken, lost %d", r.Seed, r.Lost))
			}
		}
	}
	if !AccountingHolds(s) {
		s.Failures = append(s.Failures, "accounting identity broken: "+AccountingText(s))
	}
	s.Pass = len(s.Failures) == 0
}

// ApplyComparison records c's tolerances in s and judges s again: a
// tolerance exceeded against the baseline fails the run like a gate.
func ApplyComparison(s *Summary, c *Comparison) {
	if s == nil {
		return
	}
	s.Tolerances = nil
	if c != nil {
		s.Baseline = c.Base
		s.Tolerances = append(s.Tolerances, c.Tolerances...)
	}
	Judge(s)
}

// AccountingHolds reports whether created = delivered + dead-lettered +
// pending, with nothing lost.
func AccountingHolds(s *Summary) bool {
	d := s.Deliveries
	return d.Lost == 0 && d.Created == d.Delivered+d.DeadLettered+d.Pending
}

// AccountingText writes the accounting identity with its figures.
func AccountingText(s *Summary) string {
	d := s.Deliveries
	t := fmt.Sprintf("created %s = delivered %s + dead-lettered %s + pending %s + lost %s",
		GroupDigits(d.Created), GroupDigits(d.Delivered), GroupDigits(d.DeadLettered), GroupDigits(d.Pending), GroupDigits(d.Lost))
	if d.Refused > 0 {
		t += fmt.Sprintf(" (and %s refused at the ingest)", GroupDigits(d.Refused))
	}
	return t
}

// maxNamedFailures bounds the items of each kind the verdict names.
const maxNamedFailures = 3

// VerdictText is the one-line verdict every writer shows: PASS with what
// held, or FAIL naming what failed (up to maxNamedFailures items).
func VerdictText(s *Summary) string {
	if s == nil {
		return "FAIL: no summary"
	}
	f := whatFailed(s)
	if s.Pass && f.none() {
		return passVerdict(s)
	}
	return failVerdict(s, f)
}

// failedParts is what a verdict names as failed.
type failedParts struct {
	gates, tolerances, findings []string
	// seedGates: the gates are a multi-seed run's, each item naming the
	// seeds it failed on.
	seedGates    bool
	seedFailures int // other seeds that failed on their own
	accounting   bool
}

func (f failedParts) none() bool {
	return len(f.gates) == 0 && len(f.tolerances) == 0 && f.seedFailures == 0 && !f.accounting && len(f.findings) == 0
}

func whatFailed(s *Summary) failedParts {
	var f failedParts
	f.seedGates = s.Seeds != nil && len(s.Seeds.Runs) > 1 && s.Seeds.Gates != nil
	if f.seedGates {
		// A multi-seed run names each gate with the seeds it failed on.
		for _, g := range s.Seeds.Gates {
			if g.Held < g.Seeds {
				f.gates = append(f.gates, fmt.Sprintf("%s failed on %d of %d seeds", g.Expr, g.Seeds-g.Held, g.Seeds))
			}
		}
	} else {
		for _, g := range s.Gates {
			if !g.Pass {
				f.gates = append(f.gates, g.Expr)
			}
		}
	}
	for _, t := range s.Tolerances {
		if !t.Pass {
			f.tolerances = append(f.tolerances, t.Expr)
		}
	}
	if s.Seeds != nil {
		for _, r := range s.Seeds.Runs {
			if r.Seed != s.Seed && ((len(r.FailedGates) > 0 && !f.seedGates) || r.Lost != 0) {
				f.seedFailures++
			}
		}
	}
	f.accounting = !AccountingHolds(s)
	for _, fd := range unexpectedFindings(s) {
		f.findings = append(f.findings, fd.Kind)
	}
	return f
}

// passVerdict says what held.
func passVerdict(s *Summary) string {
	var parts []string
	switch len(s.Gates) {
	case 0:
		parts = append(parts, "no gates")
	case 1:
		parts = append(parts, "the gate holds")
	default:
		parts = append(parts, fmt.Sprintf("all %d gates hold", len(s.Gates)))
	}
	if s.Seeds != nil && len(s.Seeds.Runs) > 1 {
		parts[0] += fmt.Sprintf(" on all %d seeds", len(s.Seeds.Runs))
	}
	switch n := len(s.Tolerances); {
	case n == 1:
		parts = append(parts, "the tolerance holds")
	case n > 1:
		parts = append(parts, fmt.Sprintf("all %d tolerances hold", n))
	}
	if n := len(s.Findings); n > 0 {
		parts = append(parts, fmt.Sprintf("%d expected finding(s)", n))
	}
	return "PASS: " + strings.Join(parts, "; ")
}

// failVerdict names what failed: findings, the accounting identity,
// tolerances, gates and other seeds, in that order.
func failVerdict(s *Summary, f failedParts) string {
	var parts []string
	name := func(kind string, items []string, total int, verb string) {
		switch {
		case len(items) == 0:
		case len(items) <= maxNamedFailures:
			parts = append(parts, strings.TrimSpace(kind+" "+strings.Join(items, ", ")+" "+verb))
		default:
			parts = append(parts, fmt.Sprintf("%d of %d %ss %s (%s, …)", len(items), total, kind, cmp.Or(verb, "failed"), strings.Join(items[:maxNamedFailures], ", ")))
		}
	}
	switch n := len(f.findings); {
	case n == 1:
		parts = append(parts, "finding "+f.findings[0])
	case n > 1:
		parts = append(parts, "findings "+strings.Join(f.findings[:min(n, maxNamedFailures)], ", "))
		if n > maxNamedFailures {
			parts[len(parts)-1] += ", …"
		}
	}
	if f.accounting {
		parts = append(parts, "accounting identity broken (lost "+GroupDigits(s.Deliveries.Lost)+")")
	}
	name("tolerance", f.tolerances, len(s.Tolerances), "exceeded")
	if f.seedGates {
		// Each item says itself where it failed: "gate A failed on 1 of 3 seeds".
		name("gate", f.gates, len(s.Seeds.Gates), "")
	} else {
		name("gate", f.gates, len(s.Gates), "failed")
	}
	if f.seedFailures > 0 {
		if f.seedGates {
			parts = append(parts, fmt.Sprintf("accounting identity broken on %d other seed(s)", f.seedFailures))
		} else {
			parts = append(parts, fmt.Sprintf("gates failed on %d other seed(s)", f.seedFailures))
		}
	}
	if len(parts) == 0 {
		parts = append(parts, "the run did not pass")
	}
	return "FAIL: " + strings.Join(parts, "; ")
}
