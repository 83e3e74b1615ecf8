package render

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"reflect"
	"strconv"
	"strings"

	"github.com/stormdrill/stormdrill/reports"
)

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

// TimeseriesCSVHeader returns the header row WriteTimeseriesCSV writes for
// ts: Sample's csv tags, then dlq_<reason>_per_s for each reason, then
// breaker_<partner> for each partner, then amplification_<cohort> and
// oldest_age_s_<cohort> for each cohort column (names made safe for
// column headers).
func TimeseriesCSVHeader(ts *reports.Timeseries) []string {
	header := make([]string, 0, len(sampleColumns)+len(ts.Reasons)+len(ts.BreakerPartners)+2*len(ts.Cohorts))
	for _, c := range sampleColumns {
		header = append(header, c.name)
	}
	for _, r := range ts.Reasons {
		header = append(header, "dlq_"+columnName(r)+"_per_s")
	}
	for _, p := range ts.BreakerPartners {
		header = append(header, "breaker_"+columnName(p))
	}
	for _, c := range ts.Cohorts {
		header = append(header, "amplification_"+columnName(c))
	}
	for _, c := range ts.Cohorts {
		header = append(header, "oldest_age_s_"+columnName(c))
	}
	return header
}

// WriteTimeseriesCSV writes one header row and one row per sample. The
// per-reason dead-letter counts of a sample are divided by the sample
// interval to make them rates like every other _per_s column. A sample whose
// DLQByReason or Breaker is shorter than the header leaves those cells empty.
func WriteTimeseriesCSV(w io.Writer, ts *reports.Timeseries) error {
	if ts == nil {
		return fmt.Errorf("timeseries.csv: no timeseries")
	}
	cw := csv.NewWriter(w)
	if err := cw.Write(TimeseriesCSVHeader(ts)); err != nil {
		return err
	}
	row := make([]string, 0, len(sampleColumns)+len(ts.Reasons)+len(ts.BreakerPartners))
	prevT := 0.0
	for i := range ts.Samples {
		s := &ts.Samples[i]
		v := reflect.ValueOf(s).Elem()
		row = row[:0]
		for _, c := range sampleColumns {
			row = append(row, csvFloat(v.Field(c.index).Float()))
		}
		// A timeseries without an interval still gets rates, from the
		// spacing of its samples.
		interval := ts.IntervalS
		if interval <= 0 {
			interval = s.T - prevT
		}
		prevT = s.T
		for j := range ts.Reasons {
			switch {
			case j >= len(s.DLQByReason):
				row = append(row, "")
			case interval > 0:
				row = append(row, csvFloat(s.DLQByReason[j]/interval))
			default:
				row = append(row, csvFloat(s.DLQByReason[j]))
			}
		}
		for j := range ts.BreakerPartners {
			if j >= len(s.Breaker) {
				row = append(row, "")
				continue
			}
			row = append(row, csvFloat(s.Breaker[j]))
		}
		// Per cohort; a cohort without first attempts in the interval has
		// no amplification there, an empty cell.
		for _, vs := range [][]float64{s.CohortAmplification, s.CohortOldestAgeS} {
			for j := range ts.Cohorts {
				if j >= len(vs) {
					row = append(row, "")
					continue
				}
				row = append(row, csvFloat(vs[j]))
			}
		}
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// csvFloat writes a float rounded like summary.json, shortest form; NaN and
// infinities as empty cells so spreadsheet tools read them as missing.
func csvFloat(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return ""
	}
	return strconv.FormatFloat(reports.RoundFloat(v), 'f', -1, 64)
}

// columnName lowercases s and replaces anything but letters, digits and
// underscores with an underscore: "max-attempts" → "max_attempts".
func columnName(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') || r == '_' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}
