package model

import (
	"math"
	"time"
)

// MaxDuration is the largest time.Duration; delays saturate here.
const MaxDuration = time.Duration(math.MaxInt64)

// DefaultMultiplier is the growth factor when Backoff.Multiplier is 0.
const DefaultMultiplier = 2.0

// DefaultJitterRatio is r for proportional jitter when Backoff.JitterRatio
// is 0: the ±50% rule for EDI sends.
const DefaultJitterRatio = 0.5

// Backoff is capped exponential backoff with jitter.
type Backoff struct {
	Base        time.Duration // delay after the first failure, before jitter
	Cap         time.Duration // no delay exceeds it; 0 means MaxDuration
	Multiplier  float64       // default DefaultMultiplier; values below 1 act as 1
	Jitter      Jitter        // default JitterNone
	JitterRatio float64       // proportional only; default DefaultJitterRatio
}

func (b *Backoff) cap() time.Duration {
	if b.Cap <= 0 {
		return MaxDuration
	}
	return b.Cap
}

// Capped returns d = min(cap, base × multiplier^(n−1)) for the n-th failed
// attempt (n ≥ 1; smaller n acts as 1). It saturates at cap for any n,
// multiplier or base and never wraps.
func (b *Backoff) Capped(n int) time.Duration {
	c := b.cap()
	base := b.Base
	if base <= 0 {
		return 0
	}
	if base >= c {
		return c
	}
	if n <= 1 {
		// base × m^0 is base exactly; the float path below could round it up.
		return base
	}
	m := b.Multiplier
	if m == 0 {
		m = DefaultMultiplier
	}
	if math.IsNaN(m) || m <= 1 {
		return base
	}
	if m == math.Trunc(m) && m < 1<<32 {
		// Integer growth: exact, and at most 63 steps before saturating.
		mi := time.Duration(m)
		d := base
		for i := 1; i < n; i++ {
			if d > c/mi {
				return c
			}
			d *= mi
		}
		return min(d, c)
	}
	f := float64(base) * math.Pow(m, float64(n-1))
	if math.IsNaN(f) || f >= float64(c) {
		return c
	}
	return time.Duration(f)
}

// Delay returns the jittered delay before attempt n+1, after the n-th
// failed attempt. prev is the delay chosen after the previous failure (0 if
// none; decorrelated jitter starts from base), key is the delivery id's
// JitterKey (hash jitter), and u is a uniform number in [0, 1) from the caller's stream
// (ignored by none and hash).
func (b *Backoff) Delay(n int, prev time.Duration, key JitterKey, u float64) time.Duration {
	return b.Jitter.Info().Delay(b, n, prev, key, u)
}

// clampU keeps a caller's uniform number inside [0, 1].
func clampU(u float64) float64 {
	if !(u >= 0) { // also catches NaN
		return 0
	}
	if u > 1 {
		return 1
	}
	return u
}

// scale returns u × d, inside [0, d].
func scale(d time.Duration, u float64) time.Duration {
	if d <= 0 {
		return 0
	}
	v := time.Duration(clampU(u) * float64(d))
	if v > d || v < 0 { // float rounding near MaxInt64
		return d
	}
	return v
}

// FullJitter is uniform in [0, d].
func FullJitter(d time.Duration, u float64) time.Duration { return scale(d, u) }

// EqualJitter is d/2 + uniform in [0, d/2]: never less than half the delay.
func EqualJitter(d time.Duration, u float64) time.Duration {
	if d <= 0 {
		return 0
	}
	half := d / 2
	return half + scale(d-half, u)
}

// DecorrelatedJitter is min(cap, uniform in [base, 3 × prev]), with prev
// starting at base (the AWS architecture blog's 2015 variant).
func DecorrelatedJitter(base, cap, prev time.Duration, u float64) time.Duration {
	if base <= 0 {
		return 0
	}
	if cap > 0 && base >= cap {
		return cap
	}
	if prev < base {
		prev = base
	}
	hi := MaxDuration
	if prev <= MaxDuration/3 {
		hi = 3 * prev
	}
	v := base + scale(hi-base, u)
	if cap > 0 && v > cap {
		return cap
	}
	return v
}

// ProportionalJitter is d × (1 + r(2u − 1)), clamped to [0, cap].
func ProportionalJitter(d, cap time.Duration, r, u float64) time.Duration {
	if d <= 0 {
		return 0
	}
	f := float64(d) * (1 + r*(2*clampU(u)-1))
	if !(f > 0) {
		return 0
	}
	if cap <= 0 {
		cap = MaxDuration
	}
	if f >= float64(cap) {
		return cap
	}
	return time.Duration(f)
}

// FNV-1a 32-bit parameters.
const (
	fnvOffset32 = 2166136261
	fnvPrime32  = 16777619
)

// JitterKey is a delivery id as hash jitter reads it: FNV-1a 32-bit of the
// id's bytes, the hash's state before ":<k>". Its four bytes stand for the
// id where the id would take a string's sixteen and its bytes, so that a
// dispatcher's record of a queued delivery stays small.
type JitterKey uint32

// JitterKeyOf returns the JitterKey of delivery id.
func JitterKeyOf(id string) JitterKey { return JitterKey(fnvOffset32).With(id) }

// With continues k with the bytes of s: JitterKeyOf(a).With(b) is
// JitterKeyOf(a + b), so a caller that makes many ids with the same start
// hashes the start once and builds no id.
func (k JitterKey) With(s string) JitterKey {
	h := uint32(k)
	for i := 0; i < len(s); i++ {
		h ^= uint32(s[i])
		h *= fnvPrime32
	}
	return JitterKey(h)
}

// HashJitter is d/2 + h mod (d/2 + 1), where h is FNV-1a 32-bit of
// "<id>:<k>", key is JitterKeyOf(id) and k the number of attempts made so
// far: a delay that needs no random stream and is the same for the same
// delivery and attempt on every worker.
func HashJitter(d time.Duration, key JitterKey, k int) time.Duration {
	if d <= 0 {
		return 0
	}
	h := uint32(key)
	h ^= ':'
	h *= fnvPrime32
	// Decimal digits of k without allocating.
	var buf [20]byte
	i := len(buf)
	uk := uint64(k)
	if k < 0 {
		uk = uint64(-int64(k))
	}
	for {
		i--
		buf[i] = byte('0' + uk%10)
		uk /= 10
		if uk == 0 {
			break
		}
	}
	if k < 0 {
		i--
		buf[i] = '-'
	}
	for ; i < len(buf); i++ {
		h ^= uint32(buf[i])
		h *= fnvPrime32
	}
	half := d / 2
	return half + time.Duration(uint64(h)%uint64(half+1))
}
