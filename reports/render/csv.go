package render

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/stormdrill/stormdrill/reports"
)

// TimeseriesCSVHeader returns the header row WriteTimeseriesCSV writes for
// ts: Sample's csv tags, then dlq_<reason>_per_s for each reason, then
// breaker_<partner> for each partner, then amplification_<cohort>,
// oldest_age_s_<cohort>, first_attempts_per_s_<cohort> and
// retries_per_s_<cohort> for each cohort column (names made safe for
// column headers): the report's columns (timeseriesColumns), which the
// charts and plots draw.
func TimeseriesCSVHeader(ts *reports.Timeseries) []string {
	return columnHeaders(timeseriesColumns(ts))
}

func columnHeaders(cols []seriesColumn) []string {
	header := make([]string, len(cols))
	for i, c := range cols {
		header[i] = c.Header
	}
	return header
}

// WriteTimeseriesCSV writes one header row and one row per sample, a cell
// per column of timeseriesColumns. A value the sample does not have (a
// DLQByReason or Breaker row shorter than the header, a cohort without
// first attempts in the interval) is an empty cell.
func WriteTimeseriesCSV(w io.Writer, ts *reports.Timeseries) error {
	if ts == nil {
		return fmt.Errorf("timeseries.csv: no timeseries")
	}
	cols := timeseriesColumns(ts)
	cw := csv.NewWriter(w)
	if err := cw.Write(columnHeaders(cols)); err != nil {
		return err
	}
	row := make([]string, len(cols))
	for i := range ts.Samples {
		for c := range cols {
			row[c] = csvFloat(cols[c].Values[i])
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
