package render

import (
	"bytes"
	"encoding/csv"
	"encoding/xml"
	"math"
	"strings"
	"testing"

	"github.com/stormdrill/stormdrill/reports"
	"github.com/stormdrill/stormdrill/reports/internal/fixture"
)

// render runs a writer into a buffer, failing the test on error.
func render(t *testing.T, write func(*bytes.Buffer) error) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := write(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestGoldenFiles(t *testing.T) {
	run := fixture.Run(t)
	writers := []struct {
		golden string
		write  func(*bytes.Buffer) error
	}{
		{"report.md.golden", func(b *bytes.Buffer) error { return WriteMarkdown(b, run, fixturePlots) }},
		{"junit.xml.golden", func(b *bytes.Buffer) error { return WriteJUnit(b, run.Summary) }},
		{"timeseries.csv.golden", func(b *bytes.Buffer) error { return WriteTimeseriesCSV(b, run.Timeseries) }},
		{"summary.json.golden", func(b *bytes.Buffer) error { return reports.WriteSummaryJSON(b, run.Summary) }},
		{"terminal.txt.golden", func(b *bytes.Buffer) error { return WriteTerminalSummary(b, run) }},
	}
	for _, w := range writers {
		t.Run(w.golden, func(t *testing.T) {
			first := render(t, w.write)
			// Same run, second time: byte-identical (map order must not leak).
			for range 5 {
				if again := render(t, w.write); !bytes.Equal(first, again) {
					t.Fatalf("two renderings of the same run differ")
				}
			}
			checkGolden(t, w.golden, first)
		})
	}
}

func TestFixtureGateVerdicts(t *testing.T) {
	s := fixture.Run(t).Summary
	// The fixture is built so that these fail, and only these.
	want := map[string]string{
		"amplification <= 1.04": "1.042",
		"drain_time < 10m":      "not drained",
	}
	if s.Pass {
		t.Errorf("Pass = true with failing gates")
	}
	for _, g := range s.Gates {
		display, shouldFail := want[g.Expr]
		if g.Pass == shouldFail {
			t.Errorf("%s: pass = %v", g.Expr, g.Pass)
		}
		if shouldFail && g.Display != display {
			t.Errorf("%s: display %q, want %q", g.Expr, g.Display, display)
		}
	}
}

func TestJUnitOneFailurePerFailedGate(t *testing.T) {
	s := fixture.Run(t).Summary
	out := render(t, func(b *bytes.Buffer) error { return WriteJUnit(b, s) })
	var doc struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Suites   []struct {
			Name     string `xml:"name,attr"`
			Tests    int    `xml:"tests,attr"`
			Failures int    `xml:"failures,attr"`
			Cases    []struct {
				Name     string `xml:"name,attr"`
				Failures []struct {
					Message string `xml:"message,attr"`
				} `xml:"failure"`
				SystemOut string `xml:"system-out"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(out, &doc); err != nil {
		t.Fatalf("junit.xml does not parse: %v", err)
	}
	if len(doc.Suites) != 1 || doc.Suites[0].Name != s.Drill {
		t.Fatalf("want one testsuite named %q, got %+v", s.Drill, doc.Suites)
	}
	suite := doc.Suites[0]
	failed := 0
	for i, g := range s.Gates {
		c := suite.Cases[i]
		if c.Name != g.Expr {
			t.Errorf("case %d is %q, want %q", i, c.Name, g.Expr)
		}
		wantFailures := 0
		if !g.Pass {
			wantFailures = 1
			failed++
			if !strings.Contains(c.Failures[0].Message, g.Display) {
				t.Errorf("%s: failure message %q lacks the measured value %q", g.Expr, c.Failures[0].Message, g.Display)
			}
		}
		if len(c.Failures) != wantFailures {
			t.Errorf("%s: %d <failure> elements, want %d", g.Expr, len(c.Failures), wantFailures)
		}
		if !strings.Contains(c.SystemOut, g.Display) {
			t.Errorf("%s: system-out %q lacks the measured value", g.Expr, c.SystemOut)
		}
	}
	if failed == 0 {
		t.Fatal("fixture has no failed gate; the test proves nothing")
	}
	// Then one case per tolerance, then the accounting identity.
	for i, tol := range s.Tolerances {
		c := suite.Cases[len(s.Gates)+i]
		if c.Name != "tolerance "+tol.Expr {
			t.Errorf("case %d is %q, want the tolerance %q", len(s.Gates)+i, c.Name, tol.Expr)
		}
		if !tol.Pass {
			failed++
			if len(c.Failures) != 1 || !strings.Contains(c.Failures[0].Message, tol.Expr) {
				t.Errorf("tolerance %s: failures %+v, want one naming it", tol.Expr, c.Failures)
			}
		} else if len(c.Failures) != 0 {
			t.Errorf("tolerance %s holds but has a failure", tol.Expr)
		}
	}
	want := len(s.Gates) + len(s.Tolerances) + 1
	if last := suite.Cases[len(suite.Cases)-1]; last.Name != "accounting identity" || len(last.Failures) != 0 {
		t.Errorf("last case %q (failures %d), want a passing accounting identity", last.Name, len(last.Failures))
	}
	if len(suite.Cases) != want || suite.Tests != want || doc.Tests != want {
		t.Errorf("tests: cases %d, suite %d, root %d; want %d", len(suite.Cases), suite.Tests, doc.Tests, want)
	}
	if suite.Failures != failed || doc.Failures != failed {
		t.Errorf("failures: suite %d, root %d; want %d", suite.Failures, doc.Failures, failed)
	}
}

func TestJUnitEscapesExpressions(t *testing.T) {
	s := &reports.Summary{Drill: `a"<b>&`, Gates: []reports.GateResult{{Expr: `x < 1 && y > "2"`, Display: "<3>", Pass: false}}}
	out := render(t, func(b *bytes.Buffer) error { return WriteJUnit(b, s) })
	var doc struct {
		Suites []struct {
			Name  string `xml:"name,attr"`
			Cases []struct {
				Name string `xml:"name,attr"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(out, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Suites[0].Name != s.Drill || doc.Suites[0].Cases[0].Name != s.Gates[0].Expr {
		t.Errorf("names did not survive escaping: %+v", doc)
	}
}

func TestCSVShape(t *testing.T) {
	run := fixture.Run(t)
	out := render(t, func(b *bytes.Buffer) error { return WriteTimeseriesCSV(b, run.Timeseries) })
	rows, err := csv.NewReader(bytes.NewReader(out)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1+len(run.Timeseries.Samples) {
		t.Fatalf("%d rows, want header + %d", len(rows), len(run.Timeseries.Samples))
	}
	header := rows[0]
	if header[0] != "t_s" || header[len(header)-1] != "breaker_globex" {
		t.Errorf("header %v", header)
	}
	col := map[string]int{}
	for i, h := range header {
		col[h] = i
	}
	// 3 window-expired dead letters in a 10 s interval are 0.3/s.
	if got := rows[2][col["dlq_window_expired_per_s"]]; got != "0.3" {
		t.Errorf("dlq_window_expired_per_s = %q, want 0.3", got)
	}
	if got := rows[2][col["breaker_acme"]]; got != "2" {
		t.Errorf("breaker_acme = %q, want 2", got)
	}
	if got := rows[3][col["breaker_acme"]]; got != "" {
		t.Errorf("missing breaker cell = %q, want empty", got)
	}
}

func TestMarkdownBounds(t *testing.T) {
	run := fixture.Run(t)
	out := string(render(t, func(b *bytes.Buffer) error { return WriteMarkdown(b, run, fixturePlots) }))
	// 55 transitions: 50 rows and a count of the other 5.
	if n := strings.Count(out, "| acme | "); n < 50 {
		t.Errorf("%d acme rows", n)
	}
	if !strings.Contains(out, "… and 5 more rows of transitions not shown.") {
		t.Error("breaker table is not bounded with a count")
	}
	for _, want := range []string{
		"**FAIL: tolerance healthy.latency.p99=+10%, drain\\_time=+1m exceeded; gate amplification \\<= 1.04, drain\\_time \\< 10m failed**",
		"](#retry-amplification)",
		"## Definitions",
		"![Healthy latency CDF](healthy%20latency.png)",
		"## Compared with the baseline",
		"## Live run",
		`two are down \| for a while`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
}

func TestWritersHandleEmptyRun(t *testing.T) {
	// A run with nothing in it must still produce valid, non-panicking output.
	for _, r := range []*reports.Run{nil, {}, {Summary: &reports.Summary{}}} {
		render(t, func(b *bytes.Buffer) error { return WriteMarkdown(b, r, nil) })
		render(t, func(b *bytes.Buffer) error { return WriteHTML(b, r, nil, nil) })
		render(t, func(b *bytes.Buffer) error { return WriteTerminalSummary(b, r) })
	}
	if err := WriteJUnit(&bytes.Buffer{}, nil); err == nil {
		t.Error("WriteJUnit(nil): no error")
	}
	if err := WriteTimeseriesCSV(&bytes.Buffer{}, nil); err == nil {
		t.Error("WriteTimeseriesCSV(nil): no error")
	}
}

// TestCSVCohortColumns: per-cohort amplification, oldest age, first
// attempts and retries per second follow the other columns, and an
// interval without first attempts is an empty cell, as is a figure the
// sample does not carry.
func TestCSVCohortColumns(t *testing.T) {
	ts := &reports.Timeseries{IntervalS: 1, Cohorts: []string{"healthy", "acme-eu"}, Samples: []reports.Sample{
		{T: 1, HealthyLatencyP50S: 0.08, HealthyLatencyP99S: 0.6, CohortAmplification: []float64{1.01, math.NaN()}, CohortOldestAgeS: []float64{0.5, 61},
			CohortFirstAttemptsPerS: []float64{40, 0}, CohortRetriesPerS: []float64{0.5}},
	}}
	out := render(t, func(b *bytes.Buffer) error { return WriteTimeseriesCSV(b, ts) })
	rows, err := csv.NewReader(bytes.NewReader(out)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for i, h := range rows[0] {
		got[h] = rows[1][i]
	}
	want := map[string]string{
		"healthy_latency_p50_s": "0.08", "healthy_latency_p99_s": "0.6",
		"amplification_healthy": "1.01", "amplification_acme_eu": "",
		"oldest_age_s_healthy": "0.5", "oldest_age_s_acme_eu": "61",
		"first_attempts_per_s_healthy": "40", "first_attempts_per_s_acme_eu": "0",
		"retries_per_s_healthy": "0.5", "retries_per_s_acme_eu": "",
	}
	if h := rows[0]; h[len(h)-1] != "retries_per_s_acme_eu" {
		t.Errorf("header %q: want the cohorts' columns last", h)
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("column %s = %q (present %v), want %q", k, g, ok, v)
		}
	}
}

// TestWallClockSectionNamedAfterTheMode: the section with the arrival
// lateness and the restarts is the live run's in a live run and the
// external run's in an external one (it was headed "Live run", and its
// restarts "Dispatcher restarts", for an external run too).
func TestWallClockSectionNamedAfterTheMode(t *testing.T) {
	for _, c := range []struct {
		mode, run, restarts string
	}{
		{"live", "Live run", "Dispatcher restarts"},     // the harness restarts its own dispatcher
		{"external", "External run", "System restarts"}, // the system under drill restarts
	} {
		run := fixture.Run(t)
		run.Summary.Mode = c.mode
		md := string(render(t, func(b *bytes.Buffer) error { return WriteMarkdown(b, run, fixturePlots) }))
		page := string(render(t, func(b *bytes.Buffer) error { return WriteHTML(b, run, nil, nil) }))
		for _, want := range []string{"## " + c.run + "\n", "### " + c.restarts + "\n"} {
			if !strings.Contains(md, want) {
				t.Errorf("%s: report.md lacks %q", c.mode, want)
			}
		}
		for _, want := range []string{"<h2>" + c.run + "</h2>", "<h3>" + c.restarts + "</h3>"} {
			if !strings.Contains(page, want) {
				t.Errorf("%s: report.html lacks %q", c.mode, want)
			}
		}
	}
}
