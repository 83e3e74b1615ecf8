package reports

import (
	"fmt"
	"sort"
	"strings"

	"github.com/stormdrill/stormdrill/model"
)

// Kind is the unit family of a metric; it decides how gate values are
// written and how measured values are displayed.
type Kind int

const (
	// Count is a whole number of things (deliveries, attempts, transitions).
	Count Kind = iota + 1
	// Duration is a time in seconds; gates must write it with a unit.
	Duration
	// Fraction is a share in [0, 1]; gates may write it as a percentage.
	Fraction
	// Ratio is a plain number (amplification, a rate per second).
	Ratio
)

// String names the kind for error messages.
func (k Kind) String() string {
	switch k {
	case Count:
		return "count"
	case Duration:
		return "duration"
	case Fraction:
		return "fraction"
	case Ratio:
		return "ratio"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// DeadLetterReasons are the reasons a delivery can be dead-lettered, in the
// order reports list them (docs/metrics.md, "dead-lettered"): model's.
var DeadLetterReasons = func() []string {
	names := make([]string, len(model.Reasons))
	for i, r := range model.Reasons {
		names[i] = string(r)
	}
	return names
}()

// better says which way a metric should move; compare uses it for its
// verdict column.
type better int

const (
	neutral     better = 0
	lowerBetter better = -1
	upperBetter better = 1
)

// metricDef is one entry of the gate/compare namespace. value reports
// ok=false when the figure does not apply to this run; na then says why, in
// words fit for a report cell.
type metricDef struct {
	kind   Kind
	better better
	value  func(s *Summary) (v float64, ok bool)
	na     func(s *Summary) string
}

func always(f func(s *Summary) float64) func(*Summary) (float64, bool) {
	return func(s *Summary) (float64, bool) { return f(s), true }
}

// unmeasured says why a figure is unknown: the attempts the harness could
// not identify when there were any, else text.
func unmeasured(text string) func(*Summary) string {
	return func(s *Summary) string {
		if n := unidentifiedAttempts(s); n > 0 {
			return fmt.Sprintf("unknown: %s attempts could not be identified", GroupDigits(n))
		}
		return "unknown: " + text
	}
}

func naText(text string) func(*Summary) string {
	return func(*Summary) string { return text }
}

// metrics is the namespace; built once in init because the dlq.<reason> and
// percentile entries are generated.
var metrics map[string]metricDef

func init() {
	m := map[string]metricDef{
		"created":        {kind: Count, better: neutral, value: always(func(s *Summary) float64 { return float64(s.Deliveries.Created) })},
		"delivered":      {kind: Count, better: upperBetter, value: always(func(s *Summary) float64 { return float64(s.Deliveries.Delivered) })},
		"dead_lettered":  {kind: Count, better: lowerBetter, value: always(func(s *Summary) float64 { return float64(s.Deliveries.DeadLettered) })},
		"pending":        {kind: Count, better: lowerBetter, value: always(func(s *Summary) float64 { return float64(s.Deliveries.Pending) })},
		"lost":           {kind: Count, better: lowerBetter, value: always(func(s *Summary) float64 { return float64(s.Deliveries.Lost) })},
		"attempts":       {kind: Count, better: lowerBetter, value: always(func(s *Summary) float64 { return float64(s.Attempts.Total) })},
		"first_attempts": {kind: Count, better: neutral, value: always(func(s *Summary) float64 { return float64(s.Attempts.First) })},
		"retries":        {kind: Count, better: lowerBetter, value: always(func(s *Summary) float64 { return float64(s.Attempts.Retries) })},
		"amplification": {kind: Ratio, better: lowerBetter,
			value: amplificationValue,
			na:    unmeasured("no delivery made an attempt")},
		"drain_time": {kind: Duration, better: lowerBetter,
			value: drainTimeValue, na: drainTimeNA},
		"oldest_ready_age":   {kind: Duration, better: lowerBetter, value: always(func(s *Summary) float64 { return s.OldestReadyAgeMaxS })},
		"oldest_delayed_age": {kind: Duration, better: lowerBetter, value: always(func(s *Summary) float64 { return s.OldestDelayedAgeMaxS })},
		"healthy_within_slo": {kind: Fraction, better: upperBetter,
			value: func(s *Summary) (float64, bool) { return s.HealthyWithinSLO, s.HealthyLatencyS.Count > 0 },
			na:    naText("no healthy deliveries")},
		"duplicates": {kind: Count, better: lowerBetter,
			value: duplicatesValue,
			na:    unmeasured("not measured")},
		"lost_acks": {kind: Count, better: lowerBetter, value: always(func(s *Summary) float64 { return float64(s.LostAcks) })},
		// An attempt whose outcome the dispatcher never learned may be
		// repeated: one in flight when the dispatcher was killed, or one
		// whose answer the partner dropped (a lost ack). Duplicates beyond
		// those are the pipeline's own.
		"duplicates_beyond_in_flight": {kind: Count, better: lowerBetter,
			value: duplicatesBeyondInFlight,
			na:    unmeasured("not measured")},
		"retry_after_ignored":  {kind: Count, better: lowerBetter, value: always(func(s *Summary) float64 { return float64(s.RetryAfterIgnored) })},
		"source_held_back":     {kind: Duration, better: lowerBetter, value: always(func(s *Summary) float64 { return s.SourceHeldBackS })},
		"source_held_back_max": {kind: Duration, better: lowerBetter, value: always(func(s *Summary) float64 { return s.SourceHeldBackMaxS })},
		"peak_attempts_per_s":  {kind: Ratio, better: lowerBetter, value: always(func(s *Summary) float64 { return s.PeakAttemptsPerS })},
		"peak_pending":         {kind: Count, better: lowerBetter, value: always(func(s *Summary) float64 { return float64(s.PeakPending) })},
		// The cohorts a scripted fault hits, on their own: in a fan-out to
		// hundreds of healthy subscribers the overall figures hide them.
		"faulty.amplification": {kind: Ratio, better: lowerBetter,
			value: faultyAmplification,
			na:    unmeasured("no faulty cohort made an attempt")},
		"faulty.dead_lettered": {kind: Count, better: lowerBetter, value: always(func(s *Summary) float64 {
			var n int64
			for _, c := range s.Cohorts {
				if c.Faulty {
					n += c.DeadLettered
				}
			}
			return float64(n)
		})},
		"breaker_transitions": {kind: Count, better: lowerBetter, value: always(func(s *Summary) float64 { return float64(len(s.BreakerTransitions)) })},
		"lateness.p99": {kind: Duration, better: lowerBetter,
			value: func(s *Summary) (float64, bool) {
				if s.Lateness == nil {
					return 0, false
				}
				return s.Lateness.P99, true
			},
			na: naText("not measured (sim)")},
	}
	percentiles := []struct {
		name string
		get  func(p *Percentiles) float64
	}{
		{"p50", func(p *Percentiles) float64 { return p.P50 }},
		{"p90", func(p *Percentiles) float64 { return p.P90 }},
		{"p99", func(p *Percentiles) float64 { return p.P99 }},
		{"p999", func(p *Percentiles) float64 { return p.P999 }},
		{"max", func(p *Percentiles) float64 { return p.Max }},
	}
	for _, q := range percentiles {
		get := q.get
		m["healthy.latency."+q.name] = metricDef{kind: Duration, better: lowerBetter,
			value: func(s *Summary) (float64, bool) { return get(&s.HealthyLatencyS), s.HealthyLatencyS.Count > 0 },
			na:    naText("no healthy deliveries")}
		m["healthy.outage.latency."+q.name] = metricDef{kind: Duration, better: lowerBetter,
			value: func(s *Summary) (float64, bool) {
				return get(&s.HealthyLatencyOutageS), s.HealthyLatencyOutageS.Count > 0
			},
			na: naText("no healthy deliveries during outages")}
	}
	// Replays (dlq-replay actions), over all of them: counts add up,
	// amplification is attempts ÷ replayed, times and latencies take the
	// worst replay.
	noReplay := func(s *Summary) string {
		if len(s.Replays) == 0 {
			return "no dlq-replay action"
		}
		return "not drained"
	}
	replaySum := func(get func(r *Replay) int64) func(*Summary) (float64, bool) {
		return func(s *Summary) (float64, bool) {
			var n int64
			for i := range s.Replays {
				n += get(&s.Replays[i])
			}
			return float64(n), len(s.Replays) > 0
		}
	}
	m["replay.replayed"] = metricDef{kind: Count, better: neutral, value: replaySum(func(r *Replay) int64 { return r.Replayed }), na: noReplay}
	m["replay.delivered"] = metricDef{kind: Count, better: upperBetter, value: replaySum(func(r *Replay) int64 { return r.Delivered }), na: noReplay}
	m["replay.dead_lettered"] = metricDef{kind: Count, better: lowerBetter, value: replaySum(func(r *Replay) int64 { return r.DeadLettered }), na: noReplay}
	m["replay.pending"] = metricDef{kind: Count, better: lowerBetter, value: replaySum(func(r *Replay) int64 { return r.Pending }), na: noReplay}
	m["replay.amplification"] = metricDef{kind: Ratio, better: lowerBetter,
		value: func(s *Summary) (float64, bool) {
			var attempts, replayed int64
			for _, r := range s.Replays {
				attempts += r.Attempts
				replayed += r.Replayed
			}
			if replayed == 0 {
				return 0, false
			}
			return float64(attempts) / float64(replayed), true
		},
		na: func(s *Summary) string {
			if len(s.Replays) == 0 {
				return "no dlq-replay action"
			}
			return "nothing replayed"
		}}
	m["replay.drain_time"] = metricDef{kind: Duration, better: lowerBetter,
		value: func(s *Summary) (float64, bool) {
			var worst float64
			for _, r := range s.Replays {
				if r.DrainTimeS == nil {
					return 0, false
				}
				worst = max(worst, *r.DrainTimeS)
			}
			return worst, len(s.Replays) > 0
		},
		na: noReplay}
	m["replay.load_peak_per_s"] = metricDef{kind: Ratio, better: lowerBetter,
		value: func(s *Summary) (float64, bool) {
			var peak float64
			for _, r := range s.Replays {
				peak = max(peak, r.LoadPeakPerS)
			}
			return peak, len(s.Replays) > 0
		},
		na: noReplay}
	for _, q := range percentiles {
		get := q.get
		m["replay.healthy.latency."+q.name] = metricDef{kind: Duration, better: lowerBetter,
			value: func(s *Summary) (float64, bool) {
				var v float64
				var n int64
				for i := range s.Replays {
					p := &s.Replays[i].HealthyLatencyS
					n += p.Count
					v = max(v, get(p))
				}
				return v, n > 0
			},
			na: func(s *Summary) string {
				if len(s.Replays) == 0 {
					return "no dlq-replay action"
				}
				return "no healthy deliveries during a replay"
			}}
	}
	for _, reason := range DeadLetterReasons {
		reason := reason
		m["dlq."+reason] = metricDef{kind: Count, better: lowerBetter,
			value: always(func(s *Summary) float64 { return float64(s.DeadLetterReasons[reason]) })}
	}
	metrics = m
	metricNames = make([]string, 0, len(m))
	for name := range m {
		metricNames = append(metricNames, name)
	}
	sort.Strings(metricNames)
}

var metricNames []string

// MetricNames returns every name gates and compare accept, sorted.
func MetricNames() []string {
	return append([]string(nil), metricNames...)
}

// MetricKind returns the unit family of a metric; ok is false for an unknown
// name.
func MetricKind(name string) (Kind, bool) {
	d, ok := metrics[name]
	return d.kind, ok
}

// Metric returns the named figure of s. ok is false when the figure does not
// apply to this run (drain_time when an outage never drained, lateness in a
// simulation); err is set for an unknown name.
func (s *Summary) Metric(name string) (v float64, ok bool, err error) {
	d, known := metrics[name]
	if !known {
		return 0, false, unknownMetricError(name)
	}
	if s == nil {
		return 0, false, nil
	}
	v, ok = d.value(s)
	return v, ok, nil
}

// NotApplicable says in words why a metric has no value for s.
func NotApplicable(s *Summary, name string) string {
	d, known := metrics[name]
	if !known {
		return "unknown metric"
	}
	if s == nil || d.na == nil {
		return "not applicable"
	}
	return d.na(s)
}

// unknownMetricError names the closest valid metric, then lists them all,
// because a typo in a gate is the common case.
func unknownMetricError(name string) error {
	msg := fmt.Sprintf("unknown metric %q", name)
	if near := nearestMetric(name); near != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", near)
	}
	return fmt.Errorf("%s; valid metrics: %s", msg, strings.Join(metricNames, ", "))
}

// nearestMetric returns the metric name closest to name by edit distance,
// or "" when nothing is reasonably close.
func nearestMetric(name string) string {
	if len(name) > 100 { // bound the work on absurd input
		name = name[:100]
	}
	best, bestDist := "", -1
	for _, cand := range metricNames {
		d := editDistance(strings.ToLower(name), cand)
		if bestDist < 0 || d < bestDist {
			best, bestDist = cand, d
		}
	}
	// Beyond about half the name's length, a suggestion is noise.
	if bestDist > max(3, len(name)/2) {
		return ""
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// amplificationValue is the overall amplification, unknown when not
// measured.
func amplificationValue(s *Summary) (float64, bool) {
	if s.Amplification == nil {
		return 0, false
	}
	return *s.Amplification, true
}

// drainTimeValue is the slowest outage's drain time, known when every
// outage drained.
func drainTimeValue(s *Summary) (float64, bool) {
	if s.DrainTimeS == nil || len(s.Outages) == 0 {
		return 0, false
	}
	return *s.DrainTimeS, true
}

// drainTimeNA says why a run has no drain time.
func drainTimeNA(s *Summary) string {
	if len(s.Outages) == 0 {
		return "no outages"
	}
	return "not drained"
}

// duplicatesValue is the duplicates the partners saw, unknown when not
// measured.
func duplicatesValue(s *Summary) (float64, bool) {
	if s.Duplicates == nil {
		return 0, false
	}
	return float64(*s.Duplicates), true
}

// duplicatesBeyondInFlight is the duplicates beyond the attempts whose
// outcome the dispatcher never learned.
func duplicatesBeyondInFlight(s *Summary) (float64, bool) {
	if s.Duplicates == nil {
		return 0, false
	}
	unknown := s.LostAcks
	for _, r := range s.Restarts {
		unknown += r.InFlight
	}
	return float64(max(0, *s.Duplicates-unknown)), true
}

// faultyAmplification is the faulty cohorts' attempts ÷ their deliveries
// that made an attempt.
func faultyAmplification(s *Summary) (float64, bool) {
	var attempts, attempted float64
	for _, c := range s.Cohorts {
		if !c.Faulty {
			continue
		}
		if c.Amplification == nil && c.Attempts > 0 {
			return 0, false // attempts it cannot tie to deliveries
		}
		if c.Amplification != nil && *c.Amplification > 0 {
			attempts += float64(c.Attempts)
			attempted += float64(c.Attempts) / *c.Amplification
		}
	}
	if attempted == 0 {
		return 0, false
	}
	return attempts / attempted, true
}
