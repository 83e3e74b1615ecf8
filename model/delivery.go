package model

import "time"

// Delivery is what the policy needs to know about one (event, subscriber)
// pair: its stable id (the idempotency key) as hash jitter reads it, how
// many attempts it has made, when it was first seen and the delay chosen
// after its previous failure.
type Delivery struct {
	JitterKey JitterKey     // JitterKeyOf(the delivery id)
	Attempts  int           // attempts made so far, including the one that just ended
	FirstSeen time.Time     // when the event was created
	PrevDelay time.Duration // delay chosen after the previous failure; 0 before any
}

// ErrKind is a failure that produced no HTTP status.
type ErrKind uint8

const (
	ErrNone    ErrKind = iota
	ErrTimeout         // the attempt timeout fired
	ErrRefused         // connection refused
	ErrReset           // connection reset
)

func (e ErrKind) String() string {
	switch e {
	case ErrTimeout:
		return "timeout"
	case ErrRefused:
		return "refused"
	case ErrReset:
		return "reset"
	}
	return "none"
}

// Outcome is how one attempt ended.
type Outcome struct {
	Status     int     // HTTP status; 0 when the call produced no response
	Err        ErrKind // set when Status is 0
	RetryAfter string  // raw Retry-After header; "" when absent
}

// Class is what an outcome means for the delivery.
type Class uint8

const (
	ClassSuccess Class = iota
	ClassRetryable
	ClassPermanent
)

func (c Class) String() string {
	switch c {
	case ClassSuccess:
		return "success"
	case ClassRetryable:
		return "retryable"
	}
	return "permanent"
}

// Action is what to do with a delivery after an attempt.
type Action uint8

const (
	ActAck Action = iota
	ActReschedule
	ActDeadLetter
)

func (a Action) String() string {
	switch a {
	case ActAck:
		return "ack"
	case ActReschedule:
		return "reschedule"
	}
	return "dead-letter"
}

// Decision is the answer of Policy.Decide: exactly one of ack, reschedule at
// RunAt, or dead-letter with Reason.
type Decision struct {
	Action Action
	RunAt  time.Time     // ActReschedule: when the next attempt may start
	Delay  time.Duration // ActReschedule: the backoff delay chosen (carry it as Delivery.PrevDelay)
	Reason Reason        // ActDeadLetter
	Class  Class         // how the outcome was classified

	// RetryAfterIgnored is set when the outcome carried a Retry-After that
	// was negative, unparseable or absurd and so was not trusted.
	RetryAfterIgnored bool
	// RetryAfterUsed is set when a Retry-After raised the delay.
	RetryAfterUsed bool
	// Deferred is set when the retry budget refused the retry and the policy
	// defers it rather than dead-lettering it.
	Deferred bool
}
