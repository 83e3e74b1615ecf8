package reports

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"
)

func TestParseTolerance(t *testing.T) {
	tests := []struct {
		expr    string
		metric  string
		above   bool
		amount  float64
		percent bool
	}{
		{"healthy.latency.p99=+10%", "healthy.latency.p99", true, 10, true},  // relative, may exceed
		{"amplification=+0.2", "amplification", true, 0.2, false},            // absolute ratio
		{"healthy_within_slo=-0.5%", "healthy_within_slo", false, 0.5, true}, // may fall below
		{"delivered=-100", "delivered", false, 100, false},                   // absolute count
		{"drain_time=+30s", "drain_time", true, 30, false},                   // absolute duration
		{" drain_time = + 2m ", "drain_time", true, 120, false},              // spaces
	}
	for _, tt := range tests {
		tol, err := ParseTolerance(tt.expr)
		if err != nil {
			t.Errorf("ParseTolerance(%q): %v", tt.expr, err)
			continue
		}
		if tol.Metric != tt.metric || tol.Above != tt.above || !near(tol.Amount, tt.amount) || tol.Percent != tt.percent {
			t.Errorf("ParseTolerance(%q) = %+v", tt.expr, tol)
		}
	}
}

func TestParseToleranceErrors(t *testing.T) {
	tests := []struct{ expr, want string }{
		{"amplification", "want METRIC=+X%"},                  // no amount
		{"amplification=0.2", "start the amount with +"},      // no sign
		{"amplifiction=+0.2", `did you mean "amplification"`}, // typo
		{"drain_time=+30", "add a unit"},                      // plain number on a duration
		{"amplification=+x%", "bad percentage"},               // not a number
		{"amplification=+-1", "negative"},                     // double sign
	}
	for _, tt := range tests {
		_, err := ParseTolerance(tt.expr)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseTolerance(%q) = %v, want an error containing %q", tt.expr, err, tt.want)
		}
	}
}

func TestCompareTolerances(t *testing.T) {
	base := &Summary{Drill: "base", Amplification: new(2.0), HealthyLatencyS: Percentiles{Count: 10, P99: 10}, HealthyWithinSLO: 0.99,
		Outages: []Outage{{Partner: "acme"}}, DrainTimeS: ptr(60)}
	cand := &Summary{Drill: "cand", Amplification: new(2.3), HealthyLatencyS: Percentiles{Count: 10, P99: 10.9}, HealthyWithinSLO: 0.98,
		Outages: []Outage{{Partner: "acme"}}}
	tests := []struct {
		tolerance string
		exceeded  bool
	}{
		{"healthy.latency.p99=+10%", false}, // +9% is within +10%
		{"healthy.latency.p99=+5%", true},   // +9% exceeds +5%
		{"amplification=+0.3", false},       // exactly at the limit
		{"amplification=+0.2", true},        // beyond
		{"amplification=-0.01", false},      // it rose; a floor does not apply
		{"healthy_within_slo=-2%", false},   // fell by 1.01% of the base
		{"healthy_within_slo=-1%", true},    // fell by more than 1%
		{"healthy_within_slo=-0.01", false}, // fell by 0.01 absolute: at the limit
		{"drain_time=+1h", true},            // base drained, the candidate did not
	}
	for _, tt := range tests {
		c := Compare(base, cand, mustTolerances(t, tt.tolerance))
		if c.Failed != tt.exceeded {
			t.Errorf("%s: failed = %v, want %v", tt.tolerance, c.Failed, tt.exceeded)
		}
		found := false
		for _, r := range c.Rows {
			if r.Tolerance == tt.tolerance {
				found = true
				if r.Exceeded != tt.exceeded {
					t.Errorf("%s: row exceeded = %v", tt.tolerance, r.Exceeded)
				}
			} else if r.Exceeded {
				t.Errorf("%s: row %s exceeded without a tolerance", tt.tolerance, r.Metric)
			}
		}
		if !found {
			t.Errorf("%s: no row carries the tolerance", tt.tolerance)
		}
	}
}

func TestCompareRows(t *testing.T) {
	base := fixtureSummary()
	cand := fixtureSummary()
	cand.Amplification = new(2 * *base.Amplification)
	cand.Deliveries.Lost = 3
	c := Compare(base, cand, nil)
	if c.Failed {
		t.Error("failed without tolerances")
	}
	rows := map[string]CompareRow{}
	for _, r := range c.Rows {
		rows[r.Metric] = r
	}
	amp := rows["amplification"]
	if !near(amp.Change, *base.Amplification) || !near(amp.Percent, 100) || amp.verdict() != "worse" {
		t.Errorf("amplification row %+v, verdict %s", amp, amp.verdict())
	}
	lost := rows["lost"]
	if !math.IsNaN(lost.Percent) || lost.Change != 3 {
		t.Errorf("lost row: %+v (percent of a zero base must be NaN)", lost)
	}
	if _, ok := rows["drain_time"]; ok {
		t.Error("drain_time applies to neither run but has a row")
	}
	if r := rows["created"]; r.verdict() != "same" {
		t.Errorf("unchanged figure verdict %q", r.verdict())
	}
	var buf bytes.Buffer
	if err := WriteComparisonMarkdown(&buf, c); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{"| metric | base | candidate | change | % change | verdict |", "| `amplification` | 1.042 | 2.084 | +1.042 | +100% | worse |", "| `lost` | 0 | 3 | +3 | — | worse |"} {
		if !strings.Contains(out, want) {
			t.Errorf("comparison lacks %q:\n%s", want, out)
		}
	}
	// Changed rows are shown, unchanged ones counted.
	shown, same := shownRows(c)
	if len(shown) != 2 || same != len(c.Rows)-2 {
		t.Errorf("%d rows shown, %d same, of %d", len(shown), same, len(c.Rows))
	}
	if strings.Count(out, "\n| `") != len(shown) || !strings.Contains(out, fmt.Sprintf("%d more figures are the same", same)) {
		t.Errorf("want one table row per changed figure and a count of the rest:\n%s", out)
	}
}
