package model

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

func oneLine(s string) bool { return s != "" && !strings.Contains(s, "\n") }

// Every declared jitter kind is complete: a name that parses back to it, a
// one-line doc, a delay and plan bounds. A kind added without any of these
// fails here.
func TestJitterKindsDeclared(t *testing.T) {
	for i := range JitterKinds {
		k := &JitterKinds[i]
		switch {
		case k.Jitter != Jitter(i):
			t.Errorf("JitterKinds[%d] declares %d", i, k.Jitter)
		case !oneLine(k.Name) || !oneLine(k.Doc):
			t.Errorf("JitterKinds[%d]: name %q, doc %q: want one line each", i, k.Name, k.Doc)
		case k.Delay == nil:
			t.Errorf("%s: no Delay", k.Name)
		case k.Bounds == nil:
			t.Errorf("%s: no plan Bounds", k.Name)
		}
		if j, err := ParseJitter(k.Name); err != nil || j != Jitter(i) {
			t.Errorf("ParseJitter(%q) = %v, %v", k.Name, j, err)
		}
	}
}

// The plan's bounds hold every delay a kind draws, and are reached: the
// smallest and largest of many draws lie within 2% of the range's width
// (or 1ms) from its ends, for every kind and the first 14 retries.
func TestJitterBoundsHoldTheDelays(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range JitterKinds {
		b := Backoff{Base: time.Second, Cap: time.Hour, Multiplier: 2, Jitter: Jitter(i), JitterRatio: 0.3}
		var prev DelayRange
		for n := 1; n <= 14; n++ {
			r := b.DelayRange(n, prev)
			if !(r.Min <= r.Typical && r.Typical <= r.Max) {
				t.Fatalf("%s n=%d: range %+v out of order", b.Jitter, n, r)
			}
			lo, hi := MaxDuration, time.Duration(0)
			for j := range 4000 {
				// The previous delay is any value of its own range; every
				// fourth draw tries each end of both ranges.
				u := rng.Float64()
				p := prev.Min + time.Duration(rng.Float64()*float64(prev.Max-prev.Min))
				switch j % 4 {
				case 0:
					u, p = 1-u/1000, prev.Max
				case 1:
					u, p = u/1000, prev.Min
				}
				d := b.Delay(n, p, JitterKeyOf(fmt.Sprintf("evt-%d:acme-%d", j, n)), u)
				if d < r.Min || d > r.Max {
					t.Fatalf("%s n=%d: delay %v outside the plan's range [%v, %v]", b.Jitter, n, d, r.Min, r.Max)
				}
				lo, hi = min(lo, d), max(hi, d)
			}
			slack := max(time.Millisecond, (r.Max-r.Min)/50)
			if lo-r.Min > slack || r.Max-hi > slack {
				t.Errorf("%s n=%d: draws span [%v, %v], the plan says [%v, %v]: the bounds are not tight", b.Jitter, n, lo, hi, r.Min, r.Max)
			}
			prev = r
		}
	}
}

// Every declared trip rule is complete, and its plan effect is right: a
// breaker on a partner that fails every call opens after exactly
// FailuresToOpen failures.
func TestTripRulesDeclared(t *testing.T) {
	for i := range TripRules {
		r := &TripRules[i]
		switch {
		case r.Rule != TripRule(i):
			t.Errorf("TripRules[%d] declares %d", i, r.Rule)
		case !oneLine(r.Name) || !oneLine(r.Doc):
			t.Errorf("TripRules[%d]: name %q, doc %q: want one line each", i, r.Name, r.Doc)
		case r.Check == nil || r.trips == nil:
			t.Errorf("%s: no Check or no behaviour", r.Name)
		case r.FailuresToOpen == nil || r.FluidOpens == nil:
			t.Errorf("%s: no plan effect (FailuresToOpen, FluidOpens)", r.Name)
			continue
		}
		if got, err := ParseTripRule(r.Name); err != nil || got != TripRule(i) {
			t.Errorf("ParseTripRule(%q) = %v, %v", r.Name, got, err)
		}
		s := BreakerSettings{Trip: TripRule(i), Threshold: 4, MinCalls: 7, Window: time.Hour}
		want := s.FailuresToOpen()
		br := NewBreaker(s)
		now := time.Unix(1000, 0)
		calls := 0
		for br.State(now) == StateClosed && calls < 100 {
			gen, _ := br.Admit(now)
			br.Record(gen, false, now)
			calls++
			now = now.Add(time.Second)
		}
		if calls != want {
			t.Errorf("%s: opened after %d failures, FailuresToOpen says %d", r.Name, calls, want)
		}
		// The plan's fluid model agrees: a run of failures (or a window of
		// nothing but failures) opens it at the same count.
		s.defaults()
		for _, n := range []int{want - 1, want} {
			f := float64(n)
			if got := r.FluidOpens(&s, f, f, f); got != (n == want) {
				t.Errorf("%s: the plan's fluid model after %d failures in a row opens: %v", r.Name, n, got)
			}
		}
	}
}

// A trip rule checks the settings it reads, and only those.
func TestTripRuleProblems(t *testing.T) {
	tests := []struct {
		s    BreakerSettings
		keys string
	}{
		{BreakerSettings{Trip: TripConsecutive, Threshold: 0, Window: -1, Ratio: 3}, "threshold"},
		{BreakerSettings{Trip: TripWindow, Threshold: 0, Window: 0}, "threshold window"},
		{BreakerSettings{Trip: TripRate, Threshold: 0, Window: time.Second, Ratio: 0, MinCalls: 0}, "ratio min_calls"},
		{BreakerSettings{Trip: TripRate, Window: time.Second, Ratio: 1, MinCalls: 1}, ""},
	}
	for _, tt := range tests {
		var keys []string
		for _, p := range tt.s.Problems() {
			keys = append(keys, p.Key)
		}
		if got := strings.Join(keys, " "); got != tt.keys {
			t.Errorf("%s %+v: problems with %q, want %q", tt.s.Trip, tt.s, got, tt.keys)
		}
	}
}

// A trip rule's Uses are the settings its Check validates: with every
// setting out of range, it reports exactly those keys.
func TestTripRuleUsesWhatItChecks(t *testing.T) {
	for i := range TripRules {
		r := &TripRules[i]
		var keys []string
		for _, p := range r.Check(&BreakerSettings{Trip: TripRule(i), Threshold: 0, Window: -1, Ratio: 2, MinCalls: 0}) {
			keys = append(keys, p.Key)
		}
		if !slices.Equal(keys, r.Uses) {
			t.Errorf("%s: Check reports %q, Uses declares %q", r.Name, keys, r.Uses)
		}
	}
}

// NeedsID is declared exactly for the kinds whose delay reads the delivery
// id: a kind that reads it without saying so would get "" in the
// simulator and the real id live.
func TestJitterNeedsIDDeclared(t *testing.T) {
	for i := range JitterKinds {
		k := &JitterKinds[i]
		b := Backoff{Base: time.Second, Cap: time.Hour, Multiplier: 2, Jitter: Jitter(i), JitterRatio: 0.3}
		reads := false
		for n := 1; n <= 8 && !reads; n++ {
			for j := range 50 {
				a := b.Delay(n, time.Second, JitterKeyOf(fmt.Sprintf("evt-%d:acme-0", j)), 0.37)
				if a != b.Delay(n, time.Second, JitterKeyOf(""), 0.37) {
					reads = true
					break
				}
			}
		}
		if reads != k.NeedsID {
			t.Errorf("%s: its delay reads the delivery id: %v; NeedsID says %v", k.Name, reads, k.NeedsID)
		}
	}
}

// Every dead-letter reason is declared once, with a one-line doc; with
// every setting that can produce them on, none is impossible, and with
// them off only bad data still is possible.
func TestReasonKindsDeclared(t *testing.T) {
	seen := map[Reason]bool{}
	on := &ReasonSettings{MaxAttempts: 3, DeliveryWindow: time.Hour, BreakerDeadLetter: true, BudgetDeadLetter: true, RejectWhenFull: true}
	for i, k := range ReasonKinds {
		if k.Reason == ReasonNone || seen[k.Reason] || !oneLine(k.Doc) || Reasons[i] != k.Reason {
			t.Errorf("ReasonKinds[%d] %q: want a new reason with a one-line doc, in Reasons' order", i, k.Reason)
		}
		seen[k.Reason] = true
		if why := k.Reason.NeverUnder(on); why != "" {
			t.Errorf("%s: impossible with every setting on: %s", k.Reason, why)
		}
		if why := k.Reason.NeverUnder(&ReasonSettings{}); (why == "") != k.BadData {
			t.Errorf("%s: with every setting off, impossible because %q; bad data: %v", k.Reason, why, k.BadData)
		}
	}
}
