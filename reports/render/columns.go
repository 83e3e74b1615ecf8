package render

import (
	"math"
	"reflect"

	"github.com/stormdrill/stormdrill/reports"
)

// The run's time series as the report's columns: timeseries.csv writes
// every one, and the interactive charts and the plots take theirs from
// them (dead letters by reason, breakers, each cohort's figures), so that
// the file and the pictures cannot disagree on which columns there are or
// on what they hold.

// columnKind says what a seriesColumn holds.
type columnKind int

const (
	sampleFieldColumn         columnKind = iota // one of Sample's csv-tagged fields
	deadLetterColumn                            // one reason's dead letters per second
	breakerColumn                               // one partner's breaker: 0 closed, 1 half-open, 2 open
	cohortAmplificationColumn                   // one cohort's attempts ÷ first attempts in the interval
	cohortOldestAgeColumn                       // one cohort's oldest delivery's age, in seconds
	cohortFirstAttemptsColumn                   // one cohort's first attempts per second
	cohortRetriesColumn                         // one cohort's retries per second
)

// seriesColumn is one column of the time series, one value per sample.
type seriesColumn struct {
	Kind columnKind
	// Of is the reason, partner or cohort the column belongs to; empty
	// for a sample field.
	Of     string
	Header string // timeseries.csv's header
	// Values are in the header's unit; NaN where the sample has no value
	// (a row shorter than Timeseries names, an interval without one).
	Values []float64
	// Counts are a dead-letter column's dead letters in each interval
	// (Values are them per second); NaN where the sample has none.
	Counts []float64
	// Sampled is set when some sample carries this kind of column at
	// all: a run recorded without per-cohort figures has its cohorts'
	// columns empty, and the charts draw the pipeline's instead.
	Sampled bool
}

// sampleColumns are Sample's fields that carry a csv tag, in field order.
var sampleColumns = func() []struct {
	name  string
	index int
} {
	var cols []struct {
		name  string
		index int
	}
	t := reflect.TypeOf(reports.Sample{})
	for i := range t.NumField() {
		tag := t.Field(i).Tag.Get("csv")
		if tag == "" || tag == "-" || t.Field(i).Type.Kind() != reflect.Float64 {
			continue
		}
		cols = append(cols, struct {
			name  string
			index int
		}{tag, i})
	}
	return cols
}()

// timeseriesColumns is every column of ts in timeseries.csv's order:
// Sample's csv-tagged fields; the dead letters of each reason per second
// (a sample's count divided by the sample interval, like every other
// _per_s column); each partner's breaker; then, for each cohort, its
// amplification, oldest age, first attempts and retries per second
// (names made safe for column headers).
func timeseriesColumns(ts *reports.Timeseries) []seriesColumn {
	n := len(ts.Samples)
	cols := make([]seriesColumn, 0, len(sampleColumns)+len(ts.Reasons)+len(ts.BreakerPartners)+4*len(ts.Cohorts))
	for _, c := range sampleColumns {
		vs := make([]float64, n)
		for i := range ts.Samples {
			vs[i] = reflect.ValueOf(&ts.Samples[i]).Elem().Field(c.index).Float()
		}
		cols = append(cols, seriesColumn{Kind: sampleFieldColumn, Header: c.name, Values: vs, Sampled: true})
	}
	intervals := sampleIntervals(ts)
	for r, reason := range ts.Reasons {
		counts := perSample(ts, r, func(s *reports.Sample) []float64 { return s.DLQByReason })
		rates := make([]float64, n)
		for i, c := range counts {
			rates[i] = c
			if intervals[i] > 0 {
				rates[i] = c / intervals[i]
			}
		}
		cols = append(cols, seriesColumn{Kind: deadLetterColumn, Of: reason, Header: "dlq_" + columnName(reason) + "_per_s", Values: rates, Counts: counts, Sampled: true})
	}
	for p, partner := range ts.BreakerPartners {
		cols = append(cols, seriesColumn{Kind: breakerColumn, Of: partner, Header: "breaker_" + columnName(partner),
			Values: perSample(ts, p, func(s *reports.Sample) []float64 { return s.Breaker }), Sampled: true})
	}
	for _, k := range []struct {
		kind   columnKind
		prefix string
		get    func(*reports.Sample) []float64
	}{
		{cohortAmplificationColumn, "amplification_", func(s *reports.Sample) []float64 { return s.CohortAmplification }},
		{cohortOldestAgeColumn, "oldest_age_s_", func(s *reports.Sample) []float64 { return s.CohortOldestAgeS }},
		{cohortFirstAttemptsColumn, "first_attempts_per_s_", func(s *reports.Sample) []float64 { return s.CohortFirstAttemptsPerS }},
		{cohortRetriesColumn, "retries_per_s_", func(s *reports.Sample) []float64 { return s.CohortRetriesPerS }},
	} {
		sampled := false
		for i := range ts.Samples {
			if len(k.get(&ts.Samples[i])) > 0 {
				sampled = true
				break
			}
		}
		for c, cohort := range ts.Cohorts {
			cols = append(cols, seriesColumn{Kind: k.kind, Of: cohort, Header: k.prefix + columnName(cohort),
				Values: perSample(ts, c, k.get), Sampled: sampled})
		}
	}
	return cols
}

// columnsOf is the columns of one kind, in their order.
func columnsOf(cols []seriesColumn, kind columnKind) []seriesColumn {
	var out []seriesColumn
	for _, c := range cols {
		if c.Kind == kind {
			out = append(out, c)
		}
	}
	return out
}

// perSample is column j of each sample's row (as get reads it), NaN where
// the row is shorter.
func perSample(ts *reports.Timeseries, j int, get func(*reports.Sample) []float64) []float64 {
	vs := make([]float64, len(ts.Samples))
	for i := range ts.Samples {
		vs[i] = math.NaN()
		if row := get(&ts.Samples[i]); j < len(row) {
			vs[i] = row[j]
		}
	}
	return vs
}

// sampleIntervals is each sample's interval in seconds: the series' own,
// or for a timeseries without one the spacing of its samples.
func sampleIntervals(ts *reports.Timeseries) []float64 {
	out := make([]float64, len(ts.Samples))
	prevT := 0.0
	for i := range ts.Samples {
		out[i] = ts.IntervalS
		if out[i] <= 0 {
			out[i] = ts.Samples[i].T - prevT
		}
		prevT = ts.Samples[i].T
	}
	return out
}
