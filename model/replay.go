package model

import (
	"fmt"
	"math"
)

// Bounds of a dead-letter replay, shared by `stormdrill dlq replay`, the
// stores and a drill's dlq-replay action, so that all of them accept the
// same requests.
const (
	MaxReplayBatch     = 10000      // most dead letters one replay batch moves
	DefaultReplayBatch = 100        // batch size when none is given
	MinReplayRate      = 1.0 / 3600 // slowest rate in batches/s: one batch an hour
	MaxReplayRate      = 1e6        // fastest: the gap between batches stays at least 1 µs
)

// ReplayRequest is what an operator asks of a dead-letter replay: which
// dead letters (by reason, subscriber and cohort; All for every one,
// permanent ones included), in batches of Batch at Rate batches per second
// (0: no pause between batches). A replay moves each selected dead letter
// back to the queue with its id (the idempotency key) and a fresh attempt
// budget, oldest dead letter first, and writes one audit record per batch.
type ReplayRequest struct {
	Reason  string
	Partner string // one subscriber, e.g. "acme-0"
	Cohort  string
	All     bool
	Batch   int
	Rate    float64
}

// ParseReason returns the named dead-letter reason.
func ParseReason(s string) (Reason, bool) {
	for _, r := range Reasons {
		if string(r) == s {
			return r, true
		}
	}
	return ReasonNone, false
}

// ReasonNames lists the dead-letter reasons' names in report order.
func ReasonNames() []string {
	out := make([]string, len(Reasons))
	for i, r := range Reasons {
		out[i] = string(r)
	}
	return out
}

// Problems reports everything wrong with the request, each with the key it
// concerns: "reason" (also for a missing scope), "batch" or "rate".
func (r *ReplayRequest) Problems() []Problem {
	var ps []Problem
	bad := func(key, format string, args ...any) { ps = append(ps, Problem{key, fmt.Sprintf(format, args...)}) }
	switch {
	case r.All && (r.Reason != "" || r.Partner != "" || r.Cohort != ""):
		bad("reason", "replaying all dead letters excludes choosing them by reason, partner or cohort")
	case !r.All && r.Reason == "" && r.Partner == "" && r.Cohort == "":
		bad("reason", "say which dead letters to replay: a reason, a cohort (or partner), or all of them")
	}
	if r.Reason != "" {
		if _, ok := ParseReason(r.Reason); !ok {
			bad("reason", "%q is not a dead-letter reason; want one of %v", clipName(r.Reason), ReasonNames())
		}
	}
	if r.Batch < 1 || r.Batch > MaxReplayBatch {
		bad("batch", "must be between 1 and %d (got %d)", MaxReplayBatch, r.Batch)
	}
	if math.IsNaN(r.Rate) || math.IsInf(r.Rate, 0) || r.Rate < 0 || (r.Rate > 0 && r.Rate < MinReplayRate) || r.Rate > MaxReplayRate {
		bad("rate", "must be 0 (no pause between batches) or between one batch an hour and %g batches/s (got %v batches/s)", float64(MaxReplayRate), r.Rate)
	}
	return ps
}

// Gap is the pause between two batches (0: none).
func (r *ReplayRequest) Gap() int64 {
	if r.Rate <= 0 {
		return 0
	}
	return int64(1e9 / r.Rate)
}

func clipName(s string) string {
	if len(s) > 60 {
		return s[:57] + "..."
	}
	return s
}
