package model

import (
	"strings"
	"testing"
	"time"
)

func TestParseBreakerCount(t *testing.T) {
	c, err := ParseBreakerCount(nil)
	if err != nil || c != 0 || c.String() != "all failures" || c.Names() != nil {
		t.Errorf("empty list: %v, %v; want 0, every failure", c, err)
	}
	c, err = ParseBreakerCount([]string{"5xx", "timeout", "Reset"})
	if err != nil || c != Count5xx|CountTimeout|CountReset {
		t.Errorf("5xx, timeout, Reset: %v, %v", c, err)
	}
	if got := strings.Join(c.Names(), ","); got != "5xx,timeout,reset" {
		t.Errorf("names %q", got)
	}
	if back, err := ParseBreakerCount(c.Names()); err != nil || back != c {
		t.Errorf("names do not read back: %v, %v", back, err)
	}
	for _, bad := range [][]string{{"503"}, {"5xx", "5xx"}, {""}} {
		if _, err := ParseBreakerCount(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestBreakerCountKinds(t *testing.T) {
	cases := []struct {
		o    Outcome
		want BreakerCount
	}{
		{Outcome{Status: 503}, Count5xx},
		{Outcome{Status: 500}, Count5xx},
		{Outcome{Status: 429, RetryAfter: "30"}, Count429},
		{Outcome{Status: 408}, Count4xx},
		{Outcome{Status: 422}, Count4xx},
		{Outcome{Status: 302}, CountOther},
		{Outcome{Err: ErrTimeout}, CountTimeout},
		{Outcome{Err: ErrReset}, CountReset},
		{Outcome{Err: ErrRefused}, CountRefused},
		{Outcome{}, CountOther},
	}
	noThrottle := CountAll &^ Count429
	for _, c := range cases {
		if got := KindOf(c.o); got != c.want {
			t.Errorf("%+v: kind %v, want %v", c.o, got, c.want)
		}
		if !CountAll.Counts(c.o) || !BreakerCount(0).Counts(c.o) {
			t.Errorf("%+v: not counted by default", c.o)
		}
		if noThrottle.Counts(c.o) == (c.want == Count429) {
			t.Errorf("%+v: counted %v without 429", c.o, noThrottle.Counts(c.o))
		}
	}
}

// Failures the breaker does not count neither trip it nor break a run of
// counted ones; a half-open probe that ends in one hands its slot back.
func TestBreakerIgnore(t *testing.T) {
	b := NewBreaker(BreakerSettings{Threshold: 3, Cooldown: 10 * time.Second, Count: CountAll &^ Count429})
	throttled := Outcome{Status: 429}
	if b.Counts(throttled) || !b.Counts(Outcome{Status: 503}) {
		t.Fatal("Counts disagrees with the settings")
	}
	at := t0
	for range 20 { // twenty 429s: still closed
		g, _ := b.Admit(at)
		b.Ignore(g, at)
		at = at.Add(time.Second)
	}
	if s := b.State(at); s != StateClosed {
		t.Fatalf("after ignored failures: %v, want closed", s)
	}
	// 503, 429, 503, 503: the 429 does not reset the run of three.
	for i, fail := range []bool{true, false, true, true} {
		g, _ := b.Admit(at)
		if fail {
			b.Record(g, false, at)
		} else {
			b.Ignore(g, at)
		}
		if i < 3 && b.State(at) != StateClosed {
			t.Fatalf("opened after call %d", i+1)
		}
	}
	if s := b.State(at); s != StateOpen {
		t.Fatalf("after three counted failures: %v, want open", s)
	}
	// Half-open: the probe ends in an ignored failure; the slot is free for
	// the next call, and a success closes it.
	at = at.Add(10 * time.Second)
	g, ok := b.Admit(at)
	if !ok {
		t.Fatal("probe refused")
	}
	if _, ok := b.Admit(at); ok {
		t.Fatal("second probe admitted while the first is out")
	}
	b.Ignore(g, at)
	if s := b.State(at); s != StateHalfOpen {
		t.Fatalf("after an ignored probe: %v, want half-open", s)
	}
	g, ok = b.Admit(at)
	if !ok {
		t.Fatal("no probe admitted after the ignored one")
	}
	b.Record(g, true, at)
	if s := b.State(at); s != StateClosed {
		t.Fatalf("after a successful probe: %v, want closed", s)
	}
}
