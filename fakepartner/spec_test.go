package fakepartner

import (
	"strings"
	"testing"
	"time"
)

func validSpec() Spec {
	return Spec{Name: "acme", Count: 3, Latency: Dist{Kind: DistLognormal, P50: 80 * ms, P99: 600 * ms}}
}

func TestSpecValidate(t *testing.T) {
	tests := []struct {
		name   string
		modify func(s *Spec)
		want   string // substring of the error; "" means valid
	}{
		{"valid", func(s *Spec) {}, ""},
		{"valid with every outage kind", func(s *Spec) {
			s.Outages = []Outage{
				{Start: 0, For: time.Second, Kind: OutageUnavailable},
				{Start: 0, For: time.Second, Kind: OutageTimeout, Members: 3},
				{Start: 0, For: time.Second, Kind: OutageReset},
				{Start: 0, For: time.Second, Kind: OutageThrottle, RetryAfter: "date:30s"},
				{Start: 0, For: time.Second, Kind: OutageSlow, Factor: 10},
				{Start: 0, For: time.Second, Kind: OutageFlap, Period: 10 * time.Second},
			}
		}, ""},
		{"no name", func(s *Spec) { s.Name = "" }, "name is empty"},
		{"name with a slash", func(s *Spec) { s.Name = "a/b" }, "part of a URL path"},
		{"count zero", func(s *Spec) { s.Count = 0 }, `partner "acme": count must be between 1`},
		{"bad latency is named", func(s *Spec) { s.Latency.P99 = ms }, "latency: lognormal: p99"},
		{"bad network delay is named", func(s *Spec) { s.NetworkDelay = Dist{Kind: DistUniform, Min: 2, Max: 1} }, "network_delay: uniform"},
		{"probability above 1", func(s *Spec) { s.TransientErrors = 1.5 }, "transient_errors must be a probability"},
		{"negative probability", func(s *Spec) { s.PermanentErrors = -0.1 }, "permanent_errors must be a probability"},
		{"concurrency negative", func(s *Spec) { s.Concurrency = -1 }, "concurrency must be between"},
		{"reject without a limit", func(s *Spec) { s.RejectWhenBusy = true }, "rejecting when busy needs a concurrency limit"},
		{"outage without length", func(s *Spec) { s.Outages = []Outage{{Start: time.Second}} }, "outage 1 (unavailable): for: must be greater than 0"},
		{"outage hits more members than exist", func(s *Spec) { s.Outages = []Outage{{For: time.Second, Members: 4}} }, "members: 4 is more than the cohort's count (3)"},
		{"slow without factor", func(s *Spec) { s.Outages = []Outage{{For: time.Second, Kind: OutageSlow}} }, "factor: slow outages need a factor of at least 1"},
		{"slow factor below 1 (a speed-up)", func(s *Spec) { s.Outages = []Outage{{For: time.Second, Kind: OutageSlow, Factor: 0.5}} }, "factor: slow outages need a factor of at least 1"},
		{"flap without period", func(s *Spec) { s.Outages = []Outage{{For: time.Second, Kind: OutageFlap}} }, "period: flap outages need a period"},
		{"throttle bad retry_after", func(s *Spec) {
			s.Outages = []Outage{{For: time.Second, Kind: OutageThrottle, RetryAfter: "date:soon"}}
		}, `retry_after: "date:soon"`},
		{"throttle negative seconds", func(s *Spec) {
			s.Outages = []Outage{{For: time.Second, Kind: OutageThrottle, RetryAfter: "-5"}}
		}, `retry_after: "-5": want seconds`},
		{"factor on the wrong kind", func(s *Spec) {
			s.Outages = []Outage{{For: time.Second, Kind: OutageUnavailable, Factor: 2}}
		}, "factor: applies only to kind slow, not unavailable"},
		{"retry_after on the wrong kind", func(s *Spec) {
			s.Outages = []Outage{{For: time.Second, Kind: OutageReset, RetryAfter: "5"}}
		}, "retry_after: applies only to kind throttle, not reset"},
	}
	for _, tt := range tests {
		s := validSpec()
		tt.modify(&s)
		err := s.Validate()
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: unexpected error %v", tt.name, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: error %v, want it to contain %q", tt.name, err, tt.want)
		}
	}
}

// Every problem is reported, not just the first.
func TestSpecValidateReportsAll(t *testing.T) {
	s := Spec{Name: "x", Count: 0, TransientErrors: 2}
	err := s.Validate()
	if err == nil || !strings.Contains(err.Error(), "count") || !strings.Contains(err.Error(), "transient_errors") {
		t.Fatalf("error %v, want both count and transient_errors", err)
	}
}

func TestFaultAt(t *testing.T) {
	s := validSpec()
	s.Count = 10
	s.Outages = []Outage{
		{Start: 10 * time.Second, For: 20 * time.Second, Kind: OutageUnavailable, Members: 2},
		{Start: 100 * time.Second, For: 40 * time.Second, Kind: OutageFlap, Period: 10 * time.Second},
		{Start: 100 * time.Second, For: 40 * time.Second, Kind: OutageSlow, Factor: 3},
	}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	sec := time.Second
	tests := []struct {
		name   string
		member int
		t      time.Duration
		want   OutageKind
		active bool
	}{
		{"before the window", 0, 10*sec - 1, 0, false},
		{"window start is inside", 0, 10 * sec, OutageUnavailable, true},
		{"last instant inside", 1, 30*sec - 1, OutageUnavailable, true},
		{"window end is outside", 0, 30 * sec, 0, false},
		{"member 2 is not hit (members = 2)", 2, 20 * sec, 0, false},
		{"flap down half, first outage in list order wins", 5, 100 * sec, OutageFlap, true},
		{"flap last instant of the down half", 5, 105*sec - 1, OutageFlap, true},
		{"flap up half: the overlapping slow governs", 5, 105 * sec, OutageSlow, true},
		{"flap second period down again", 5, 110 * sec, OutageFlap, true},
		{"after both", 5, 140 * sec, 0, false},
	}
	for _, tt := range tests {
		o, ok := s.FaultAt(tt.member, tt.t)
		if ok != tt.active || (ok && o.Kind != tt.want) {
			t.Errorf("%s: FaultAt(%d, %v) = %v, %v; want %v, %v", tt.name, tt.member, tt.t, o.Kind, ok, tt.want, tt.active)
		}
	}
	if !s.Faulty() || (&Spec{}).Faulty() {
		t.Error("Faulty: want true with outages, false without")
	}
}

func TestParseOutageKind(t *testing.T) {
	for k := range OutageKind(len(OutageKinds)) {
		if got, err := ParseOutageKind(k.String()); err != nil || got != k {
			t.Errorf("ParseOutageKind(%q) = %v, %v", k, got, err)
		}
	}
	if _, err := ParseOutageKind("down"); err == nil {
		t.Error("ParseOutageKind(down): want an error")
	}
}
