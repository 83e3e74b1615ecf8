package reports

import (
	"encoding/xml"
	"fmt"
	"io"
	"strconv"
)

// JUnit XML as CI systems read it: a <testsuites> root holding one
// <testsuite> named after the drill, one <testcase> per gate.
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Time       string          `xml:"time,attr"`
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
	Time      string        `xml:"time,attr"`
	Failure   *junitFailure `xml:"failure,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

// WriteJUnit writes s.Gates as JUnit XML: one test case per gate, named by
// its expression; a failed gate carries a <failure> whose message holds the
// measured value. Times are 0: a gate has no duration of its own, and a
// fixed value keeps the file byte-identical across runs.
func WriteJUnit(w io.Writer, s *Summary) error {
	if s == nil {
		return fmt.Errorf("junit.xml: no summary")
	}
	name := s.Drill
	if name == "" {
		name = "drill"
	}
	suite := junitSuite{
		Name: name,
		Time: "0",
		Properties: []junitProperty{
			{Name: "mode", Value: s.Mode},
			{Name: "seed", Value: strconv.FormatUint(s.Seed, 10)},
		},
		Cases: make([]junitCase, 0, len(s.Gates)),
	}
	for _, g := range s.Gates {
		c := junitCase{
			Name:      g.Expr,
			Classname: "stormdrill." + name,
			Time:      "0",
			SystemOut: "measured: " + g.Display,
		}
		if !g.Pass {
			c.Failure = &junitFailure{
				Message: fmt.Sprintf("gate %s failed: measured %s", g.Expr, g.Display),
				Type:    "GateFailed",
				Text:    fmt.Sprintf("gate: %s\nmeasured: %s\n", g.Expr, g.Display),
			}
			suite.Failures++
		}
		suite.Tests++
		suite.Cases = append(suite.Cases, c)
	}
	root := junitSuites{
		Name:     "stormdrill",
		Tests:    suite.Tests,
		Failures: suite.Failures,
		Time:     "0",
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
