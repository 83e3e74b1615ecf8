package fakepartner

import (
	"net/http"
	"testing"
	"time"
)

// An outage with answer_after answers its failure after a latency drawn
// from that distribution, in the simulated partner and over HTTP.
func TestAnswerAfter(t *testing.T) {
	sec := time.Second
	after := Dist{Kind: DistUniform, Min: 150 * time.Millisecond, Max: 250 * time.Millisecond}
	spec := Spec{Name: "acme", Count: 1, Latency: Dist{Value: time.Millisecond},
		Outages: []Outage{{Start: 10 * sec, For: 20 * sec, Kind: OutageUnavailable, AnswerAfter: &after}}}
	if err := spec.Validate(); err != nil {
		t.Fatal(err)
	}
	t.Run("sim", func(t *testing.T) {
		sim := NewSim(&spec, 0, SubscriberRand(1, spec.Name, 0))
		for i := range 50 {
			c := sim.Begin(11*sec + time.Duration(i)*time.Millisecond)
			if c.Result.Status != http.StatusServiceUnavailable || c.Latency < after.Min || c.Latency > after.Max {
				t.Fatalf("call %d: %d after %v, want 503 after 150..250ms", i, c.Result.Status, c.Latency)
			}
		}
		if c := sim.Begin(31 * sec); c.Result.Status != http.StatusOK || c.Latency > 2*time.Millisecond {
			t.Errorf("after the outage: %d after %v, want 200 at the partner's 1ms", c.Result.Status, c.Latency)
		}
	})
	t.Run("http", func(t *testing.T) {
		_, base, clock := startServer(t, []Spec{spec}, ServerOptions{})
		clock.Set(t0.Add(11 * sec))
		began := time.Now()
		a := post(client(5*sec), base+"/p/acme", "d1", "{}")
		took := time.Since(began)
		if a.err != nil || a.status != http.StatusServiceUnavailable || took < after.Min {
			t.Fatalf("got %d (%v) after %v, want 503 after at least %v", a.status, a.err, took, after.Min)
		}
	})
	t.Run("only kinds that answer", func(t *testing.T) {
		bad := spec
		bad.Outages = []Outage{{Start: 0, For: sec, Kind: OutageTimeout, AnswerAfter: &after}}
		if err := bad.Validate(); err == nil {
			t.Error("a timeout outage with answer_after is accepted")
		}
		bad.Outages = []Outage{{Start: 0, For: sec, Kind: OutageReset, AnswerAfter: &Dist{Kind: DistUniform, Min: sec, Max: 0}}}
		if err := bad.Validate(); err == nil {
			t.Error("an invalid answer_after distribution is accepted")
		}
	})
}
