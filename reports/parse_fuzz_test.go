package reports

import (
	"math"
	"strconv"
	"testing"
)

// exactText writes a parsed value back in a form the parsers read exactly
// enough: durations as days (a plain number of days is the one form with no
// range limit), fractions and the rest as plain numbers.
func exactText(kind Kind, v float64) string {
	if kind == Duration {
		return strconv.FormatFloat(v/86400, 'g', -1, 64) + "d"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

func closeTo(a, b float64) bool {
	return math.Abs(a-b) <= 1e-12*math.Max(1, math.Max(math.Abs(a), math.Abs(b)))
}

// FuzzParseGate: no panic; an error is a non-empty error; a parsed gate has
// a known metric, one of the operators and a finite value, displays as
// something, and re-parses from "METRIC OP VALUE" to the same gate.
func FuzzParseGate(f *testing.F) {
	for _, s := range []string{
		"healthy.latency.p99 < 30m", "lost == 0", "amplification <= 3",
		"healthy_within_slo >= 99.9%", "healthy_within_slo >= 0.999", "drain_time < 1.5d",
		"lost = 0", "lost <== 0", "lots == 0", "drain_time < 30", "amplification <= NaN",
		"healthy_within_slo >= 101%", "drain_time < -1s", "", "== 3", "duplicates != 1e308",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, expr string) {
		g, err := ParseGate(expr)
		if err != nil {
			if err.Error() == "" {
				t.Fatalf("ParseGate(%q): empty error", expr)
			}
			return
		}
		if _, ok := MetricKind(g.Metric); !ok {
			t.Fatalf("ParseGate(%q): unknown metric %q accepted", expr, g.Metric)
		}
		if math.IsNaN(g.Value) || math.IsInf(g.Value, 0) {
			t.Fatalf("ParseGate(%q): value %v", expr, g.Value)
		}
		if FormatValue(g.Kind, g.Value) == "" {
			t.Fatalf("ParseGate(%q): value %v displays as nothing", expr, g.Value)
		}
		text := g.Metric + " " + g.Op + " " + exactText(g.Kind, g.Value)
		again, err := ParseGate(text)
		if err != nil {
			t.Fatalf("ParseGate(%q) re-formatted as %q does not parse: %v", expr, text, err)
		}
		if again.Metric != g.Metric || again.Op != g.Op || again.Kind != g.Kind || !closeTo(again.Value, g.Value) {
			t.Fatalf("ParseGate(%q) = %+v; re-formatted %q parses as %+v", expr, g, text, again)
		}
	})
}

// FuzzParseTolerance: no panic; an error is a non-empty error; a parsed
// tolerance has a known metric and a finite amount that is not negative,
// and re-parses from "METRIC=±AMOUNT[%]" to the same rule.
func FuzzParseTolerance(f *testing.F) {
	for _, s := range []string{
		"healthy.latency.p99=+10%", "amplification=+0.2", "drain_time=+30s", "healthy_within_slo=-0.5%",
		"amplification=0.2", "drain_time=+30", "lots=+1", "amplification=+-1", "=+1", "amplification=+NaN%",
		"drain_time=+2d", "amplification=+1e308",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, expr string) {
		tol, err := ParseTolerance(expr)
		if err != nil {
			if err.Error() == "" {
				t.Fatalf("ParseTolerance(%q): empty error", expr)
			}
			return
		}
		kind, ok := MetricKind(tol.Metric)
		if !ok {
			t.Fatalf("ParseTolerance(%q): unknown metric %q accepted", expr, tol.Metric)
		}
		if !(tol.Amount >= 0) || math.IsInf(tol.Amount, 0) {
			t.Fatalf("ParseTolerance(%q): amount %v", expr, tol.Amount)
		}
		sign := "-"
		if tol.Above {
			sign = "+"
		}
		text := tol.Metric + "=" + sign
		if tol.Percent {
			text += strconv.FormatFloat(tol.Amount, 'g', -1, 64) + "%"
		} else {
			text += exactText(kind, tol.Amount)
		}
		again, err := ParseTolerance(text)
		if err != nil {
			t.Fatalf("ParseTolerance(%q) re-formatted as %q does not parse: %v", expr, text, err)
		}
		if again.Metric != tol.Metric || again.Above != tol.Above || again.Percent != tol.Percent || !closeTo(again.Amount, tol.Amount) {
			t.Fatalf("ParseTolerance(%q) = %+v; re-formatted %q parses as %+v", expr, tol, text, again)
		}
	})
}

// TestParseHugeDays: a number of days is finite, but in seconds it can
// overflow; the parsers refuse it rather than compare against +Inf.
func TestParseHugeDays(t *testing.T) {
	cases := []struct {
		expr      string
		tolerance bool // ParseTolerance, else ParseGate
		ok        bool
	}{
		{"drain_time < 2d", false, true},      // days are a unit
		{"drain_time < 1e305d", false, false}, // seconds overflow to +Inf
		{"drain_time=+1e305d", true, false},   // the same as a tolerance
		{"amplification=+1e308", true, true},  // large but finite
		{"duplicates < 1e308", false, true},   // likewise for a count
	}
	for _, c := range cases {
		var err error
		if c.tolerance {
			_, err = ParseTolerance(c.expr)
		} else {
			_, err = ParseGate(c.expr)
		}
		if (err == nil) != c.ok {
			t.Errorf("%q: err = %v, want ok %v", c.expr, err, c.ok)
		}
	}
}
