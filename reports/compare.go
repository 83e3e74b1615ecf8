package reports

import (
	"errors"
	"fmt"
	"math"
	"strings"
)

// Comparison is a base run set against a candidate run, metric by metric.
type Comparison struct {
	Base, Candidate string // where each came from
	Rows            []CompareRow
	Failed          bool // a --fail-on tolerance was exceeded
	// Tolerances has one verdict per --fail-on rule, in the order given.
	Tolerances []ToleranceResult
	// Seeds is how many seeds each side has when both ran several: then the
	// figures are means and differences are tested (Welch's t-test).
	BaseSeeds, CandidateSeeds int
	// BaseMeanOf and CandidateMeanOf are set when only that side ran
	// several seeds: its figures are then means over that many, compared
	// without a test with the other side's one run.
	BaseMeanOf, CandidateMeanOf int
}

// seedCount is how many seeds s ran, when more than one; else 0.
func seedCount(s *Summary) int {
	if s == nil || s.Seeds == nil || len(s.Seeds.Runs) < 2 {
		return 0
	}
	return len(s.Seeds.Runs)
}

// CompareRow is one key figure of a comparison.
type CompareRow struct {
	Metric    string
	Base      float64
	Candidate float64
	Change    float64 // candidate - base
	Percent   float64 // change ÷ |base| × 100; NaN when base is 0
	Tolerance string  // the --fail-on rule that applies, if any
	Exceeded  bool

	// Kind is the metric's unit family, for display.
	Kind Kind
	// BaseNA and CandidateNA say why a side has no value ("not drained");
	// empty when the metric applies. When one is set, Change and Percent
	// are NaN and that side's value is 0.
	BaseNA, CandidateNA string

	// Test is set when both sides ran several seeds: Base and Candidate
	// are then means, and the difference carries its confidence interval
	// and p-value. A tolerance fails only when the difference is
	// significant.
	Test *WelchResult
}

// Tolerance is one --fail-on rule: "healthy.latency.p99=+10%" lets the
// candidate exceed the base by at most 10%; "healthy_within_slo=-0.5%" lets
// it fall below by at most 0.5% of the base; "amplification=+0.2" and
// "drain_time=+30s" are absolute.
type Tolerance struct {
	Expr    string
	Metric  string
	Above   bool    // true for "+": may exceed the base; false for "-": may fall below it
	Amount  float64 // percent when Percent, else in the metric's base unit (seconds, fraction)
	Percent bool
}

// ParseTolerance parses "METRIC=+X%", "METRIC=+X", "METRIC=-X%" or
// "METRIC=-X". Absolute amounts on duration metrics need a unit.
func ParseTolerance(expr string) (Tolerance, error) {
	t := Tolerance{Expr: strings.TrimSpace(expr)}
	if len(t.Expr) > maxGateLen {
		return Tolerance{}, fmt.Errorf("tolerance is %d characters long; at most %d", len(t.Expr), maxGateLen)
	}
	metric, raw, found := strings.Cut(t.Expr, "=")
	if !found {
		return Tolerance{}, fmt.Errorf("tolerance %q: want METRIC=+X%% or METRIC=-X (for example amplification=+0.2)", t.Expr)
	}
	t.Metric = strings.TrimSpace(metric)
	kind, ok := MetricKind(t.Metric)
	if !ok {
		return Tolerance{}, fmt.Errorf("tolerance %q: %w", t.Expr, unknownMetricError(t.Metric))
	}
	raw = strings.TrimSpace(raw)
	switch {
	case strings.HasPrefix(raw, "+"):
		t.Above = true
	case strings.HasPrefix(raw, "-"):
		t.Above = false
	default:
		return Tolerance{}, fmt.Errorf("tolerance %q: start the amount with + (the candidate may exceed the base by at most) or - (may fall below it by at most)", t.Expr)
	}
	raw = strings.TrimSpace(raw[1:])
	if p, isPercent := strings.CutSuffix(raw, "%"); isPercent {
		v, err := parseFinite(strings.TrimSpace(p))
		if err != nil || v < 0 {
			return Tolerance{}, fmt.Errorf("tolerance %q: bad percentage %q", t.Expr, raw)
		}
		t.Amount, t.Percent = v, true
		return t, nil
	}
	var v float64
	var err error
	switch kind {
	case Duration:
		if _, perr := parseFinite(raw); perr == nil {
			return Tolerance{}, fmt.Errorf("tolerance %q: %s is a duration; add a unit, like %q, or write a percentage", t.Expr, t.Metric, raw+"s")
		}
		v, err = parseDurationS(raw)
	default:
		v, err = parseFinite(raw)
		if err == nil && v < 0 {
			err = fmt.Errorf("negative amount %q", raw)
		}
	}
	if err != nil {
		return Tolerance{}, fmt.Errorf("tolerance %q: %w", t.Expr, err)
	}
	t.Amount = v
	return t, nil
}

// ParseTolerances parses each rule and reports every bad one.
func ParseTolerances(exprs []string) ([]Tolerance, error) {
	out := make([]Tolerance, 0, len(exprs))
	var errs []error
	for _, e := range exprs {
		t, err := ParseTolerance(e)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, t)
	}
	return out, errors.Join(errs...)
}

// Allowed is how far the candidate may move from base, in the metric's
// base unit.
func (t Tolerance) Allowed(base float64) float64 {
	if t.Percent {
		return math.Abs(base) * t.Amount / 100
	}
	return t.Amount
}

// Exceeded reports whether cand moved from base further than t allows.
func (t Tolerance) Exceeded(base, cand float64) bool {
	allowed := t.Allowed(base)
	eps := 1e-9 * math.Max(1, math.Max(math.Abs(base), math.Abs(cand)))
	if t.Above {
		return cand-base > allowed+eps
	}
	return base-cand > allowed+eps
}

// Compare sets cand against base for every metric that applies to at least
// one of them, and checks the tolerances. A tolerated metric that applies to
// the base but not to the candidate (an outage that no longer drains) is
// exceeded: the candidate lost the property the tolerance guards.
//
// When both summaries come from multi-seed runs (run --seeds N, N ≥ 2), each
// metric is compared on its mean over the seeds, with Welch's t-test on the
// per-seed values: a tolerance is exceeded only when the mean moved further
// than it allows and the difference is significant (two-sided p < 0.05, that
// is, the 95% confidence interval of the difference excludes 0). Seed noise
// alone then does not fail a tolerance.
func Compare(base, cand *Summary, failOn []Tolerance) *Comparison {
	c := &Comparison{}
	if base != nil {
		c.Base = base.Drill
	}
	if cand != nil {
		c.Candidate = cand.Drill
	}
	multi := seedCount(base) > 0 && seedCount(cand) > 0
	if multi {
		c.BaseSeeds, c.CandidateSeeds = seedCount(base), seedCount(cand)
	} else {
		// A multi-seed run's own gates and report speak of its means, so
		// its side of the comparison does too.
		c.BaseMeanOf, c.CandidateMeanOf = seedCount(base), seedCount(cand)
	}
	byMetric := map[string][]Tolerance{}
	for _, t := range failOn {
		byMetric[t.Metric] = append(byMetric[t.Metric], t)
	}
	verdicts := map[string]ToleranceResult{}
	for _, name := range metricNames {
		row, bok, cok := compareFigure(base, cand, name)
		if !bok && !cok {
			continue
		}
		var rules []string
		for _, t := range byMetric[name] {
			rules = append(rules, t.Expr)
			verdicts[t.Expr] = judgeTolerance(&row, t, bok, cok)
		}
		row.Tolerance = strings.Join(rules, ", ")
		c.Failed = c.Failed || row.Exceeded
		c.Rows = append(c.Rows, row)
	}
	for _, t := range failOn {
		tr, ok := verdicts[t.Expr]
		if !ok {
			// Neither run has the figure: nothing moved.
			tr = ToleranceResult{Expr: t.Expr, Base: NotApplicable(base, t.Metric), Candidate: NotApplicable(cand, t.Metric), Change: "—", Pass: true}
		}
		c.Tolerances = append(c.Tolerances, tr)
	}
	return c
}

// figureOf is a summary's figure for compare: its mean over the seeds
// that have it for a multi-seed run (with the per-seed values), else the
// figure itself. A figure no seed has is not applicable.
func figureOf(s *Summary, name string) (v float64, ok bool, values []float64) {
	if seedCount(s) > 0 {
		f, in := s.Seeds.Figure(name)
		return f.Mean, in && f.N > 0, f.Values
	}
	v, ok, _ = s.Metric(name)
	return v, ok, nil
}

// compareFigure is the row of one metric, with whether each side has it.
func compareFigure(base, cand *Summary, name string) (row CompareRow, bok, cok bool) {
	bv, bok, bvals := figureOf(base, name)
	cv, cok, cvals := figureOf(cand, name)
	row = CompareRow{Metric: name, Kind: metrics[name].kind}
	if bok {
		row.Base = bv
	} else {
		row.BaseNA = NotApplicable(base, name)
	}
	if cok {
		row.Candidate = cv
	} else {
		row.CandidateNA = NotApplicable(cand, name)
	}
	if bok && cok {
		row.Change = cv - bv
		row.Percent = math.NaN()
		if bv != 0 {
			row.Percent = row.Change / math.Abs(bv) * 100
		}
		if len(bvals) >= 2 && len(cvals) >= 2 {
			w := Welch(bvals, cvals)
			row.Test = &w
		}
	} else {
		row.Change, row.Percent = math.NaN(), math.NaN()
	}
	return row, bok, cok
}

// judgeTolerance checks one tolerance on row, marks the row exceeded when
// it is, and says so in the words of the reports.
func judgeTolerance(row *CompareRow, t Tolerance, bok, cok bool) ToleranceResult {
	bv, cv := row.Base, row.Candidate
	exceeded := false
	switch {
	case bok && cok:
		exceeded = t.Exceeded(bv, cv)
		if row.Test != nil {
			exceeded = exceeded && row.Test.Significant()
		}
	case bok && !cok:
		exceeded = true
	}
	row.Exceeded = row.Exceeded || exceeded
	v := row.View()
	tr := ToleranceResult{Expr: t.Expr, Base: v.Base, Candidate: v.Candidate, Change: v.Change, Pass: !exceeded}
	if v.Percent != "—" {
		tr.Change += " (" + v.Percent + ")"
	}
	if row.Test != nil {
		tr.Change += ", 95% CI " + v.CI
		tr.Test = "welch-t p=" + formatP(row.Test.P)
	}
	return tr
}

// formatP writes a p-value with three significant digits; tiny values as
// "< 0.000001".
func formatP(p float64) string {
	return FormatProbability(p)
}

// CompareRowView is a CompareRow as display text.
type CompareRowView struct {
	Metric, Base, Candidate, Change, Percent, Verdict string
	// CI is the 95% confidence interval of the change and P the p-value,
	// for multi-seed comparisons; "—" otherwise.
	CI, P    string
	Exceeded bool
}

// View is the row as display text: the reports and the tolerance verdicts
// of summary.json quote the same words.
func (r CompareRow) View() CompareRowView {
	v := CompareRowView{Metric: r.Metric, Exceeded: r.Exceeded}
	v.Base, v.Candidate = r.BaseNA, r.CandidateNA
	if v.Base == "" {
		v.Base = FormatValue(r.Kind, r.Base)
	}
	if v.Candidate == "" {
		v.Candidate = FormatValue(r.Kind, r.Candidate)
	}
	v.Change, v.Percent = "—", "—"
	if !math.IsNaN(r.Change) {
		v.Change = formatChange(r.Kind, r.Change)
	}
	if !math.IsNaN(r.Percent) {
		v.Percent = signed(TrimFloat(r.Percent, 1), r.Percent) + "%"
	}
	v.CI, v.P = "—", "—"
	if r.Test != nil {
		v.CI = "[" + formatChange(r.Kind, r.Test.CILow) + ", " + formatChange(r.Kind, r.Test.CIHigh) + "]"
		v.P = formatP(r.Test.P)
	}
	v.Verdict = r.Verdict()
	return v
}

// Verdict says in a word how the candidate did on this row.
func (r CompareRow) Verdict() string {
	if r.Tolerance != "" {
		if r.Exceeded {
			return "✗ exceeds " + r.Tolerance
		}
		if r.Test != nil && !r.Test.Significant() {
			return "✓ no significant change (" + r.Tolerance + ")"
		}
		return "✓ within " + r.Tolerance
	}
	dir := metrics[r.Metric].better
	switch {
	case r.BaseNA != "" && r.CandidateNA != "":
		return "—"
	case r.CandidateNA == "not drained":
		return "worse"
	case r.BaseNA == "not drained":
		return "better"
	case r.BaseNA != "" || r.CandidateNA != "":
		return "—"
	case math.Abs(r.Change) <= 1e-9*math.Max(1, math.Abs(r.Base)):
		return "same"
	case r.Test != nil && !r.Test.Significant():
		return "noise"
	case dir == neutral:
		return "changed"
	case (r.Change < 0) == (dir == lowerBetter):
		return "better"
	default:
		return "worse"
	}
}

// formatChange writes a signed difference in the metric's unit; fractions
// move in percentage points.
func formatChange(kind Kind, d float64) string {
	switch kind {
	case Duration:
		return signed(FormatDuration(math.Abs(d)), d)
	case Fraction:
		return signed(TrimFloat(math.Abs(d)*100, 3), d) + " pp"
	default:
		return signed(FormatValue(kind, math.Abs(d)), d)
	}
}

// signed puts + or - before an already formatted magnitude (or a string
// that already carries its minus sign).
func signed(s string, v float64) string {
	s = strings.TrimPrefix(s, "-")
	switch {
	case s == "0" || s == "0s":
		return s
	case v < 0:
		return "-" + s
	default:
		return "+" + s
	}
}
