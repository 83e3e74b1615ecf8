package tally

import (
	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/stormdrill/stormdrill/reports"
)

// Latency histograms: microseconds from 1µs to 100 days, 3 significant
// figures. Memory is fixed per histogram (about 270 KiB), whatever the
// drill's length, so the tally makes one only where a value arrives.
const (
	histMaxMicros = 100 * 24 * 3600 * 1_000_000
	histSigFigs   = 3
)

// LatencyHist is a latency histogram with the tally's bounds.
type LatencyHist struct{ h *hdrhistogram.Histogram }

// NewLatencyHist returns an empty histogram.
func NewLatencyHist() *LatencyHist {
	return &LatencyHist{h: hdrhistogram.New(1, histMaxMicros, histSigFigs)}
}

// newCohortHist is a cohort's latency histogram: 2 significant figures
// (percentiles within 1%), about 37 KiB instead of 272 KiB, since a drill
// may have many cohorts. The healthy-subscriber histograms, which the SLO
// gates read, keep 3.
func newCohortHist() *LatencyHist {
	return &LatencyHist{h: hdrhistogram.New(1, histMaxMicros, 2)}
}

func micros(ns int64) int64 { return max(1, min(ns/1000, histMaxMicros)) }

// Record adds one latency in nanoseconds (clamped to the bounds).
func (l *LatencyHist) Record(ns int64) { _ = l.h.RecordValue(micros(ns)) }

// Count is the number of values recorded; 0 for a nil histogram.
func (l *LatencyHist) Count() int64 {
	if l == nil {
		return 0
	}
	return l.h.TotalCount()
}

// Percentiles returns the summary percentiles in seconds; zero for an
// empty or nil histogram.
func (l *LatencyHist) Percentiles() reports.Percentiles {
	if l.Count() == 0 {
		return reports.Percentiles{}
	}
	h := l.h
	// One pass over the counts for all four (ValueAtQuantile scans from the
	// start for each); the same values.
	v := h.ValueAtPercentilesSlice([]float64{50, 90, 99, 99.9})
	s := func(i int) float64 { return float64(v[i]) / 1e6 }
	return reports.Percentiles{Count: h.TotalCount(), P50: s(0), P90: s(1), P99: s(2), P999: s(3), Max: float64(h.Max()) / 1e6}
}

// cdfQuantiles are where the latency CDF is read: fine in the tail, where
// SLO questions live, and bounded in number.
var cdfQuantiles = func() []float64 {
	var qs []float64
	for q := 0.0; q < 90; q += 1 {
		qs = append(qs, q)
	}
	for q := 90.0; q < 99; q += 0.25 {
		qs = append(qs, q)
	}
	for q := 99.0; q < 100; q += 0.05 {
		qs = append(qs, q)
	}
	return append(qs, 100)
}()

// CDF returns the bounded CDF the reports plot; nil when empty.
func (l *LatencyHist) CDF() []reports.CDFPoint {
	if l.Count() == 0 {
		return nil
	}
	pts := make([]reports.CDFPoint, 0, len(cdfQuantiles))
	vs := l.h.ValueAtPercentilesSlice(cdfQuantiles) // one pass; the values ValueAtQuantile gives
	for i, q := range cdfQuantiles {
		pts = append(pts, reports.CDFPoint{X: float64(vs[i]) / 1e6, P: q / 100})
	}
	return pts
}
