package model

import (
	"testing"
	"time"
)

// Capped took the float path for n = 1 with a non-integer multiplier, and
// float64(base) rounds up near MaxInt64: it returned MaxDuration instead of
// base.
func TestRegression_CappedFirstAttemptNearMaxInt(t *testing.T) {
	tests := []struct {
		b    Backoff
		want time.Duration
		why  string
	}{
		{Backoff{Base: MaxDuration - 1, Multiplier: 1.5}, MaxDuration - 1, "rounds up to 2^63 as a float"},
		{Backoff{Base: 1<<62 + 3, Cap: 1<<62 + 5, Multiplier: 1.5}, 1<<62 + 3, "rounds to the cap as a float"},
		{Backoff{Base: MaxDuration - 1, Multiplier: 2}, MaxDuration - 1, "integer path was already exact"},
	}
	for _, tt := range tests {
		if got := tt.b.Capped(1); got != tt.want {
			t.Errorf("%s: Capped(1) = %d, want %d", tt.why, got, tt.want)
		}
	}
}

// NewBudget truncated maxTokens×1000 and tokenRatio×1000 to milli-tokens,
// and the float product is often a hair under the integer (1.001 × 1000 =
// 1000.9999999999999): the bucket was smaller and refilled slower than
// configured.
func TestRegression_BudgetMilliTokensTruncated(t *testing.T) {
	tests := []struct {
		max, ratio float64
		afterFFS   float64 // tokens after failure, failure, success
		why        string
	}{
		{4.02, 1.001, 3.021, "both truncated: 4.019 and 1"},
		{32.3, 2.01, 32.3, "both truncated: 32.299 and 2.009; refill clamps at max"},
		{10, 0.1, 8.1, "exact already"},
	}
	for _, tt := range tests {
		b := NewBudget(tt.max, tt.ratio)
		if got := b.Tokens(); got != tt.max {
			t.Errorf("%s: NewBudget(%v, %v) starts with %v tokens", tt.why, tt.max, tt.ratio, got)
		}
		b.RecordFailure()
		b.RecordFailure()
		b.RecordSuccess()
		if got := b.Tokens(); got != tt.afterFFS {
			t.Errorf("%s: after f f s: %v tokens, want %v", tt.why, got, tt.afterFFS)
		}
	}
}

// The rate rule indexed its bucket ring with a truncated remainder: for a
// time before 1970, time.Time{} included (a natural virtual-clock origin),
// UnixNano is negative and the index was negative: a panic.
func TestRegression_RateBreakerPanicsBeforeEpoch(t *testing.T) {
	starts := []struct {
		at  time.Time
		why string
	}{
		{time.Time{}, "zero time"},
		{time.Date(1969, 12, 31, 23, 59, 0, 0, time.UTC), "a minute before the epoch"},
		{time.Unix(0, 0).Add(-3 * time.Second), "straddles the epoch over the calls"},
		{time.Unix(0, 0), "the epoch itself"},
	}
	for _, st := range starts {
		b := NewBreaker(BreakerSettings{Trip: TripRate, Ratio: 0.5, MinCalls: 10, Window: 60 * time.Second})
		for i := 0; i < 10; i++ {
			now := st.at.Add(time.Duration(i) * time.Second)
			if b.State(now) != StateClosed {
				t.Fatalf("%s: opened after %d failures, want 10", st.why, i)
			}
			gen, _ := b.Admit(now)
			b.Record(gen, false, now)
		}
		if b.State(st.at.Add(10*time.Second)) != StateOpen {
			t.Errorf("%s: 10 of 10 failed but not open", st.why)
		}
	}
}

// TripRule.String indexed a fixed array with the value: an out-of-range
// rule (a bad cast from a config number) panicked instead of printing.
func TestRegression_TripRuleStringOutOfRange(t *testing.T) {
	if got := TripRule(7).String(); got != "trip(7)" {
		t.Errorf("TripRule(7).String() = %q, want \"trip(7)\"", got)
	}
}
