package model

import "time"

// This file declares every dead-letter reason, once: its name, a one-line
// doc, whether it is the partner refusing the data, and which settings can
// never produce it. Reports, validation and the tally read these
// declarations. To add a reason, add a constant and a declaration here,
// and a case to its test.

// Reason is why a delivery was dead-lettered.
type Reason string

// Dead-letter reasons, as docs/metrics.md names them ("dead-lettered").
const (
	ReasonNone            Reason = ""
	ReasonPermanent       Reason = "permanent"
	ReasonMaxAttempts     Reason = "max-attempts"
	ReasonWindowExpired   Reason = "window-expired"
	ReasonCircuitOpen     Reason = "circuit-open"
	ReasonBudgetExhausted Reason = "budget-exhausted"
	ReasonQueueFull       Reason = "queue-full"
)

// ReasonInfo declares one dead-letter reason.
type ReasonInfo struct {
	Reason Reason
	Doc    string // one line: when a delivery is dead-lettered so
	// BadData: the partner refused the delivery's data (a permanent
	// answer); reports count these on healthy partners apart.
	BadData bool
	// Never says why settings s can never dead-letter a delivery for this
	// reason, naming the drill key; "" when they can (or might).
	Never func(s *ReasonSettings) string
}

// ReasonSettings are the settings that decide which reasons can occur.
type ReasonSettings struct {
	MaxAttempts       int           // policy.retry.max_attempts; 0 no limit
	DeliveryWindow    time.Duration // policy.retry.delivery_window; 0 none
	BreakerDeadLetter bool          // a breaker with on_open = "dead-letter"
	BudgetDeadLetter  bool          // a budget with on_exhausted = "dead-letter"
	RejectWhenFull    bool          // dispatcher.on_full = "reject"
}

// ReasonKinds declares every reason, in report order.
var ReasonKinds = [...]ReasonInfo{
	{Reason: ReasonPermanent, Doc: "the partner answered a failure the classifier calls permanent", BadData: true},
	{Reason: ReasonMaxAttempts, Doc: "max_attempts attempts failed", Never: func(s *ReasonSettings) string {
		return unless(s.MaxAttempts != 0, "policy.retry.max_attempts is 0 (no limit)")
	}},
	{Reason: ReasonWindowExpired, Doc: "the delivery window ran out", Never: func(s *ReasonSettings) string {
		return unless(s.DeliveryWindow != 0, "policy.retry.delivery_window is 0 (no window)")
	}},
	{Reason: ReasonCircuitOpen, Doc: "a retryable failure while the partner's breaker is open, with on_open = dead-letter", Never: func(s *ReasonSettings) string {
		return unless(s.BreakerDeadLetter, `only a breaker with on_open = "dead-letter" does`)
	}},
	{Reason: ReasonBudgetExhausted, Doc: "a retry the budget refused, with on_exhausted = dead-letter", Never: func(s *ReasonSettings) string {
		return unless(s.BudgetDeadLetter, `only a retry budget with on_exhausted = "dead-letter" does`)
	}},
	{Reason: ReasonQueueFull, Doc: "the queue was full, with on_full = reject", Never: func(s *ReasonSettings) string {
		return unless(s.RejectWhenFull, `only dispatcher.on_full = "reject" does`)
	}},
}

// Reasons lists every dead-letter reason in report order.
var Reasons = func() (rs [len(ReasonKinds)]Reason) {
	for i := range ReasonKinds {
		rs[i] = ReasonKinds[i].Reason
	}
	return rs
}()

func unless(can bool, why string) string {
	if can {
		return ""
	}
	return why
}

// Info returns the reason's declaration; an unknown reason gets a zero
// one.
func (r Reason) Info() *ReasonInfo {
	for i := range ReasonKinds {
		if ReasonKinds[i].Reason == r {
			return &ReasonKinds[i]
		}
	}
	return &ReasonInfo{}
}

// NeverUnder says why settings s can never produce reason r; "" when they
// can.
func (r Reason) NeverUnder(s *ReasonSettings) string {
	if f := r.Info().Never; f != nil {
		return f(s)
	}
	return ""
}
