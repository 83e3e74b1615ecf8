package render

import (
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/stormdrill/stormdrill/reports"
)

// JUnit XML as CI systems read it: a <testsuites> root holding one
// <testsuite> named after the drill, one <testcase> per gate.
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Time     string       `xml:"time,attr,omitempty"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Time       string          `xml:"time,attr,omitempty"`
	Properties []junitProperty `xml:"properties>property,omitempty"`
	Cases      []junitCase     `xml:"testcase"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr,omitempty"`
	Failure   *junitFailure `xml:"failure,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

// WriteJUnit writes the verdict as JUnit XML from the report's view: one
// test case per finding, named "finding KIND" and failed unless the drill
// expects it; one per gate,
// named by its expression (over every seed of a multi-seed run, as the
// reports show it); one per --fail-on tolerance, named "tolerance
// EXPR"; one per other seed of a multi-seed run that failed; and one for
// the accounting identity. A failed case carries a <failure> whose message
// holds the measured value. Times are the span each case judged (see
// junitSeconds).
func WriteJUnit(w io.Writer, s *reports.Summary) error {
	if s == nil {
		return fmt.Errorf("junit.xml: no summary")
	}
	name := s.Drill
	if name == "" {
		name = "drill"
	}
	span, seedSpan := junitSeconds(s)
	suite := junitSuite{
		Name: name,
		Time: span,
		Properties: []junitProperty{
			{Name: "mode", Value: s.Mode},
			{Name: "seed", Value: strconv.FormatUint(s.Seed, 10)},
		},
	}
	// The cases are the report's view: its findings, gates (over every
	// seed of a multi-seed run) and tolerances, so that what a CI system
	// says of a run is what report.md says.
	v := buildView(&reports.Run{Summary: s}, nil)
	add := func(c junitCase) {
		if c.Failure != nil {
			suite.Failures++
		}
		suite.Tests++
		suite.Cases = append(suite.Cases, c)
	}
	for _, f := range v.Findings {
		add(junitFindingCase(f, "stormdrill."+name+".findings", span))
	}
	for _, g := range v.Gates {
		add(junitGateCase(g, v.SeedGates, "stormdrill."+name, span))
	}
	for _, t := range v.Tolerances {
		measured := fmt.Sprintf("base %s, candidate %s, change %s", t.Base, t.Candidate, t.Change)
		if t.Test != "" {
			measured += ", " + t.Test
		}
		c := junitCase{Name: "tolerance " + t.Expr, Classname: "stormdrill." + name + ".tolerances", Time: span, SystemOut: measured}
		if !t.Pass {
			c.Failure = &junitFailure{
				Message: fmt.Sprintf("tolerance %s exceeded: %s", t.Expr, measured),
				Type:    "ToleranceExceeded",
				Text:    fmt.Sprintf("tolerance: %s\nbaseline: %s\n%s\n", t.Expr, s.Baseline, measured),
			}
		}
		add(c)
	}
	if s.Seeds != nil {
		for _, r := range s.Seeds.Runs {
			if r.Seed == s.Seed || (len(r.FailedGates) == 0 && r.Lost == 0) {
				continue
			}
			what := fmt.Sprintf("gates failed: %s", strings.Join(r.FailedGates, ", "))
			if r.Lost != 0 {
				what += fmt.Sprintf("; lost %d", r.Lost)
			}
			add(junitCase{Name: fmt.Sprintf("seed %d", r.Seed), Classname: "stormdrill." + name + ".seeds", Time: seedSpan,
				Failure: &junitFailure{Message: fmt.Sprintf("seed %d: %s", r.Seed, what), Type: "SeedFailed", Text: what + "\n"}})
		}
	}
	acc := junitCase{Name: "accounting identity", Classname: "stormdrill." + name, Time: span, SystemOut: reports.AccountingText(s)}
	if !reports.AccountingHolds(s) {
		acc.Failure = &junitFailure{Message: "accounting identity broken: " + reports.AccountingText(s), Type: "AccountingBroken", Text: reports.AccountingText(s) + "\n"}
	}
	add(acc)
	root := junitSuites{
		Name:     "stormdrill",
		Tests:    suite.Tests,
		Failures: suite.Failures,
		Time:     span,
		Suites:   []junitSuite{suite},
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(root); err != nil {
		return fmt.Errorf("junit.xml: %w", err)
	}
	if err := enc.Close(); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// junitGateCase is one gate of the report's view as a test case, failed
// when the gate failed; seeds says the gate is judged over every seed of a
// multi-seed run.
func junitGateCase(g gateRow, seeds bool, class, span string) junitCase {
	measured, failed := g.Measured, "failed"
	if seeds {
		measured = fmt.Sprintf("held on %s; min %s, mean %s, max %s", g.HeldOn, g.Min, g.Mean, g.Max)
		failed = "failed on some seeds"
	}
	c := junitCase{Name: g.Expr, Classname: class, Time: span, SystemOut: "measured: " + measured}
	if !g.Pass {
		c.Failure = &junitFailure{
			Message: fmt.Sprintf("gate %s %s: measured %s", g.Expr, failed, measured),
			Type:    "GateFailed",
			Text:    fmt.Sprintf("gate: %s\nmeasured: %s\n", g.Expr, measured),
		}
	}
	return c
}

// junitFindingCase is one finding of the report's view as a test case,
// named by its kind so that CI history follows it from run to run; it
// fails unless the drill expects that kind, as the run's verdict does.
func junitFindingCase(f findingRow, class, span string) junitCase {
	text := f.Text
	for _, d := range f.Detail {
		text += "\n" + d
	}
	c := junitCase{Name: "finding " + f.Kind, Classname: class, Time: span, SystemOut: text}
	if !f.Expected {
		c.Failure = &junitFailure{Message: "finding " + f.Text, Type: "Finding", Text: text + "\n"}
	}
	return c
}

// junitSeconds is the time, in seconds, that the run's test cases span,
// over every seed and over one seed; empty (the attribute left out) when
// the summary does not say. Every gate, tolerance and the accounting
// identity is judged over the whole drill, so each case carries the
// drill's span, as does the suite (the cases are not run one after the
// other). In simulation the span is drill time (the duration and drain as
// run): it is what the gates measured, and being a function of the drill
// and seed it keeps junit.xml byte-identical for a seed, where the
// simulator's own wall time (milliseconds) says nothing of the pipeline.
// Live and external runs give the wall time the drill took (drill time ÷
// speed): the time CI waited on it. A multi-seed run spans every seed's
// drill.
func junitSeconds(s *reports.Summary) (all, one string) {
	t := s.DrillTimeS
	if s.Mode != "sim" && s.Speed > 0 {
		t /= s.Speed
	}
	if !(t > 0) || math.IsInf(t, 0) {
		return "", ""
	}
	seeds := 1
	if s.Seeds != nil && len(s.Seeds.Runs) > 1 {
		seeds = len(s.Seeds.Runs)
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }
	return f(t * float64(seeds)), f(t)
}
