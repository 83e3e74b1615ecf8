package experiments

import (
	"math"

	"github.com/stormdrill/stormdrill/reports"
)

// TailFraction is the part of the source's duration that the tail.* metrics
// average over: the last fifth, long after a short trigger has ended, when
// a system that recovers has recovered and one that does not still storms.
const TailFraction = 0.2

// derived are the figures a sweep reports beyond the summary's own: they
// are read off the time series of one run.
var derived = []struct {
	name string
	kind reports.Kind
	get  func(run *reports.Run) (float64, bool)
}{
	// completion_time: when the last delivery reached a terminal state, to
	// within one sample interval (the run ends at the first sample with
	// nothing pending). Not applicable when something was still pending.
	{"completion_time", reports.Duration, func(run *reports.Run) (float64, bool) {
		s := run.Summary
		if s.Deliveries.Pending > 0 {
			return 0, false
		}
		return s.DrillTimeS, true
	}},
	{"tail.attempts_per_s", reports.Ratio, tailMean(func(s *reports.Sample) float64 { return s.FirstAttemptsPerS + s.RetriesPerS })},
	{"tail.successes_per_s", reports.Ratio, tailMean(func(s *reports.Sample) float64 { return s.SuccessesPerS })},
	{"tail.timeouts_per_s", reports.Ratio, tailMean(func(s *reports.Sample) float64 { return s.TimeoutPerS })},
	{"tail.amplification", reports.Ratio, func(run *reports.Run) (float64, bool) {
		first, ok1 := tailMean(func(s *reports.Sample) float64 { return s.FirstAttemptsPerS })(run)
		all, ok2 := tailMean(func(s *reports.Sample) float64 { return s.FirstAttemptsPerS + s.RetriesPerS })(run)
		if !ok1 || !ok2 || first <= 0 {
			return 0, false
		}
		return all / first, true
	}},
	// peak_retries_per_s: the largest retries/s of any sample interval.
	{"peak_retries_per_s", reports.Ratio, func(run *reports.Run) (float64, bool) {
		ts := run.Timeseries
		if ts == nil || len(ts.Samples) == 0 {
			return 0, false
		}
		peak := 0.0
		for i := range ts.Samples {
			peak = max(peak, ts.Samples[i].RetriesPerS)
		}
		return peak, true
	}},
	// retry_span: from the start of the first sample interval with a retry
	// to the end of the last one. When the retries are those of deliveries
	// that failed together (experiments/herd.toml), it is how far apart
	// their jitter spread them. Not applicable without retries.
	{"retry_span", reports.Duration, func(run *reports.Run) (float64, bool) {
		ts := run.Timeseries
		if ts == nil {
			return 0, false
		}
		first, last := math.Inf(1), math.Inf(-1)
		for i := range ts.Samples {
			if s := &ts.Samples[i]; s.RetriesPerS > 0 {
				first = min(first, s.T-ts.IntervalS)
				last = max(last, s.T)
			}
		}
		if first > last {
			return 0, false
		}
		return last - first, true
	}},
	{"tail.oldest_age", reports.Duration, tailMean(func(s *reports.Sample) float64 { return max(s.OldestReadyAgeS, s.OldestDelayedAgeS) })},
}

// DerivedMetricNames lists the metrics a sweep computes from a run's time
// series, in addition to reports.MetricNames.
func DerivedMetricNames() []string {
	names := make([]string, len(derived))
	for i, d := range derived {
		names[i] = d.name
	}
	return names
}

// AllMetricNames is every metric a sweep can report: the summary's, then
// the derived ones.
func AllMetricNames() []string {
	return append(reports.MetricNames(), DerivedMetricNames()...)
}

// metricKind is the unit family of any sweep metric.
func metricKind(name string) reports.Kind {
	for _, d := range derived {
		if d.name == name {
			return d.kind
		}
	}
	k, _ := reports.MetricKind(name)
	return k
}

// RunMetric returns the named figure of a run; ok is false when it does not
// apply (drain_time when an outage never drained), err is set for an
// unknown name.
func RunMetric(run *reports.Run, name string) (v float64, ok bool, err error) {
	for _, d := range derived {
		if d.name == name {
			if run == nil || run.Summary == nil {
				return 0, false, nil
			}
			v, ok := d.get(run)
			return v, ok && !math.IsNaN(v), nil
		}
	}
	var s *reports.Summary
	if run != nil {
		s = run.Summary
	}
	return s.Metric(name)
}

// tailMean averages a column over the samples in the last TailFraction of
// the source's duration.
func tailMean(col func(*reports.Sample) float64) func(*reports.Run) (float64, bool) {
	return func(run *reports.Run) (float64, bool) {
		if run.Timeseries == nil || run.Summary.DurationS <= 0 {
			return 0, false
		}
		from := run.Summary.DurationS * (1 - TailFraction)
		var sum float64
		var n int
		for i := range run.Timeseries.Samples {
			s := &run.Timeseries.Samples[i]
			if s.T > from && s.T <= run.Summary.DurationS {
				sum += col(s)
				n++
			}
		}
		if n == 0 {
			return 0, false
		}
		return sum / float64(n), true
	}
}
