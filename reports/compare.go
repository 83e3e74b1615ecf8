package reports

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
)

// Comparison is a base run set against a candidate run, metric by metric.
type Comparison struct {
	Base, Candidate string // where each came from
	Rows            []CompareRow
	Failed          bool // a --fail-on tolerance was exceeded
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
func Compare(base, cand *Summary, failOn []Tolerance) *Comparison {
	c := &Comparison{}
	if base != nil {
		c.Base = base.Drill
	}
	if cand != nil {
		c.Candidate = cand.Drill
	}
	byMetric := map[string][]Tolerance{}
	for _, t := range failOn {
		byMetric[t.Metric] = append(byMetric[t.Metric], t)
	}
	for _, name := range metricNames {
		bv, bok, _ := base.Metric(name)
		cv, cok, _ := cand.Metric(name)
		if !bok && !cok {
			continue
		}
		row := CompareRow{Metric: name, Kind: metrics[name].kind}
		if bok {
			row.Base = bv
		} else {
			row.BaseNA = notApplicable(base, name)
		}
		if cok {
			row.Candidate = cv
		} else {
			row.CandidateNA = notApplicable(cand, name)
		}
		if bok && cok {
			row.Change = cv - bv
			row.Percent = math.NaN()
			if bv != 0 {
				row.Percent = row.Change / math.Abs(bv) * 100
			}
		} else {
			row.Change, row.Percent = math.NaN(), math.NaN()
		}
		var rules []string
		for _, t := range byMetric[name] {
			rules = append(rules, t.Expr)
			switch {
			case bok && cok:
				row.Exceeded = row.Exceeded || t.Exceeded(bv, cv)
			case bok && !cok:
				row.Exceeded = true
			}
		}
		row.Tolerance = strings.Join(rules, ", ")
		c.Failed = c.Failed || row.Exceeded
		c.Rows = append(c.Rows, row)
	}
	return c
}

// compareRowView is a CompareRow as display text.
type compareRowView struct {
	Metric, Base, Candidate, Change, Percent, Verdict string
	Exceeded                                          bool
}

func (r CompareRow) view() compareRowView {
	v := compareRowView{Metric: r.Metric, Exceeded: r.Exceeded}
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
		v.Percent = signed(trimFloat(r.Percent, 1), r.Percent) + "%"
	}
	v.Verdict = r.verdict()
	return v
}

// verdict says in a word how the candidate did on this row.
func (r CompareRow) verdict() string {
	if r.Tolerance != "" {
		if r.Exceeded {
			return "✗ exceeds " + r.Tolerance
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
		return signed(trimFloat(math.Abs(d)*100, 3), d) + " pp"
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

// WriteComparisonMarkdown writes c as a Markdown section: which runs, the
// verdict, and one table row per metric.
func WriteComparisonMarkdown(w io.Writer, c *Comparison) error {
	mw := &mdWriter{w: w}
	mw.line("## Comparison")
	mw.line("")
	writeComparisonBody(mw, c)
	return mw.err
}

func writeComparisonBody(mw *mdWriter, c *Comparison) {
	if c == nil {
		mw.line("No comparison.")
		return
	}
	exceeded := 0
	for _, r := range c.Rows {
		if r.Exceeded {
			exceeded++
		}
	}
	verdict := "**PASS**: no tolerance exceeded"
	if c.Failed {
		verdict = fmt.Sprintf("**FAIL**: %d of the tolerated figures moved too far", exceeded)
	}
	mw.line(fmt.Sprintf("Base: %s · candidate: %s — %s", mdCode(c.Base), mdCode(c.Candidate), verdict))
	mw.line("")
	rows, same := shownRows(c)
	if len(rows) == 0 {
		mw.line(fmt.Sprintf("All %d figures are the same in both runs.", same))
		return
	}
	mw.line("| metric | base | candidate | change | % change | verdict |")
	mw.line("| --- | ---: | ---: | ---: | ---: | --- |")
	for _, r := range rows {
		v := r.view()
		mw.row(mdCode(v.Metric), v.Base, v.Candidate, v.Change, v.Percent, v.Verdict)
	}
	if same > 0 {
		mw.line("")
		mw.line(fmt.Sprintf("%d more figures are the same in both runs and not shown.", same))
	}
}

// shownRows leaves out the rows that did not change and carry no
// tolerance: a design review wants the differences, not forty equal pairs.
// same counts what was left out.
func shownRows(c *Comparison) (rows []CompareRow, same int) {
	for _, r := range c.Rows {
		if r.Tolerance == "" && r.verdict() == "same" {
			same++
			continue
		}
		rows = append(rows, r)
	}
	return rows, same
}
