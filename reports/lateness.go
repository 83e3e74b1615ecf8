package reports

import "fmt"

// LateShare is the share of the smallest latency a report gives that a
// live run's injection lateness p99 may reach before the run is flagged:
// every latency is measured from the schedule, so lateness of that size
// moves the smallest figures by a tenth or more.
const LateShare = 0.1

// LateInjection returns the late-injection finding of a live run whose
// injection lateness p99 exceeds LateShare of the smallest latency its
// report gives (the healthy p50s and the cohorts' p50s), or nil. Lateness
// is wall time and latencies drill time, so the latency is divided by the
// run's speed. The finding is advisory: the figures are doubtful, not the
// policy, and a loaded machine must not fail a gate that held.
func LateInjection(s *Summary) *Finding {
	if s == nil || s.Lateness == nil || s.Lateness.Count == 0 {
		return nil
	}
	smallest, which := 0.0, ""
	consider := func(p Percentiles, name string) {
		if p.Count > 0 && p.P50 > 0 && (which == "" || p.P50 < smallest) {
			smallest, which = p.P50, name
		}
	}
	consider(s.HealthyLatencyS, "the healthy latency p50")
	consider(s.HealthyLatencyOutageS, "the healthy latency p50 during outages")
	for _, c := range s.Cohorts {
		consider(c.LatencyS, "cohort "+c.Name+"'s latency p50")
	}
	if which == "" {
		return nil
	}
	speed := 1.0
	if s.Speed > 0 {
		speed = s.Speed
	}
	limit := LateShare * smallest / speed
	if s.Lateness.P99 <= limit {
		return nil
	}
	return &Finding{Kind: FindingLateInjection, Count: 1, Advisory: true,
		Message: fmt.Sprintf("lateness p99 %s exceeds %s, %.0f%% of %s: latencies are not trustworthy",
			FormatDuration(s.Lateness.P99), FormatDuration(limit), LateShare*100, which)}
}
