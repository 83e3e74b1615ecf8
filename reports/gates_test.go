package reports

import (
	"strings"
	"testing"
)

func TestParseGate(t *testing.T) {
	tests := []struct {
		expr   string
		metric string
		op     string
		value  float64
	}{
		{"healthy.latency.p99 < 30m", "healthy.latency.p99", "<", 1800},              // minutes
		{"healthy.latency.p50<=250ms", "healthy.latency.p50", "<=", 0.25},            // no spaces, milliseconds
		{"drain_time > 1.5s", "drain_time", ">", 1.5},                                // fractional seconds
		{"  oldest_ready_age >= 2h ", "oldest_ready_age", ">=", 7200},                // hours, padding
		{"source_held_back_max != 1d", "source_held_back_max", "!=", 86400},          // days
		{"lateness.p99 < 1h30m", "lateness.p99", "<", 5400},                          // compound duration
		{"lost == 0", "lost", "==", 0},                                               // count
		{"amplification <= 3", "amplification", "<=", 3},                             // ratio
		{"amplification < 2.5", "amplification", "<", 2.5},                           // fractional ratio
		{"healthy_within_slo >= 99.9%", "healthy_within_slo", ">=", 0.999},           // percentage
		{"healthy_within_slo >= 0.95", "healthy_within_slo", ">=", 0.95},             // fraction as a number
		{"healthy_within_slo == 100 %", "healthy_within_slo", "==", 1},               // space before %
		{"dlq.max-attempts == 0", "dlq.max-attempts", "==", 0},                       // reason with a dash
		{"duplicates_beyond_in_flight == 0", "duplicates_beyond_in_flight", "==", 0}, // long name
	}
	for _, tt := range tests {
		g, err := ParseGate(tt.expr)
		if err != nil {
			t.Errorf("ParseGate(%q): %v", tt.expr, err)
			continue
		}
		if g.Metric != tt.metric || g.Op != tt.op || !near(g.Value, tt.value) {
			t.Errorf("ParseGate(%q) = %s %s %v, want %s %s %v", tt.expr, g.Metric, g.Op, g.Value, tt.metric, tt.op, tt.value)
		}
		if g.Expr != strings.TrimSpace(tt.expr) {
			t.Errorf("Expr = %q", g.Expr)
		}
	}
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }

func TestParseGateErrors(t *testing.T) {
	tests := []struct {
		expr string
		want []string // substrings of the error
	}{
		{"", []string{"empty gate"}},                    // nothing
		{"lost 0", []string{"no comparison"}},           // no operator
		{"lost = 0", []string{`use "==" for equality`}}, // single =
		{"lost === 0", []string{"bad operator"}},        // triple =
		{"lost <> 0", []string{"bad operator"}},         // SQL-style not-equal
		{"< 3", []string{"no metric"}},                  // metric missing
		{"lost ==", []string{"no value"}},               // value missing
		{"helthy.latency.p99 < 30m", []string{`unknown metric "helthy.latency.p99"`, `did you mean "healthy.latency.p99"`, "valid metrics:", "amplification"}}, // typo
		{"amplifcation <= 3", []string{`did you mean "amplification"`}},                                                                                        // typo
		{"drain_time < 30", []string{"is a duration; add a unit", `"30s"`}},                                                                                    // plain number on a duration
		{"drain_time < 30x", []string{"bad duration"}},                                                                                                         // bad unit
		{"drain_time < -5s", []string{"negative"}},                                                                                                             // negative duration
		{"healthy_within_slo >= 99.9", []string{"fraction in [0, 1]", `"99.9%"`}},                                                                              // percent without %
		{"healthy_within_slo >= 120%", []string{"outside"}},                                                                                                    // impossible percentage
		{"lost == 0s", []string{"plain number"}},                                                                                                               // unit on a count
		{"amplification <= NaN", []string{"plain number"}},                                                                                                     // not a number
		{"amplification <= 3%", []string{"plain number"}},                                                                                                      // percent on a ratio
		{"lost == " + strings.Repeat("9", 300), []string{"at most"}},                                                                                           // absurdly long
	}
	for _, tt := range tests {
		_, err := ParseGate(tt.expr)
		if err == nil {
			t.Errorf("ParseGate(%q): no error", tt.expr)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("ParseGate(%q) = %q, want it to contain %q", tt.expr, err, w)
			}
		}
	}
}

func TestParseGatesReportsEveryError(t *testing.T) {
	gates, err := ParseGates([]string{"lost == 0", "lots == 0", "drain_time < 5"})
	if len(gates) != 1 || err == nil {
		t.Fatalf("gates %v, err %v", gates, err)
	}
	if !strings.Contains(err.Error(), "lots") || !strings.Contains(err.Error(), "drain_time") {
		t.Errorf("err %q should name both bad gates", err)
	}
}

func TestGateEval(t *testing.T) {
	s := &Summary{
		Deliveries:       Deliveries{Created: 10, Delivered: 9, DeadLettered: 1},
		Amplification:    new(3.0),
		HealthyLatencyS:  Percentiles{Count: 5, P99: 12.34},
		HealthyWithinSLO: 0.9985,
		Outages:          []Outage{{Partner: "acme"}},
	}
	tests := []struct {
		expr    string
		pass    bool
		display string
	}{
		{"amplification <= 3", true, "3"},                                                  // equal passes <=
		{"amplification < 3", false, "3"},                                                  // equal fails <
		{"amplification >= 3", true, "3"},                                                  // equal passes >=
		{"amplification > 2.9", true, "3"},                                                 // greater
		{"amplification == 3", true, "3"},                                                  // equality
		{"amplification != 3", false, "3"},                                                 // inequality
		{"lost == 0", true, "0"},                                                           // count
		{"dead_lettered < 1", false, "1"},                                                  // count fails
		{"healthy.latency.p99 < 30s", true, "12.3s"},                                       // duration display
		{"healthy.latency.p99 < 10s", false, "12.3s"},                                      // duration fails
		{"healthy_within_slo >= 99.9%", false, "99.85%"},                                   // fraction display
		{"drain_time < 10m", false, "not drained"},                                         // outage never drained
		{"lateness.p99 < 1s", false, "not measured (sim)"},                                 // live-only figure in a sim run
		{"healthy.outage.latency.p99 < 1s", false, "no healthy deliveries during outages"}, // empty distribution
	}
	for _, tt := range tests {
		g, err := ParseGate(tt.expr)
		if err != nil {
			t.Fatal(err)
		}
		r := g.Eval(s)
		if r.Pass != tt.pass || r.Display != tt.display || r.Expr != tt.expr {
			t.Errorf("%s: got pass %v display %q, want %v %q", tt.expr, r.Pass, r.Display, tt.pass, tt.display)
		}
	}
}

func TestEvalGates(t *testing.T) {
	s := &Summary{Amplification: new(2.0)}
	pass, _ := ParseGate("amplification < 3")
	fail, _ := ParseGate("amplification < 1")
	EvalGates(s, []Gate{pass})
	if !s.Pass || len(s.Gates) != 1 {
		t.Errorf("one passing gate: pass %v, %d results", s.Pass, len(s.Gates))
	}
	EvalGates(s, []Gate{pass, fail})
	if s.Pass || len(s.Gates) != 2 {
		t.Errorf("a failing gate: pass %v, %d results", s.Pass, len(s.Gates))
	}
	EvalGates(s, nil)
	if !s.Pass || s.Gates == nil {
		t.Errorf("no gates: pass %v, gates %v", s.Pass, s.Gates)
	}
}

func TestFormatDuration(t *testing.T) {
	tests := []struct {
		s    float64
		want string
	}{
		{0, "0s"},           // zero
		{0.00042, "420µs"},  // microseconds
		{0.0042, "4.2ms"},   // small milliseconds keep a decimal
		{0.25, "250ms"},     // milliseconds
		{0.9996, "1s"},      // rounds up into seconds
		{12.34, "12.3s"},    // seconds with a decimal
		{12, "12s"},         // whole seconds
		{59.96, "1m"},       // rounds into minutes, not "60.0s"
		{245, "4m05s"},      // minutes
		{7385, "2h03m05s"},  // hours
		{93780, "1d02h03m"}, // days
		{-3, "-3s"},         // negative (a change)
	}
	for _, tt := range tests {
		if got := FormatDuration(tt.s); got != tt.want {
			t.Errorf("FormatDuration(%v) = %q, want %q", tt.s, got, tt.want)
		}
	}
}

func TestFormatValue(t *testing.T) {
	tests := []struct {
		kind Kind
		v    float64
		want string
	}{
		{Count, 12, "12"},          // whole
		{Fraction, 0.999, "99.9%"}, // percent
		{Fraction, 1, "100%"},      // full
		{Ratio, 1.23456, "1.235"},  // three decimals
		{Duration, 90, "1m30s"},    // duration
	}
	for _, tt := range tests {
		if got := FormatValue(tt.kind, tt.v); got != tt.want {
			t.Errorf("FormatValue(%v, %v) = %q, want %q", tt.kind, tt.v, got, tt.want)
		}
	}
}
