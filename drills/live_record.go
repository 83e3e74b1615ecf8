package drills

import (
	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/stormdrill/stormdrill/reports"
)

// LatencyHist is a latency histogram with the simulation's bounds: values
// in microseconds from 1µs to 100 days, 3 significant figures.
type LatencyHist struct{ h *hdrhistogram.Histogram }

// NewLatencyHist returns an empty histogram.
func NewLatencyHist() *LatencyHist { return &LatencyHist{h: newHist()} }

// Record adds one latency in nanoseconds (clamped to the bounds).
func (l *LatencyHist) Record(ns int64) { _ = l.h.RecordValue(micros(ns)) }

// Count is the number of values recorded.
func (l *LatencyHist) Count() int64 { return l.h.TotalCount() }

// Percentiles returns the summary percentiles in seconds.
func (l *LatencyHist) Percentiles() reports.Percentiles { return percentiles(l.h) }

// CDF returns the bounded CDF the reports plot.
func (l *LatencyHist) CDF() []reports.CDFPoint { return cdf(l.h) }
