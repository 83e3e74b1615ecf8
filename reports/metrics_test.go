package reports

import (
	"sort"
	"testing"
)

func TestMetricNames(t *testing.T) {
	names := MetricNames()
	if !sort.StringsAreSorted(names) {
		t.Error("MetricNames is not sorted")
	}
	// Every name the issue lists, with its kind.
	want := map[string]Kind{
		"created": Count, "delivered": Count, "dead_lettered": Count, "pending": Count, "lost": Count,
		"attempts": Count, "first_attempts": Count, "retries": Count, "amplification": Ratio,
		"drain_time": Duration, "oldest_ready_age": Duration, "oldest_delayed_age": Duration,
		"healthy_within_slo": Fraction, "duplicates": Count, "duplicates_beyond_in_flight": Count, "lost_acks": Count,
		"retry_after_ignored": Count, "source_held_back": Duration, "source_held_back_max": Duration,
		"peak_attempts_per_s": Ratio, "peak_pending": Count, "breaker_transitions": Count,
		"lateness.p99": Duration, "faulty.amplification": Ratio, "faulty.dead_lettered": Count,
		"replay.replayed": Count, "replay.delivered": Count, "replay.dead_lettered": Count, "replay.pending": Count,
		"replay.amplification": Ratio, "replay.drain_time": Duration, "replay.load_peak_per_s": Ratio,
	}
	for _, q := range []string{"p50", "p90", "p99", "p999", "max"} {
		want["healthy.latency."+q] = Duration
		want["healthy.outage.latency."+q] = Duration
		want["replay.healthy.latency."+q] = Duration
	}
	for _, r := range DeadLetterReasons {
		want["dlq."+r] = Count
	}
	if len(names) != len(want) {
		t.Errorf("%d names, want %d: %v", len(names), len(want), names)
	}
	for name, kind := range want {
		if k, ok := MetricKind(name); !ok || k != kind {
			t.Errorf("MetricKind(%q) = %v, %v; want %v", name, k, ok, kind)
		}
	}
	names[0] = "mutated"
	if MetricNames()[0] == "mutated" {
		t.Error("MetricNames returns its internal slice")
	}
}

func TestNearestMetric(t *testing.T) {
	tests := []struct{ in, want string }{
		{"healthy.latncy.p999", "healthy.latency.p999"}, // one deletion
		{"drain-time", "drain_time"},                    // dash for underscore
		{"DUPLICATES", "duplicates"},                    // case
		{"zzzzzzzzzzzzzzzzzzzzzzzz", ""},                // nothing close
	}
	for _, tt := range tests {
		if got := nearestMetric(tt.in); got != tt.want {
			t.Errorf("nearestMetric(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
