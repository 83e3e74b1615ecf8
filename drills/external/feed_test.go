package external

import (
	"net/http"
	"testing"
	"time"

	"github.com/stormdrill/stormdrill/drills"
	"github.com/stormdrill/stormdrill/fakepartner"
)

// TestExternalOldestAgesSplitReadyFromDelayed: the partner side tells a
// delivery never called yet (ready: new work waiting for a worker) from
// one called and not yet resolved (delayed: waiting for a retry). Before
// the split, an external run reported an oldest ready age of 0 whatever
// the backlog, and every waiting delivery as delayed.
func TestExternalOldestAgesSplitReadyFromDelayed(t *testing.T) {
	// Given one subscriber and three deliveries created at 0 s:
	// a is called at 1 s and answered 503, then delivered at 6 s;
	// b is first called at 4 s and delivered;
	// c is never called.
	d, err := drills.Parse("split.toml", []byte(`name = "split"
mode = "external"
duration = "8s"
sample_interval = "1s"
[system]
ingest_url = "http://127.0.0.1:9/events"
[source]
rate = "1/s"
[[partners]]
name = "acme"
`))
	if err != nil {
		t.Fatal(err)
	}
	specs, err := d.PartnerSpecs()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Unix(1_700_000_000, 0)
	at := func(s float64) time.Time { return start.Add(time.Duration(s * float64(time.Second))) }
	srv, err := fakepartner.NewServer(specs, fakepartner.ServerOptions{Seed: d.Seed}) // never listens: assemble reads its alerts
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{d: d, sys: &d.System, specs: specs, srv: srv, rec: newRecord(), start: start}
	for _, id := range []string{"a", "b", "c"} {
		h.rec.add(delivery{id: id})
	}
	call := func(key string, arrived, done float64, status int) fakepartner.Observation {
		return fakepartner.Observation{Cohort: "acme", Member: 0, Key: key, Arrived: at(arrived), Done: at(done),
			Status: status, Commit: status == 200, InFlight: 1}
	}
	h.rec.obs = []fakepartner.Observation{
		call("a", 1, 1.1, 503),
		call("b", 4, 4.1, 200),
		call("a", 6, 6.1, 200),
	}

	// When the run is assembled, sampled every second up to 8 s,
	run, err := assemble(h, nil, &injectStats{end: 8 * time.Second})
	if err != nil {
		t.Fatal(err)
	}

	// Then at each sample the oldest ready age is that of the oldest
	// delivery not called yet, and the oldest delayed age that of the
	// oldest called and unresolved one.
	want := []struct {
		t              float64
		ready, delayed float64 // seconds
		nReady         float64
	}{
		{1, 1, 1, 2}, // a is called at 1 s: called and unresolved (in flight)
		{2, 2, 2, 2}, // a failed and waits for its retry; b, c never called
		{3, 3, 3, 2}, //
		{4, 4, 4, 1}, // b is called at 4 s (in flight at the sample)
		{5, 5, 5, 1}, // b delivered; a still delayed
		{6, 6, 6, 1}, // a's retry arrives at 6 s: in flight, still unresolved
		{7, 7, 0, 1}, // a delivered; c never called
		{8, 8, 0, 1}, //
	}
	if len(run.Timeseries.Samples) != len(want) {
		t.Fatalf("%d samples, want %d", len(run.Timeseries.Samples), len(want))
	}
	for i, w := range want {
		s := run.Timeseries.Samples[i]
		if s.T != w.t || s.OldestReadyAgeS != w.ready || s.OldestDelayedAgeS != w.delayed || s.Ready != w.nReady {
			t.Errorf("sample %d: t %v ready age %v delayed age %v ready %v; want t %v ready age %v delayed age %v ready %v",
				i, s.T, s.OldestReadyAgeS, s.OldestDelayedAgeS, s.Ready, w.t, w.ready, w.delayed, w.nReady)
		}
	}
	if got := run.Summary.OldestReadyAgeMaxS; got != 8 {
		t.Errorf("oldest_ready_age_max_s %v, want 8 (c, never called)", got)
	}
	if got := run.Summary.OldestDelayedAgeMaxS; got != 6 {
		t.Errorf("oldest_delayed_age_max_s %v, want 6 (a, waiting for its retry)", got)
	}
}

// The feed reads a Retry-After as the dispatcher does: delta-seconds up
// to the 24 h cap and HTTP-dates to the nanosecond from the moment the
// answer was sent; beyond the cap, in the past or unreadable, no bound.
func TestFeedRetryAfter(t *testing.T) {
	at := time.Date(2026, 1, 1, 12, 0, 0, 700_000_000, time.UTC)
	date := func(d time.Duration) string { return at.Add(d).UTC().Format(http.TimeFormat) }
	tests := []struct {
		v    string
		want int64
	}{
		{"30", int64(30 * time.Second)},
		{"86400", int64(24 * time.Hour)},
		{"86401", -1}, // past the 24 h cap: not trusted
		{date(30 * time.Second), int64(29_300 * time.Millisecond)},
		{date(25 * time.Hour), -1},
		{date(-time.Minute), -1},
		{"Thursday", -1},
		{"", -1},
	}
	for _, tt := range tests {
		if got := parseRetryAfter(tt.v, at); got != tt.want {
			t.Errorf("parseRetryAfter(%q) = %v, want %v", tt.v, time.Duration(got), time.Duration(tt.want))
		}
	}
}
