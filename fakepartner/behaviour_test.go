package fakepartner

import (
	"fmt"
	"net/http"
	"testing"
	"time"
)

// The simulated partner and the HTTP server step the same Behaviour: with
// the same seed, the same deliveries at the same drill times get the same
// answers, Retry-After dates included, through transient errors, bad data,
// a throttle, a reset and a slowdown.
func TestSimAndServerAnswerAlike(t *testing.T) {
	const seed = 7
	sec := time.Second
	spec := Spec{
		Name: "acme", Count: 1,
		Latency:         Dist{Kind: DistUniform, Min: ms, Max: 3 * ms},
		TransientErrors: 0.3, PermanentErrors: 0.2,
		Outages: []Outage{
			{Start: 10 * sec, For: 5 * sec, Kind: OutageThrottle, RetryAfter: "date:30s"},
			{Start: 20 * sec, For: 2 * sec, Kind: OutageReset},
			{Start: 25 * sec, For: 5 * sec, Kind: OutageSlow, Factor: 2},
		},
	}
	if err := spec.Validate(); err != nil {
		t.Fatal(err)
	}
	sim := NewSim(&spec, 0, SubscriberRand(seed, spec.Name, 0))
	sim.SetSeed(seed)

	clock := &fakeClock{t: SimEpoch}
	_, base, _ := startServer(t, []Spec{spec}, ServerOptions{Seed: seed, Now: clock.Now, Start: SimEpoch})
	c := client(5 * sec)

	statuses := map[string]int{}
	for i := range 40 {
		at := time.Duration(i) * sec
		id := fmt.Sprintf("evt-%06d:acme-0", i)
		call := sim.BeginKey(at, KeyHash(id))
		want := sim.Finish(&call, at+call.Latency)
		clock.Set(SimEpoch.Add(at))
		got := post(c, base+"/p/acme", id, "{}")
		switch {
		case want.Kind == ResultReset:
			if got.err == nil {
				t.Errorf("call %d at %v: server answered %d, sim reset the connection", i, at, got.status)
			}
			statuses["reset"]++
		case got.err != nil:
			t.Errorf("call %d at %v: server failed (%v), sim answered %d", i, at, got.err, want.Status)
		case got.status != want.Status || got.retryAfter != want.RetryAfter:
			t.Errorf("call %d at %v: server %d Retry-After %q, sim %d Retry-After %q",
				i, at, got.status, got.retryAfter, want.Status, want.RetryAfter)
		default:
			statuses[http.StatusText(got.status)]++
		}
	}
	// The comparison means something only if every kind of answer occurred.
	for _, k := range []string{"OK", "Service Unavailable", "Unprocessable Entity", "Too Many Requests", "reset"} {
		if statuses[k] == 0 {
			t.Errorf("no %q answer in the sequence %v; the test compares too little", k, statuses)
		}
	}
}

func TestRetryAfterSecondsOnTheWire(t *testing.T) {
	for _, tc := range []struct {
		speed      float64
		secs, want uint64
	}{
		{1, 5, 5}, {0, 5, 5}, // speed 1: unchanged
		{60, 0, 0},   // zero stays zero
		{60, 5, 1},   // rounds up: never earlier than asked
		{60, 120, 2}, // exact
		{60, 121, 3}, // a part of a second is a second
		{0.1, 5, 50}, // slowed down: longer on the wall
	} {
		if got := (WallClock{Speed: tc.speed}).RetryAfterSeconds(tc.secs); got != tc.want {
			t.Errorf("speed %v: %d drill seconds -> %d wall seconds, want %d", tc.speed, tc.secs, got, tc.want)
		}
	}
}
