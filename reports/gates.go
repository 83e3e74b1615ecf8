package reports

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Gate is one parsed gate expression such as "healthy.latency.p99 < 30m".
// Value is in the metric's base unit: seconds for durations, a fraction in
// [0, 1] for fractions.
type Gate struct {
	Expr   string
	Metric string
	Op     string // < <= > >= == !=
	Value  float64
	Kind   Kind
}

// maxGateLen bounds a gate expression; anything longer is a mistake.
const maxGateLen = 256

// gateOps lists the operators, two-character ones first so that "<=" is not
// read as "<" followed by "=".
var gateOps = []string{"<=", ">=", "==", "!=", "<", ">"}

// ParseGate parses "METRIC OP VALUE". Durations need a unit ("30m", "250ms",
// "1.5s", "2h", "1d"); fractions accept a percentage ("99.9%") or a number
// in [0, 1]; counts and ratios take plain numbers.
func ParseGate(expr string) (Gate, error) {
	g := Gate{Expr: strings.TrimSpace(expr)}
	if len(g.Expr) > maxGateLen {
		return Gate{}, fmt.Errorf("gate is %d characters long; at most %d", len(g.Expr), maxGateLen)
	}
	if g.Expr == "" {
		return Gate{}, errors.New(`empty gate; write it like "lost == 0"`)
	}
	i := strings.IndexAny(g.Expr, "<>=!")
	if i < 0 {
		return Gate{}, fmt.Errorf("gate %q has no comparison; write it like \"METRIC <= VALUE\" with one of < <= > >= == !=", g.Expr)
	}
	g.Metric = strings.TrimSpace(g.Expr[:i])
	rest := g.Expr[i:]
	for _, op := range gateOps {
		if strings.HasPrefix(rest, op) {
			g.Op = op
			break
		}
	}
	after := rest[len(g.Op):]
	if g.Op == "" || (after != "" && strings.ContainsRune("<>=!", rune(after[0]))) {
		hint := ""
		if strings.HasPrefix(rest, "=") {
			hint = `; use "==" for equality`
		}
		return Gate{}, fmt.Errorf("gate %q: bad operator; use one of < <= > >= == !=%s", g.Expr, hint)
	}
	if g.Metric == "" {
		return Gate{}, fmt.Errorf("gate %q has no metric before %q", g.Expr, g.Op)
	}
	kind, ok := MetricKind(g.Metric)
	if !ok {
		return Gate{}, fmt.Errorf("gate %q: %w", g.Expr, unknownMetricError(g.Metric))
	}
	g.Kind = kind
	raw := strings.TrimSpace(after)
	if raw == "" {
		return Gate{}, fmt.Errorf("gate %q has no value after %q", g.Expr, g.Op)
	}
	v, err := parseMetricValue(g.Metric, kind, raw)
	if err != nil {
		return Gate{}, fmt.Errorf("gate %q: %w", g.Expr, err)
	}
	g.Value = v
	return g, nil
}

// ParseGates parses each expression and reports every bad one, so a drill
// with two typos is fixed in one round.
func ParseGates(exprs []string) ([]Gate, error) {
	gates := make([]Gate, 0, len(exprs))
	var errs []error
	for _, e := range exprs {
		g, err := ParseGate(e)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		gates = append(gates, g)
	}
	return gates, errors.Join(errs...)
}

// parseMetricValue reads a threshold in the metric's unit and returns it in
// the base unit (seconds, fraction).
func parseMetricValue(metric string, kind Kind, raw string) (float64, error) {
	switch kind {
	case Duration:
		if _, err := strconv.ParseFloat(raw, 64); err == nil {
			return 0, fmt.Errorf("%s is a duration; add a unit, like %q or %q", metric, raw+"s", raw+"m")
		}
		return parseDurationS(raw)
	case Fraction:
		if p, found := strings.CutSuffix(raw, "%"); found {
			v, err := parseFinite(strings.TrimSpace(p))
			if err != nil {
				return 0, fmt.Errorf("bad percentage %q", raw)
			}
			if v < 0 || v > 100 {
				return 0, fmt.Errorf("percentage %q is outside 0%%..100%%", raw)
			}
			return v / 100, nil
		}
		v, err := parseFinite(raw)
		if err != nil {
			return 0, fmt.Errorf("%s is a fraction; write a percentage like \"99.9%%\" or a number in [0, 1], not %q", metric, raw)
		}
		if v < 0 || v > 1 {
			return 0, fmt.Errorf("%s is a fraction in [0, 1]; for a percentage write %q", metric, raw+"%")
		}
		return v, nil
	default:
		v, err := parseFinite(raw)
		if err != nil {
			return 0, fmt.Errorf("%s is a %s; want a plain number, not %q", metric, kind, raw)
		}
		return v, nil
	}
}

func parseFinite(s string) (float64, error) {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("bad number %q", s)
	}
	return v, nil
}

// parseDurationS parses a non-negative duration with a unit into seconds.
// Besides Go's units it accepts a plain number of days ("1d", "1.5d").
func parseDurationS(s string) (float64, error) {
	if strings.HasPrefix(s, "-") {
		return 0, fmt.Errorf("duration %q is negative", s)
	}
	if d, found := strings.CutSuffix(s, "d"); found {
		v, err := parseFinite(d)
		if err != nil || v < 0 || math.IsInf(v*86400, 0) { // in seconds it must stay finite
			return 0, fmt.Errorf("bad duration %q: want a number with a unit (ms, s, m, h, d)", s)
		}
		return v * 86400, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("bad duration %q: want a number with a unit (ms, s, m, h, d)", s)
	}
	return d.Seconds(), nil
}

// Eval measures the gate's metric on s. A metric that does not apply (an
// outage that never drained) fails the gate, and Display says why.
func (g Gate) Eval(s *Summary) GateResult {
	r := GateResult{Expr: g.Expr}
	v, ok, err := s.Metric(g.Metric)
	switch {
	case err != nil:
		r.Display = "unknown metric"
		return r
	case !ok:
		r.Display = NotApplicable(s, g.Metric)
		return r
	}
	r.Value = v
	r.Display = FormatValue(g.Kind, v)
	r.Pass = compareOp(v, g.Op, g.Value)
	return r
}

// compareOp applies op. Equality allows a relative error of 1e-9 because
// durations and fractions went through floating-point arithmetic.
func compareOp(v float64, op string, limit float64) bool {
	eq := math.Abs(v-limit) <= 1e-9*math.Max(1, math.Max(math.Abs(v), math.Abs(limit)))
	switch op {
	case "<":
		return v < limit && !eq
	case "<=":
		return v <= limit || eq
	case ">":
		return v > limit && !eq
	case ">=":
		return v >= limit || eq
	case "==":
		return eq
	case "!=":
		return !eq
	}
	return false
}

// EvalGates evaluates every gate on s, stores the results in s.Gates and
// judges s (see Judge): s.Pass is true when all gates hold (and when there
// are none) and nothing else failed.
func EvalGates(s *Summary, gates []Gate) {
	s.Gates = make([]GateResult, 0, len(gates))
	for _, g := range gates {
		s.Gates = append(s.Gates, g.Eval(s))
	}
	Judge(s)
}

// FormatProbability writes a probability or p-value with three significant
// digits ("0.0123", "0.5"); below 10⁻⁶ it is "< 0.000001", since more
// digits there are noise.
func FormatProbability(p float64) string {
	switch {
	case math.IsNaN(p) || math.IsInf(p, 0):
		return "n/a"
	case p == 0 || (p > 0 && p < 1e-6):
		return "< 0.000001"
	}
	decimals := min(6, max(0, 2-int(math.Floor(math.Log10(math.Abs(p))))))
	return TrimFloat(p, decimals)
}

// FormatValue writes v in the unit of its kind: durations like "12.3s" or
// "4m05s", fractions as a percentage, counts as whole numbers with
// thousands separators ("12,345").
func FormatValue(kind Kind, v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "n/a"
	}
	switch kind {
	case Duration:
		return FormatDuration(v)
	case Fraction:
		return TrimFloat(v*100, 3) + "%"
	case Count:
		if v == math.Trunc(v) && math.Abs(v) < 1e15 {
			return GroupDigits(int64(v))
		}
		// A mean over seeds: one decimal, thousands still grouped.
		if math.Abs(v) < 1e15 {
			whole := TrimFloat(math.Abs(v), 1)
			intPart, frac, _ := strings.Cut(whole, ".")
			n, _ := strconv.ParseInt(intPart, 10, 64)
			out := GroupDigits(n)
			if frac != "" {
				out += "." + frac
			}
			if v < 0 && whole != "0" {
				out = "-" + out
			}
			return out
		}
		return TrimFloat(v, 2)
	default:
		return TrimFloat(v, 3)
	}
}

// FormatDuration writes seconds for a human: "0s", "850µs", "250ms",
// "12.3s", "4m05s", "30m", "2h03m05s", "2h", "1d02h03m". Days and longer
// are shown to the minute.
func FormatDuration(seconds float64) string {
	if math.IsNaN(seconds) || math.IsInf(seconds, 0) {
		return "n/a"
	}
	sign := ""
	if seconds < 0 {
		sign, seconds = "-", -seconds
	}
	switch {
	case seconds == 0:
		return "0s"
	case seconds < 0.001:
		return sign + TrimFloat(seconds*1e6, 0) + "µs"
	case seconds < 0.9995:
		ms := seconds * 1000
		if ms < 10 {
			return sign + TrimFloat(ms, 1) + "ms"
		}
		return sign + TrimFloat(ms, 0) + "ms"
	}
	// Round first so that 59.96s becomes "1m00s", not "60.0s".
	if tenths := math.Round(seconds * 10); tenths < 600 {
		return sign + TrimFloat(tenths/10, 1) + "s"
	}
	total := int64(math.Round(seconds))
	d, h, m, sec := total/86400, total%86400/3600, total%3600/60, total%60
	// Trailing zero parts are dropped ("30m", "2h", "1d02h"), inner ones
	// kept ("2h00m05s") so that the value reads unambiguously.
	switch {
	case d > 0 && m == 0 && h == 0:
		return fmt.Sprintf("%s%dd", sign, d)
	case d > 0 && m == 0:
		return fmt.Sprintf("%s%dd%02dh", sign, d, h)
	case d > 0:
		return fmt.Sprintf("%s%dd%02dh%02dm", sign, d, h, m)
	case h > 0 && m == 0 && sec == 0:
		return fmt.Sprintf("%s%dh", sign, h)
	case h > 0 && sec == 0:
		return fmt.Sprintf("%s%dh%02dm", sign, h, m)
	case h > 0:
		return fmt.Sprintf("%s%dh%02dm%02ds", sign, h, m, sec)
	case sec == 0:
		return fmt.Sprintf("%s%dm", sign, m)
	default:
		return fmt.Sprintf("%s%dm%02ds", sign, m, sec)
	}
}

// TrimFloat formats v with at most prec decimals and no trailing zeros.
func TrimFloat(v float64, prec int) string {
	s := strconv.FormatFloat(v, 'f', prec, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	if s == "-0" {
		s = "0"
	}
	return s
}
