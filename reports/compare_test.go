package reports_test

import (
	"math"
	"strings"
	"testing"

	"github.com/stormdrill/stormdrill/reports"
	"github.com/stormdrill/stormdrill/reports/internal/fixture"
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
		tol, err := reports.ParseTolerance(tt.expr)
		if err != nil {
			t.Errorf("ParseTolerance(%q): %v", tt.expr, err)
			continue
		}
		if tol.Metric != tt.metric || tol.Above != tt.above || math.Abs(tol.Amount-tt.amount) > 1e-9 || tol.Percent != tt.percent {
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
		_, err := reports.ParseTolerance(tt.expr)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseTolerance(%q) = %v, want an error containing %q", tt.expr, err, tt.want)
		}
	}
}

func TestCompareTolerances(t *testing.T) {
	base := &reports.Summary{Drill: "base", Amplification: new(2.0), HealthyLatencyS: reports.Percentiles{Count: 10, P99: 10}, HealthyWithinSLO: 0.99,
		Outages: []reports.Outage{{Partner: "acme"}}, DrainTimeS: new(60.0)}
	cand := &reports.Summary{Drill: "cand", Amplification: new(2.3), HealthyLatencyS: reports.Percentiles{Count: 10, P99: 10.9}, HealthyWithinSLO: 0.98,
		Outages: []reports.Outage{{Partner: "acme"}}}
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
		c := reports.Compare(base, cand, fixture.Tolerances(t, tt.tolerance))
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
