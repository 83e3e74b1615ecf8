package model

import (
	"testing"
	"time"
)

// benchSetup is a retryable outcome with both guards present and full
// jitter: the hot path of the dispatcher.
func benchSetup() (Policy, Delivery, Outcome, Guards) {
	p := Policy{
		MaxAttempts:    8,
		Backoff:        Backoff{Base: time.Second, Cap: 5 * time.Minute, Jitter: JitterFull},
		DeliveryWindow: 30 * time.Minute,
	}
	d := Delivery{JitterKey: JitterKeyOf("evt-000123:acme-0"), Attempts: 3, FirstSeen: t0.Add(-time.Minute)}
	o := Outcome{Status: 503, RetryAfter: "7"}
	g := Guards{Breaker: NewBreaker(BreakerSettings{Trip: TripRate}), Budget: NewBudget(100, 0.1)}
	return p, d, o, g
}

func BenchmarkDecide(b *testing.B) {
	p, d, o, g := benchSetup()
	u := 0.0
	b.ReportAllocs()
	for b.Loop() {
		u += 0.0001
		if u >= 1 {
			u = 0
		}
		dec := p.Decide(d, o, t0, u, g)
		if dec.Action != ActReschedule {
			b.Fatalf("unexpected %v", dec)
		}
	}
}

func BenchmarkBreakerAdmitRecord(b *testing.B) {
	br := NewBreaker(BreakerSettings{Trip: TripRate, MinCalls: 20, Ratio: 0.5})
	now := t0
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		now = now.Add(time.Millisecond)
		i++
		if gen, ok := br.Admit(now); ok {
			br.Record(gen, i%3 != 0, now) // a third fail: below the ratio, stays closed
		}
	}
}

func TestZeroAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	p, d, o, g := benchSetup()
	if n := testing.AllocsPerRun(1000, func() { p.Decide(d, o, t0, 0.3, g) }); n != 0 {
		t.Errorf("Decide: %v allocs per call, want 0", n)
	}
	for _, s := range []BreakerSettings{{Trip: TripConsecutive}, {Trip: TripWindow}, {Trip: TripRate}} {
		br := NewBreaker(s)
		now := t0
		i := 0
		if n := testing.AllocsPerRun(1000, func() {
			now = now.Add(time.Second)
			i++
			if gen, ok := br.Admit(now); ok {
				br.Record(gen, i%2 == 0, now)
			}
		}); n != 0 {
			t.Errorf("%v: Admit+Record %v allocs per call, want 0", s.Trip, n)
		}
	}
}
