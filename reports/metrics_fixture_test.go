package reports_test

import (
	"math"
	"strings"
	"testing"

	"github.com/stormdrill/stormdrill/reports"
	"github.com/stormdrill/stormdrill/reports/internal/fixture"
)

func TestMetricValues(t *testing.T) {
	s := fixture.Summary()
	tests := []struct {
		name string
		v    float64
		ok   bool
	}{
		{"created", 1440000, true},                 // deliveries
		{"retries", 60123, true},                   // attempts
		{"dlq.window-expired", 700, true},          // reason in the map
		{"dlq.queue-full", 0, true},                // reason absent from the map is 0
		{"breaker_transitions", 55, true},          // a count of a list
		{"faulty.dead_lettered", 750, true},        // acme 150 + globex 600; healthy left out
		{"duplicates_beyond_in_flight", 3, true},   // 7 duplicates − 4 in flight at the restart
		{"drain_time", 0, false},                   // globex never drained
		{"healthy.latency.p999", 2.5, true},        // percentile
		{"healthy.outage.latency.max", 75.5, true}, // outage percentile
		{"lateness.p99", 0.0042, true},             // live only
		{"oldest_delayed_age", 1801.2, true},       // max age
	}
	for _, tt := range tests {
		v, ok, err := s.Metric(tt.name)
		if err != nil || ok != tt.ok || (ok && v != tt.v) {
			t.Errorf("Metric(%q) = %v, %v, %v; want %v, %v", tt.name, v, ok, err, tt.v, tt.ok)
		}
	}
	// Lost acks are attempts whose outcome the dispatcher never learned,
	// like those in flight at a restart: 7 − 4 − 2.
	s.LostAcks = 2
	if v, _, _ := s.Metric("duplicates_beyond_in_flight"); v != 1 {
		t.Errorf("duplicates_beyond_in_flight with 2 lost acks = %v, want 1", v)
	}
	if v, _, _ := s.Metric("lost_acks"); v != 2 {
		t.Errorf("lost_acks = %v, want 2", v)
	}
	// More in flight than duplicates: never negative.
	s.Restarts = append(s.Restarts, reports.Restart{InFlight: 100})
	if v, _, _ := s.Metric("duplicates_beyond_in_flight"); v != 0 {
		t.Errorf("duplicates_beyond_in_flight = %v, want 0", v)
	}
	if _, _, err := s.Metric("nope"); err == nil || !strings.Contains(err.Error(), "valid metrics") {
		t.Errorf("unknown metric: err %v", err)
	}
	var nilSummary *reports.Summary
	if _, ok, err := nilSummary.Metric("lost"); ok || err != nil {
		t.Errorf("nil summary: ok %v err %v", ok, err)
	}
}

func TestFaultyAmplificationIgnoresHealthyCohorts(t *testing.T) {
	s := fixture.Summary()
	// acme made 30,000 attempts for 7,200 deliveries, globex 30,123 for
	// 7,200: together 60,123 ÷ 14,400. The healthy cohort's 1.01 is left out.
	v, ok, err := s.Metric("faulty.amplification")
	if err != nil || !ok || math.Abs(v-60123.0/14400) > 1e-4 {
		t.Fatalf("faulty.amplification = %v, %v, %v; want %.5f", v, ok, err, 60123.0/14400)
	}
	none := &reports.Summary{Cohorts: []reports.Cohort{{Name: "healthy", Attempts: 10, Amplification: new(1.0)}}}
	if _, ok, _ := none.Metric("faulty.amplification"); ok {
		t.Error("faulty.amplification applies to a drill without faulty cohorts")
	}
}
