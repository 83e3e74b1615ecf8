package model

import "time"

// Policy is a delivery's retry policy. Zero fields take the documented
// defaults.
type Policy struct {
	// MaxAttempts is the most attempts a delivery may make; 0: no limit.
	MaxAttempts int
	Backoff     Backoff
	// DeliveryWindow bounds how long after first-seen a delivery may still
	// be attempted; 0: no window.
	DeliveryWindow time.Duration
	// IgnoreRetryAfter disables Retry-After; by default it is honoured as a
	// lower bound on the next delay.
	IgnoreRetryAfter bool
	// RetryAfterMax caps an honoured Retry-After; default Backoff.Cap.
	RetryAfterMax time.Duration
	Classifier    Classifier
	// OnOpenDeadLetter: a retryable failure while the partner's breaker is
	// open dead-letters the delivery (reason circuit-open) instead of
	// holding it.
	OnOpenDeadLetter bool
	// OnExhaustedDeadLetter: a retry refused by the budget dead-letters the
	// delivery (reason budget-exhausted) instead of deferring it.
	OnExhaustedDeadLetter bool
}

// Guards are the per-partner (or global) breaker and budget a decision
// consults. Either may be nil. The caller records the outcome on both before
// calling Decide, so the decision sees the state that outcome produced.
type Guards struct {
	Breaker *Breaker
	Budget  *Budget
}

// Decide says what happens to d after an attempt ended with o at now. u is a
// uniform number in [0, 1) from the caller's stream, used for jitter.
func (p *Policy) Decide(d Delivery, o Outcome, now time.Time, u float64, g Guards) Decision {
	return p.DecideClass(p.Classifier.Classify(o), d, o, now, u, g)
}

// Acked is DecideClass's decision for every success, whatever else it is
// given: a caller on a hot path can spare building its arguments.
func Acked() Decision { return Decision{Action: ActAck, Class: ClassSuccess} }

// DecideClass is Decide for a caller that has classified o already: cl
// must be p.Classifier.Classify(o). A success is acked whatever d is, so
// for ClassSuccess d is not read (see Acked).
func (p *Policy) DecideClass(cl Class, d Delivery, o Outcome, now time.Time, u float64, g Guards) Decision {
	switch cl {
	case ClassSuccess:
		return Acked()
	case ClassPermanent:
		return Decision{Action: ActDeadLetter, Reason: ReasonPermanent, Class: cl}
	}
	dec := Decision{Class: cl}
	if p.MaxAttempts > 0 && d.Attempts >= p.MaxAttempts {
		dec.Action, dec.Reason = ActDeadLetter, ReasonMaxAttempts
		return dec
	}
	var deadline time.Time
	if p.DeliveryWindow > 0 {
		deadline = d.FirstSeen.Add(p.DeliveryWindow)
		if !now.Before(deadline) {
			dec.Action, dec.Reason = ActDeadLetter, ReasonWindowExpired
			return dec
		}
	}
	if p.OnOpenDeadLetter && g.Breaker != nil && g.Breaker.State(now) == StateOpen {
		dec.Action, dec.Reason = ActDeadLetter, ReasonCircuitOpen
		return dec
	}
	if g.Budget != nil && !g.Budget.AllowRetry() {
		if p.OnExhaustedDeadLetter {
			dec.Action, dec.Reason = ActDeadLetter, ReasonBudgetExhausted
			return dec
		}
		dec.Deferred = true
	}
	delay := p.Backoff.Delay(d.Attempts, d.PrevDelay, d.JitterKey, u)
	dec.Delay = delay
	if o.RetryAfter != "" && !p.IgnoreRetryAfter {
		ra, ok := ParseRetryAfter(o.RetryAfter, now)
		if !ok {
			dec.RetryAfterIgnored = true
		} else {
			limit := p.RetryAfterMax
			if limit <= 0 {
				limit = p.Backoff.cap()
			}
			ra = min(ra, limit)
			if ra > delay {
				delay = ra
				dec.RetryAfterUsed = true
			}
		}
	}
	runAt := now.Add(delay)
	if p.DeliveryWindow > 0 && runAt.After(deadline) {
		dec.Action, dec.Reason = ActDeadLetter, ReasonWindowExpired
		return dec
	}
	dec.Action, dec.RunAt = ActReschedule, runAt
	return dec
}
