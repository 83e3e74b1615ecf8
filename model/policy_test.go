package model

import (
	"math/rand/v2"
	"testing"
	"time"
)

var decideNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// openBreaker returns a breaker that tripped at decideNow and is open.
func openBreaker() *Breaker {
	b := NewBreaker(BreakerSettings{Threshold: 1, Cooldown: time.Minute})
	gen, _ := b.Admit(decideNow)
	b.Record(gen, false, decideNow)
	return b
}

// exhaustedBudget returns a budget at exactly half: no retry allowed.
func exhaustedBudget() *Budget {
	b := NewBudget(4, 0.1)
	b.RecordFailure()
	b.RecordFailure()
	return b
}

// checkOneAction asserts that a decision is exactly one of ack,
// reschedule at a time, or dead-letter with a reason.
func checkOneAction(t *testing.T, dec Decision, now time.Time) {
	t.Helper()
	switch dec.Action {
	case ActAck:
		if !dec.RunAt.IsZero() || dec.Reason != ReasonNone || dec.Class != ClassSuccess {
			t.Fatalf("ack carries more: %+v", dec)
		}
	case ActReschedule:
		if dec.RunAt.Before(now) || dec.Reason != ReasonNone || dec.Class != ClassRetryable {
			t.Fatalf("reschedule malformed: %+v", dec)
		}
	case ActDeadLetter:
		if !dec.RunAt.IsZero() || dec.Reason == ReasonNone {
			t.Fatalf("dead-letter malformed: %+v", dec)
		}
	default:
		t.Fatalf("unknown action: %+v", dec)
	}
}

func TestDecide(t *testing.T) {
	base := Policy{
		MaxAttempts:    5,
		Backoff:        Backoff{Base: time.Second, Cap: 30 * time.Second},
		DeliveryWindow: 30 * time.Minute,
	}
	fresh := func(attempts int) Delivery {
		return Delivery{JitterKey: JitterKeyOf("evt-000001:acme-0"), Attempts: attempts, FirstSeen: decideNow.Add(-time.Minute)}
	}
	with := func(f func(*Policy)) Policy { p := base; f(&p); return p }
	tests := []struct {
		name string
		p    Policy
		d    Delivery
		o    Outcome
		g    Guards
		// want.RunAt is left zero; runIn gives it as an offset from now.
		// A dead-letter by next run time keeps the delay that caused it.
		want  Decision
		runIn time.Duration
	}{
		// Ack.
		{"200 acks", base, fresh(1), Outcome{Status: 200}, Guards{}, Decision{Action: ActAck, Class: ClassSuccess}, 0},
		{"204 on the last attempt still acks", base, fresh(5), Outcome{Status: 204}, Guards{}, Decision{Action: ActAck, Class: ClassSuccess}, 0},
		{"success outside the window acks: the partner has it", base, Delivery{Attempts: 1, FirstSeen: decideNow.Add(-time.Hour)}, Outcome{Status: 200}, Guards{}, Decision{Action: ActAck, Class: ClassSuccess}, 0},
		{"success with an open breaker acks", with(func(p *Policy) { p.OnOpenDeadLetter = true }), fresh(1), Outcome{Status: 200}, Guards{Breaker: openBreaker()}, Decision{Action: ActAck, Class: ClassSuccess}, 0},
		// Dead-letter, permanent.
		{"422 dead-letters as permanent", base, fresh(1), Outcome{Status: 422}, Guards{}, Decision{Action: ActDeadLetter, Reason: ReasonPermanent, Class: ClassPermanent}, 0},
		{"501 dead-letters as permanent", base, fresh(1), Outcome{Status: 501}, Guards{}, Decision{Action: ActDeadLetter, Reason: ReasonPermanent, Class: ClassPermanent}, 0},
		{"override makes 503 permanent", with(func(p *Policy) { p.Classifier.Overrides = map[int]Class{503: ClassPermanent} }), fresh(1), Outcome{Status: 503}, Guards{}, Decision{Action: ActDeadLetter, Reason: ReasonPermanent, Class: ClassPermanent}, 0},
		// Reschedule.
		{"503 after attempt 1: base", base, fresh(1), Outcome{Status: 503}, Guards{}, Decision{Action: ActReschedule, Delay: time.Second, Class: ClassRetryable}, time.Second},
		{"timeout after attempt 3: 4s", base, fresh(3), Outcome{Err: ErrTimeout}, Guards{}, Decision{Action: ActReschedule, Delay: 4 * time.Second, Class: ClassRetryable}, 4 * time.Second},
		{"override makes 409 retryable", with(func(p *Policy) { p.Classifier.Overrides = map[int]Class{409: ClassRetryable} }), fresh(2), Outcome{Status: 409}, Guards{}, Decision{Action: ActReschedule, Delay: 2 * time.Second, Class: ClassRetryable}, 2 * time.Second},
		{"no attempt limit: attempt 1000 capped", with(func(p *Policy) { p.MaxAttempts = 0 }), fresh(1000), Outcome{Status: 503}, Guards{}, Decision{Action: ActReschedule, Delay: 30 * time.Second, Class: ClassRetryable}, 30 * time.Second},
		{"no window: a day-old delivery retries", with(func(p *Policy) { p.DeliveryWindow = 0 }), Delivery{Attempts: 1, FirstSeen: decideNow.Add(-24 * time.Hour)}, Outcome{Status: 503}, Guards{}, Decision{Action: ActReschedule, Delay: time.Second, Class: ClassRetryable}, time.Second},
		{"full jitter uses u", with(func(p *Policy) { p.Backoff.Jitter = JitterFull }), fresh(2), Outcome{Status: 503}, Guards{}, Decision{Action: ActReschedule, Delay: time.Second, Class: ClassRetryable}, time.Second},
		// Dead-letter, max-attempts.
		{"attempts reach MaxAttempts", base, fresh(5), Outcome{Status: 503}, Guards{}, Decision{Action: ActDeadLetter, Reason: ReasonMaxAttempts, Class: ClassRetryable}, 0},
		{"attempts beyond MaxAttempts", base, fresh(9), Outcome{Err: ErrReset}, Guards{}, Decision{Action: ActDeadLetter, Reason: ReasonMaxAttempts, Class: ClassRetryable}, 0},
		{"one below MaxAttempts still retries", base, fresh(4), Outcome{Status: 503}, Guards{}, Decision{Action: ActReschedule, Delay: 8 * time.Second, Class: ClassRetryable}, 8 * time.Second},
		// Dead-letter, window-expired.
		{"older than the window", base, Delivery{Attempts: 1, FirstSeen: decideNow.Add(-31 * time.Minute)}, Outcome{Status: 503}, Guards{}, Decision{Action: ActDeadLetter, Reason: ReasonWindowExpired, Class: ClassRetryable}, 0},
		{"next run time past first-seen + window", base, Delivery{Attempts: 1, FirstSeen: decideNow.Add(-30*time.Minute + 500*time.Millisecond)}, Outcome{Status: 503}, Guards{}, Decision{Action: ActDeadLetter, Reason: ReasonWindowExpired, Class: ClassRetryable, Delay: time.Second}, 0},
		{"next run time exactly at the window end still runs", base, Delivery{Attempts: 1, FirstSeen: decideNow.Add(-30*time.Minute + time.Second)}, Outcome{Status: 503}, Guards{}, Decision{Action: ActReschedule, Delay: time.Second, Class: ClassRetryable}, time.Second},
		{"Retry-After pushes the run time past the window", base, Delivery{Attempts: 1, FirstSeen: decideNow.Add(-29*time.Minute - 50*time.Second)}, Outcome{Status: 429, RetryAfter: "20"}, Guards{}, Decision{Action: ActDeadLetter, Reason: ReasonWindowExpired, Class: ClassRetryable, Delay: time.Second, RetryAfterUsed: true}, 0},
		// Dead-letter, circuit-open, or hold.
		{"open breaker, on_open dead-letter", with(func(p *Policy) { p.OnOpenDeadLetter = true }), fresh(1), Outcome{Status: 503}, Guards{Breaker: openBreaker()}, Decision{Action: ActDeadLetter, Reason: ReasonCircuitOpen, Class: ClassRetryable}, 0},
		{"open breaker, on_open hold: reschedule", base, fresh(1), Outcome{Status: 503}, Guards{Breaker: openBreaker()}, Decision{Action: ActReschedule, Delay: time.Second, Class: ClassRetryable}, time.Second},
		{"closed breaker, on_open dead-letter: reschedule", with(func(p *Policy) { p.OnOpenDeadLetter = true }), fresh(1), Outcome{Status: 503}, Guards{Breaker: NewBreaker(BreakerSettings{})}, Decision{Action: ActReschedule, Delay: time.Second, Class: ClassRetryable}, time.Second},
		// Dead-letter, budget-exhausted, or defer.
		{"budget exhausted, dead-letter", with(func(p *Policy) { p.OnExhaustedDeadLetter = true }), fresh(1), Outcome{Status: 503}, Guards{Budget: exhaustedBudget()}, Decision{Action: ActDeadLetter, Reason: ReasonBudgetExhausted, Class: ClassRetryable}, 0},
		{"budget exhausted, defer: reschedule marked deferred", base, fresh(1), Outcome{Status: 503}, Guards{Budget: exhaustedBudget()}, Decision{Action: ActReschedule, Delay: time.Second, Class: ClassRetryable, Deferred: true}, time.Second},
		{"budget with tokens: plain reschedule", with(func(p *Policy) { p.OnExhaustedDeadLetter = true }), fresh(1), Outcome{Status: 503}, Guards{Budget: NewBudget(10, 0.1)}, Decision{Action: ActReschedule, Delay: time.Second, Class: ClassRetryable}, time.Second},
		// Retry-After.
		{"Retry-After raises the delay", base, fresh(1), Outcome{Status: 429, RetryAfter: "10"}, Guards{}, Decision{Action: ActReschedule, Delay: time.Second, Class: ClassRetryable, RetryAfterUsed: true}, 10 * time.Second},
		{"Retry-After below the backoff is a lower bound only", base, fresh(3), Outcome{Status: 503, RetryAfter: "1"}, Guards{}, Decision{Action: ActReschedule, Delay: 4 * time.Second, Class: ClassRetryable}, 4 * time.Second},
		{"Retry-After capped by the backoff cap by default", base, fresh(1), Outcome{Status: 503, RetryAfter: "120"}, Guards{}, Decision{Action: ActReschedule, Delay: time.Second, Class: ClassRetryable, RetryAfterUsed: true}, 30 * time.Second},
		{"Retry-After capped by RetryAfterMax", with(func(p *Policy) { p.RetryAfterMax = time.Minute }), fresh(1), Outcome{Status: 503, RetryAfter: "120"}, Guards{}, Decision{Action: ActReschedule, Delay: time.Second, Class: ClassRetryable, RetryAfterUsed: true}, time.Minute},
		{"Retry-After as an HTTP-date", base, fresh(1), Outcome{Status: 503, RetryAfter: "Sun, 01 Mar 2026 12:00:20 GMT"}, Guards{}, Decision{Action: ActReschedule, Delay: time.Second, Class: ClassRetryable, RetryAfterUsed: true}, 20 * time.Second},
		{"Retry-After garbage ignored and counted", base, fresh(1), Outcome{Status: 503, RetryAfter: "soon"}, Guards{}, Decision{Action: ActReschedule, Delay: time.Second, Class: ClassRetryable, RetryAfterIgnored: true}, time.Second},
		{"Retry-After negative ignored and counted", base, fresh(1), Outcome{Status: 503, RetryAfter: "-5"}, Guards{}, Decision{Action: ActReschedule, Delay: time.Second, Class: ClassRetryable, RetryAfterIgnored: true}, time.Second},
		{"Retry-After absurd ignored and counted", base, fresh(1), Outcome{Status: 503, RetryAfter: "100000"}, Guards{}, Decision{Action: ActReschedule, Delay: time.Second, Class: ClassRetryable, RetryAfterIgnored: true}, time.Second},
		{"Retry-After past date ignored and counted", base, fresh(1), Outcome{Status: 503, RetryAfter: "Sun, 01 Mar 2026 11:00:00 GMT"}, Guards{}, Decision{Action: ActReschedule, Delay: time.Second, Class: ClassRetryable, RetryAfterIgnored: true}, time.Second},
		{"IgnoreRetryAfter: neither used nor counted", with(func(p *Policy) { p.IgnoreRetryAfter = true }), fresh(1), Outcome{Status: 503, RetryAfter: "10"}, Guards{}, Decision{Action: ActReschedule, Delay: time.Second, Class: ClassRetryable}, time.Second},
		{"Retry-After on a permanent failure changes nothing", base, fresh(1), Outcome{Status: 400, RetryAfter: "10"}, Guards{}, Decision{Action: ActDeadLetter, Reason: ReasonPermanent, Class: ClassPermanent}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := tt.want
			if want.Action == ActReschedule {
				want.RunAt = decideNow.Add(tt.runIn)
			}
			got := tt.p.Decide(tt.d, tt.o, decideNow, 0.5, tt.g)
			if got != want {
				t.Errorf("got  %+v\nwant %+v", got, want)
			}
			checkOneAction(t, got, decideNow)
		})
	}
}

// TestDecideProperties: over random inputs every decision is exactly one
// action, a reschedule never runs before now nor after the window, and a
// delay never exceeds the cap.
func TestDecideProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	statuses := []int{0, 200, 204, 301, 400, 404, 408, 422, 429, 500, 501, 502, 503}
	ras := []string{"", "", "0", "5", "120", "100000", "-1", "junk", "Sun, 01 Mar 2026 12:00:20 GMT", "Sun, 01 Mar 2026 11:00:00 GMT"}
	for i := 0; i < 20_000; i++ {
		p := Policy{
			MaxAttempts:           r.IntN(8),
			Backoff:               randomBackoff(r),
			DeliveryWindow:        time.Duration(r.IntN(3)) * 10 * time.Minute,
			IgnoreRetryAfter:      r.IntN(4) == 0,
			RetryAfterMax:         time.Duration(r.IntN(3)) * time.Minute,
			OnOpenDeadLetter:      r.IntN(2) == 0,
			OnExhaustedDeadLetter: r.IntN(2) == 0,
		}
		d := Delivery{
			JitterKey: JitterKeyOf("evt"),
			Attempts:  r.IntN(10),
			FirstSeen: decideNow.Add(-time.Duration(r.IntN(40)) * time.Minute),
			PrevDelay: time.Duration(r.IntN(100)) * time.Second,
		}
		o := Outcome{Status: statuses[r.IntN(len(statuses))], Err: ErrKind(r.IntN(4)), RetryAfter: ras[r.IntN(len(ras))]}
		var g Guards
		if r.IntN(2) == 0 {
			g.Breaker = openBreaker()
		}
		if r.IntN(2) == 0 {
			g.Budget = exhaustedBudget()
		}
		dec := p.Decide(d, o, decideNow, randomU(r), g)
		checkOneAction(t, dec, decideNow)
		if dec.Action != ActReschedule {
			continue
		}
		c := p.Backoff.Cap
		if c <= 0 {
			c = MaxDuration
		}
		if dec.Delay < 0 || dec.Delay > c {
			t.Fatalf("delay %v outside [0, %v]: %+v", dec.Delay, c, p)
		}
		if p.DeliveryWindow > 0 && dec.RunAt.After(d.FirstSeen.Add(p.DeliveryWindow)) {
			t.Fatalf("runs after the window: %+v", dec)
		}
		if p.MaxAttempts > 0 && d.Attempts >= p.MaxAttempts {
			t.Fatalf("rescheduled past MaxAttempts: %+v", dec)
		}
	}
}

// TestPolicySettingsDefaultsAndBounds: the defaults pass the one
// validation, and each bound the runners rely on is refused at its key,
// under its table.
func TestPolicySettingsDefaultsAndBounds(t *testing.T) {
	def := DefaultPolicySettings()
	if ps := def.Problems(); len(ps) != 0 {
		t.Fatalf("the defaults have problems: %+v", ps)
	}
	cases := []struct {
		key    string
		break_ func(p *PolicySettings)
	}{
		{"retry.cap", func(p *PolicySettings) { p.Retry.Cap.D = MaxPolicyDuration + 1 }},
		{"retry.delivery_window", func(p *PolicySettings) { p.Retry.DeliveryWindow.D = MaxPolicyDuration + 1 }},
		{"retry.retry_after_max", func(p *PolicySettings) { p.Retry.RetryAfterMax.D = 0 }},
		{"retry.retryable_status", func(p *PolicySettings) { p.Retry.RetryableStatus = make([]int, MaxStatusOverrides+1) }},
		{"breaker.threshold", func(p *PolicySettings) { p.Breaker.Trip, p.Breaker.Threshold = "consecutive", 1<<31 }},
		{"breaker.window", func(p *PolicySettings) { p.Breaker.Trip, p.Breaker.Window.D = "window", MaxPolicyDuration+1 }},
		{"budget.max_tokens", func(p *PolicySettings) { p.Budget.MaxTokens = MaxBudgetTokens * 2 }},
		{"budget.token_ratio", func(p *PolicySettings) { p.Budget.TokenRatio = -1 }},
	}
	for _, tc := range cases {
		p := DefaultPolicySettings()
		tc.break_(&p)
		ps := p.Problems()
		if len(ps) == 0 || ps[0].Key != tc.key {
			t.Errorf("%s: problems %+v; want the first at %s", tc.key, ps, tc.key)
		}
	}
	// retry_after_max follows cap unless given.
	p := DefaultPolicySettings()
	p.Retry.Cap = Duration{D: time.Hour, Set: true}
	p.FillDerived()
	if p.Retry.RetryAfterMax.D != time.Hour {
		t.Errorf("retry_after_max %v; want cap's 1h", p.Retry.RetryAfterMax.D)
	}
	p.Retry.RetryAfterMax = Duration{D: time.Minute, Set: true}
	p.FillDerived()
	if p.Retry.RetryAfterMax.D != time.Minute {
		t.Errorf("a given retry_after_max was replaced: %v", p.Retry.RetryAfterMax.D)
	}
}
