package model

import (
	"fmt"
	"strings"
	"time"
)

// This file declares every jitter kind, once: its name, a one-line doc,
// the validation of the setting it uses, the delay it draws, and the range
// of delays the analytic plan states. The drill format's validation, the
// key reference, the plan and Backoff.Delay all read these declarations.
// To add a kind, add a constant and a declaration here, and a case to its
// test.

// Jitter is how a backoff delay is randomised.
type Jitter uint8

// Jitter kinds, in the order of JitterKinds.
const (
	JitterNone         Jitter = iota // d
	JitterFull                       // uniform in [0, d]
	JitterEqual                      // d/2 + uniform in [0, d/2]
	JitterDecorrelated               // min(cap, uniform in [base, 3 × previous delay])
	JitterProportional               // d × (1 + r(2u − 1)), clamped to [0, cap]
	JitterHash                       // d/2 + FNV-1a(id:k) mod (d/2 + 1); no random stream
)

// Problem is one thing wrong with a setting: the key it concerns, as the
// drill format names it under its table ("jitter_ratio", "window"), and
// what is wrong.
type Problem struct{ Key, Msg string }

// DelayRange is the range of one backoff delay: its smallest, typical
// (mean) and largest values.
type DelayRange struct{ Min, Typical, Max time.Duration }

// JitterInfo declares one jitter kind.
type JitterInfo struct {
	Jitter Jitter
	Name   string // as written in a drill
	Doc    string // one line: how the delay is drawn
	// Check reports what is wrong with the settings the kind reads beyond
	// base, cap and multiplier; nil when it reads none.
	Check func(b *Backoff) []Problem
	// Delay is the delay before attempt n+1 after the n-th failure: see
	// Backoff.Delay.
	Delay func(b *Backoff, n int, prev time.Duration, key JitterKey, u float64) time.Duration
	// Bounds is the range of Delay over every u (and id) after the n-th
	// failure, given the range of the delay before it (decorrelated: the
	// previous delay; zero before the first retry). The analytic plan
	// states these figures.
	Bounds func(b *Backoff, n int, prev DelayRange) DelayRange
	// NeedsID: Delay reads the delivery id, so a runner must hand it the
	// real id (the simulator builds ids only for such kinds).
	NeedsID bool
	// FollowsPrevious: the delay grows from the previous delay, not from
	// d. The plan then stops its growth only once its typical and largest
	// values reach the cap, and keeps its typical value the mean.
	FollowsPrevious bool
	// UsesRatio: the kind reads jitter_ratio; the plan's inputs state it.
	UsesRatio bool
	// PlanNote is the analytic plan's assumption about the kind's delays;
	// nil states none.
	PlanNote func(b *Backoff) string
}

// delayFunc is the type of JitterInfo.Delay.
type delayFunc = func(b *Backoff, n int, prev time.Duration, key JitterKey, u float64) time.Duration

// boundsByU is Bounds for a kind whose delay grows with u and with the
// previous delay: its value at u = 0, ½ and 1 (the mean of a uniform
// range), following the smallest, typical and largest previous delay.
func boundsByU(f delayFunc) func(b *Backoff, n int, prev DelayRange) DelayRange {
	return func(b *Backoff, n int, prev DelayRange) DelayRange {
		return DelayRange{Min: f(b, n, prev.Min, 0, 0), Typical: f(b, n, prev.Typical, 0, 0.5), Max: f(b, n, prev.Max, 0, 1)}
	}
}

func delayNone(b *Backoff, n int, _ time.Duration, _ JitterKey, _ float64) time.Duration {
	return b.Capped(n)
}

func delayFull(b *Backoff, n int, _ time.Duration, _ JitterKey, u float64) time.Duration {
	return FullJitter(b.Capped(n), u)
}

func delayEqual(b *Backoff, n int, _ time.Duration, _ JitterKey, u float64) time.Duration {
	return EqualJitter(b.Capped(n), u)
}

func delayDecorrelated(b *Backoff, _ int, prev time.Duration, _ JitterKey, u float64) time.Duration {
	return DecorrelatedJitter(b.Base, b.cap(), prev, u)
}

func delayProportional(b *Backoff, n int, _ time.Duration, _ JitterKey, u float64) time.Duration {
	return ProportionalJitter(b.Capped(n), b.cap(), b.ratio(), u)
}

// ratio is JitterRatio with its default.
func (b *Backoff) ratio() float64 {
	if b.JitterRatio == 0 {
		return DefaultJitterRatio
	}
	return b.JitterRatio
}

func noteUniform(*Backoff) string {
	return "The typical delay is the mean of the jitter's uniform range."
}

// JitterKinds declares every jitter kind, indexed by Jitter.
var JitterKinds = [...]JitterInfo{
	JitterNone: {
		Jitter: JitterNone, Name: "none",
		Doc:    "the capped delay d = min(cap, base × multiplier^(n−1)) itself",
		Delay:  delayNone,
		Bounds: boundsByU(delayNone),
	},
	JitterFull: {
		Jitter: JitterFull, Name: "full",
		Doc:      "uniform in [0, d]",
		Delay:    delayFull,
		Bounds:   boundsByU(delayFull),
		PlanNote: noteUniform,
	},
	JitterEqual: {
		Jitter: JitterEqual, Name: "equal",
		Doc:      "d/2 + uniform in [0, d/2]: never less than half the delay",
		Delay:    delayEqual,
		Bounds:   boundsByU(delayEqual),
		PlanNote: noteUniform,
	},
	JitterDecorrelated: {
		Jitter: JitterDecorrelated, Name: "decorrelated",
		Doc:             "uniform in [base, 3 × the previous delay], capped; the multiplier is not used",
		Delay:           delayDecorrelated,
		Bounds:          boundsByU(delayDecorrelated),
		FollowsPrevious: true,
		PlanNote: func(*Backoff) string {
			return "Decorrelated jitter: each delay is uniform in [base, 3 × previous delay], capped, starting from base; the multiplier is not used. The typical delay is the mean of that range with the previous delay at its typical value; the largest follows the largest previous delay."
		},
	},
	JitterProportional: {
		Jitter: JitterProportional, Name: "proportional",
		Doc: "d × (1 ± jitter_ratio), uniform, clamped to [0, cap]",
		Check: func(b *Backoff) []Problem {
			if !(b.JitterRatio >= 0 && b.JitterRatio <= 1) {
				return []Problem{{"jitter_ratio", fmt.Sprintf("must be a fraction in [0, 1] (got %v)", b.JitterRatio)}}
			}
			return nil
		},
		Delay:     delayProportional,
		Bounds:    boundsByU(delayProportional),
		UsesRatio: true,
		PlanNote: func(b *Backoff) string {
			return fmt.Sprintf("Proportional jitter: d × (1 ± %g), clamped to [0, cap]; the typical delay is d.", b.ratio())
		},
	},
	JitterHash: {
		Jitter: JitterHash, Name: "hash",
		Doc: "d/2 + a 32-bit hash of the delivery id and attempt, mod d/2 + 1: no random stream, the same on every worker; it spreads at most 2^32 ns (about 4.3s) whatever d is",
		Delay: func(b *Backoff, n int, _ time.Duration, key JitterKey, _ float64) time.Duration {
			return HashJitter(b.Capped(n), key, n)
		},
		Bounds: func(b *Backoff, n int, _ DelayRange) DelayRange {
			return HashJitterRange(b.Capped(n))
		},
		NeedsID: true,
		PlanNote: func(*Backoff) string {
			return "Hash jitter is d/2 plus a 32-bit hash of the delivery id and attempt, mod d/2 + 1: uniform across deliveries in [d/2, d/2 + min(d/2, 2^32 ns)], so it spreads a delay by at most about 4.3s however long it is; the typical delay is the middle of that range."
		},
	},
}

// hashSpread is the largest value of the 32-bit hash HashJitter adds.
const hashSpread = time.Duration(1<<32 - 1)

// HashJitterRange is the range of HashJitter(d, id, k) over every id and k:
// from d/2 to d/2 + min(d/2, 2^32 − 1 ns), typically halfway. The 32-bit
// hash cannot spread a delay by more than about 4.3s, however long it is.
func HashJitterRange(d time.Duration) DelayRange {
	if d <= 0 {
		return DelayRange{}
	}
	half := d / 2
	spread := min(half, hashSpread)
	return DelayRange{Min: half, Typical: half + spread/2, Max: half + spread}
}

// Info returns the kind's declaration; an unknown kind acts as none.
func (j Jitter) Info() *JitterInfo {
	if int(j) < len(JitterKinds) {
		return &JitterKinds[j]
	}
	return &JitterKinds[JitterNone]
}

func (j Jitter) String() string {
	if int(j) < len(JitterKinds) {
		return JitterKinds[j].Name
	}
	return fmt.Sprintf("jitter(%d)", j)
}

// JitterNames lists the accepted jitter kinds.
func JitterNames() []string {
	names := make([]string, len(JitterKinds))
	for i := range JitterKinds {
		names[i] = JitterKinds[i].Name
	}
	return names
}

// ParseJitter parses a jitter kind by name.
func ParseJitter(s string) (Jitter, error) {
	for i := range JitterKinds {
		if JitterKinds[i].Name == s {
			return Jitter(i), nil
		}
	}
	return 0, fmt.Errorf("unknown jitter %q (want one of %s)", s, strings.Join(JitterNames(), ", "))
}

// Problems reports what is wrong with the settings the jitter kind reads
// (see JitterInfo.Check).
func (b *Backoff) Problems() []Problem {
	if c := b.Jitter.Info().Check; c != nil {
		return c(b)
	}
	return nil
}

// DelayRange is the range of Delay after the n-th failure over every u and
// id, given the range of the delay before it (zero before the first retry).
func (b *Backoff) DelayRange(n int, prev DelayRange) DelayRange {
	return b.Jitter.Info().Bounds(b, n, prev)
}

// PlanNote is the plan's assumption about the delays of b's jitter kind;
// "" when it states none.
func (b *Backoff) PlanNote() string {
	if f := b.Jitter.Info().PlanNote; f != nil {
		return f(b)
	}
	return ""
}
