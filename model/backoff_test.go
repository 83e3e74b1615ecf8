package model

import (
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// fixedU are the uniform numbers the exact-value tables use, in this order.
var fixedU = [4]float64{0, 0.25, 0.5, 0.999}

func ms(n float64) time.Duration { return time.Duration(n * float64(time.Millisecond)) }

func TestParseJitter(t *testing.T) {
	for _, name := range JitterNames() {
		j, err := ParseJitter(name)
		if err != nil {
			t.Fatalf("ParseJitter(%q): %v", name, err)
		}
		if j.String() != name {
			t.Errorf("ParseJitter(%q).String() = %q", name, j.String())
		}
	}
	for _, bad := range []string{"", "Full", "random", "none "} {
		if _, err := ParseJitter(bad); err == nil {
			t.Errorf("ParseJitter(%q): want error", bad)
		}
	}
	if got := Jitter(99).String(); got != "jitter(99)" {
		t.Errorf("Jitter(99).String() = %q", got)
	}
}

// TestDelayExact checks every jitter kind that takes u at base 1s, cap 30s,
// n = 1..7 and u in fixedU. The capped delays are 1, 2, 4, 8, 16, 30, 30 s.
func TestDelayExact(t *testing.T) {
	type row struct {
		n    int
		want [4]time.Duration // one per fixedU
		why  string
	}
	tables := []struct {
		jitter Jitter
		rows   []row
	}{
		{JitterNone, []row{
			{1, [4]time.Duration{1 * time.Second, 1 * time.Second, 1 * time.Second, 1 * time.Second}, "first failure: base, u ignored"},
			{2, [4]time.Duration{2 * time.Second, 2 * time.Second, 2 * time.Second, 2 * time.Second}, "doubles"},
			{3, [4]time.Duration{4 * time.Second, 4 * time.Second, 4 * time.Second, 4 * time.Second}, "doubles"},
			{4, [4]time.Duration{8 * time.Second, 8 * time.Second, 8 * time.Second, 8 * time.Second}, "doubles"},
			{5, [4]time.Duration{16 * time.Second, 16 * time.Second, 16 * time.Second, 16 * time.Second}, "last step below cap"},
			{6, [4]time.Duration{30 * time.Second, 30 * time.Second, 30 * time.Second, 30 * time.Second}, "32s capped at 30s"},
			{7, [4]time.Duration{30 * time.Second, 30 * time.Second, 30 * time.Second, 30 * time.Second}, "stays at cap"},
		}},
		{JitterFull, []row{
			{1, [4]time.Duration{0, ms(250), ms(500), ms(999)}, "u × 1s"},
			{2, [4]time.Duration{0, ms(500), ms(1000), ms(1998)}, "u × 2s"},
			{3, [4]time.Duration{0, ms(1000), ms(2000), ms(3996)}, "u × 4s"},
			{4, [4]time.Duration{0, ms(2000), ms(4000), ms(7992)}, "u × 8s"},
			{5, [4]time.Duration{0, ms(4000), ms(8000), ms(15984)}, "u × 16s"},
			{6, [4]time.Duration{0, ms(7500), ms(15000), ms(29970)}, "u × cap"},
			{7, [4]time.Duration{0, ms(7500), ms(15000), ms(29970)}, "u × cap again"},
		}},
		{JitterEqual, []row{
			{1, [4]time.Duration{ms(500), ms(625), ms(750), ms(999.5)}, "0.5s + u × 0.5s"},
			{2, [4]time.Duration{ms(1000), ms(1250), ms(1500), ms(1999)}, "1s + u × 1s"},
			{3, [4]time.Duration{ms(2000), ms(2500), ms(3000), ms(3998)}, "2s + u × 2s"},
			{4, [4]time.Duration{ms(4000), ms(5000), ms(6000), ms(7996)}, "4s + u × 4s"},
			{5, [4]time.Duration{ms(8000), ms(10000), ms(12000), ms(15992)}, "8s + u × 8s"},
			{6, [4]time.Duration{ms(15000), ms(18750), ms(22500), ms(29985)}, "15s + u × 15s from the cap"},
			{7, [4]time.Duration{ms(15000), ms(18750), ms(22500), ms(29985)}, "same at cap"},
		}},
		{JitterProportional, []row{
			{1, [4]time.Duration{ms(500), ms(750), ms(1000), ms(1499)}, "1s × (0.5, 0.75, 1, 1.499) with default r = 0.5"},
			{2, [4]time.Duration{ms(1000), ms(1500), ms(2000), ms(2998)}, "2s × factor"},
			{3, [4]time.Duration{ms(2000), ms(3000), ms(4000), ms(5996)}, "4s × factor"},
			{4, [4]time.Duration{ms(4000), ms(6000), ms(8000), ms(11992)}, "8s × factor"},
			{5, [4]time.Duration{ms(8000), ms(12000), ms(16000), ms(23984)}, "16s × factor"},
			{6, [4]time.Duration{ms(15000), ms(22500), ms(30000), ms(30000)}, "30s × 1.499 clamped to cap"},
			{7, [4]time.Duration{ms(15000), ms(22500), ms(30000), ms(30000)}, "same at cap"},
		}},
	}
	for _, tb := range tables {
		b := Backoff{Base: time.Second, Cap: 30 * time.Second, Jitter: tb.jitter}
		for _, r := range tb.rows {
			for i, u := range fixedU {
				if got := b.Delay(r.n, 0, JitterKeyOf("evt-1:acme-0"), u); got != r.want[i] {
					t.Errorf("%v n=%d u=%v (%s): got %v, want %v", tb.jitter, r.n, u, r.why, got, r.want[i])
				}
			}
		}
	}
}

func TestProportionalRatio(t *testing.T) {
	b := Backoff{Base: 10 * time.Second, Cap: time.Minute, Jitter: JitterProportional}
	tests := []struct {
		ratio float64
		u     float64
		want  time.Duration
		why   string
	}{
		{0.2, 0, 8 * time.Second, "10s × 0.8"},
		{0.2, 0.5, 10 * time.Second, "centre"},
		{0.2, 0.75, 11 * time.Second, "10s × 1.1"},
		{1, 0, 0, "r = 1, u = 0: zero, never negative"},
		{2, 0, 0, "r = 2 would go negative: clamped to 0"},
		{10, 0.999, time.Minute, "r = 10 would exceed cap: clamped"},
	}
	for _, tt := range tests {
		b.JitterRatio = tt.ratio
		if got := b.Delay(1, 0, JitterKeyOf(""), tt.u); got != tt.want {
			t.Errorf("r=%v u=%v (%s): got %v, want %v", tt.ratio, tt.u, tt.why, got, tt.want)
		}
	}
}

// TestDecorrelatedExact drives decorrelated jitter with prev given: the range
// is [base, 3 × max(prev, base)], capped; base 1s, cap 30s.
func TestDecorrelatedExact(t *testing.T) {
	b := Backoff{Base: time.Second, Cap: 30 * time.Second, Jitter: JitterDecorrelated}
	tests := []struct {
		prev time.Duration
		want [4]time.Duration // one per fixedU
		why  string
	}{
		{0, [4]time.Duration{ms(1000), ms(1500), ms(2000), ms(2998)}, "no previous delay: starts at base, range [1s, 3s]"},
		{ms(500), [4]time.Duration{ms(1000), ms(1500), ms(2000), ms(2998)}, "prev below base acts as base"},
		{time.Second, [4]time.Duration{ms(1000), ms(1500), ms(2000), ms(2998)}, "prev = base: [1s, 3s]"},
		{2 * time.Second, [4]time.Duration{ms(1000), ms(2250), ms(3500), ms(5995)}, "[1s, 6s]"},
		{4 * time.Second, [4]time.Duration{ms(1000), ms(3750), ms(6500), ms(11989)}, "[1s, 12s]"},
		{8 * time.Second, [4]time.Duration{ms(1000), ms(6750), ms(12500), ms(23977)}, "[1s, 24s]"},
		{10 * time.Second, [4]time.Duration{ms(1000), ms(8250), ms(15500), ms(29971)}, "[1s, 30s]: just under cap"},
		{20 * time.Second, [4]time.Duration{ms(1000), ms(15750), ms(30000), ms(30000)}, "[1s, 60s]: upper half capped"},
		{MaxDuration, [4]time.Duration{ms(1000), ms(30000), ms(30000), ms(30000)}, "3 × prev would overflow: saturates, then capped"},
	}
	for _, tt := range tests {
		for i, u := range fixedU {
			if got := b.Delay(3, tt.prev, JitterKeyOf(""), u); got != tt.want[i] {
				t.Errorf("prev=%v u=%v (%s): got %v, want %v", tt.prev, u, tt.why, got, tt.want[i])
			}
		}
	}
}

// TestDecorrelatedChain carries each delay into the next call, as the
// dispatcher does through Delivery.PrevDelay, at u = 0.5.
func TestDecorrelatedChain(t *testing.T) {
	b := Backoff{Base: time.Second, Cap: 30 * time.Second, Jitter: JitterDecorrelated}
	want := []time.Duration{
		ms(2000),     // [1, 3]
		ms(3500),     // [1, 6]
		ms(5750),     // [1, 10.5]
		ms(9125),     // [1, 17.25]
		ms(14187.5),  // [1, 27.375]
		ms(21781.25), // [1, 42.5625]
		ms(30000),    // [1, 65.34375] → 33.17s, capped
		ms(30000),    // [1, 90]: stays at cap
	}
	var prev time.Duration
	for n, w := range want {
		got := b.Delay(n+1, prev, JitterKeyOf(""), 0.5)
		if got != w {
			t.Fatalf("step %d: got %v, want %v", n+1, got, w)
		}
		prev = got
	}
}

// refHash is the hash jitter written from the spec with hash/fnv.
func refHash(d time.Duration, id string, k int) time.Duration {
	h := fnv.New32a()
	fmt.Fprintf(h, "%s:%d", id, k)
	half := d / 2
	return half + time.Duration(uint64(h.Sum32())%uint64(half+1))
}

func TestHashJitterMatchesFNV(t *testing.T) {
	b := Backoff{Base: time.Second, Cap: 30 * time.Second, Jitter: JitterHash}
	tests := []struct {
		id  string
		n   int
		d   time.Duration // the capped delay for n
		why string
	}{
		{"evt-000123:acme-0", 1, 1 * time.Second, "first failure"},
		{"evt-000123:acme-0", 2, 2 * time.Second, "second: k changes the hash"},
		{"evt-000123:acme-0", 7, 30 * time.Second, "at cap"},
		{"evt-000124:acme-0", 1, 1 * time.Second, "another delivery, same attempt"},
		{"", 1, 1 * time.Second, "empty id hashes \":1\""},
		{"ünïcode-☃", 3, 4 * time.Second, "bytes, not runes"},
		{"evt-1", 123456789, 30 * time.Second, "many digits of k"},
	}
	for _, tt := range tests {
		want := refHash(tt.d, tt.id, tt.n)
		for _, u := range fixedU {
			if got := b.Delay(tt.n, 0, JitterKeyOf(tt.id), u); got != want {
				t.Errorf("id=%q n=%d u=%v (%s): got %v, want %v", tt.id, tt.n, u, tt.why, got, want)
			}
		}
		if want < tt.d/2 || want > tt.d {
			t.Errorf("id=%q n=%d: %v outside [d/2, d]", tt.id, tt.n, want)
		}
	}
	// With d = 2^33 ns the modulus 2^32+1 exceeds every 32-bit hash, so the
	// delay minus d/2 is the hash itself: compare it with hash/fnv directly.
	for _, k := range []int{0, 1, 9, 10, -1, -42, math.MaxInt, math.MinInt} {
		d := time.Duration(1) << 33
		h := fnv.New32a()
		fmt.Fprintf(h, "evt-9:p-1:%d", k)
		if got := HashJitter(d, JitterKeyOf("evt-9:p-1"), k) - d/2; uint64(got) != uint64(h.Sum32()) {
			t.Errorf("k=%d: hash %d, want %d", k, got, h.Sum32())
		}
	}
	if HashJitter(0, JitterKeyOf("x"), 1) != 0 || HashJitter(-5, JitterKeyOf("x"), 1) != 0 {
		t.Error("HashJitter of a non-positive delay must be 0")
	}
}

// TestCappedSaturation covers the overflow guards of Capped.
func TestCappedSaturation(t *testing.T) {
	tests := []struct {
		b    Backoff
		n    int
		want time.Duration
		why  string
	}{
		{Backoff{Base: time.Second, Cap: 30 * time.Second}, 1_000_000_000, 30 * time.Second, "n = 1e9, default multiplier: cap"},
		{Backoff{Base: time.Second, Cap: 30 * time.Second}, math.MaxInt, 30 * time.Second, "n = MaxInt: cap"},
		{Backoff{Base: time.Second}, 1_000_000_000, MaxDuration, "no cap: saturates at MaxDuration"},
		{Backoff{Base: time.Second}, 31, time.Second << 30, "no cap, below the limit: exact"},
		{Backoff{Base: time.Second}, 64, MaxDuration, "no cap, 2^63 s: saturates"},
		{Backoff{Base: time.Second, Cap: 30 * time.Second, Multiplier: 1e300}, 2, 30 * time.Second, "multiplier 1e300: cap"},
		{Backoff{Base: time.Second, Cap: 30 * time.Second, Multiplier: 1e300}, 1_000_000_000, 30 * time.Second, "1e300^(1e9) is +Inf: cap"},
		{Backoff{Base: time.Second, Cap: 30 * time.Second, Multiplier: 1e300}, 1, time.Second, "first failure is base whatever the multiplier"},
		{Backoff{Base: time.Second, Multiplier: 1e300}, 2, MaxDuration, "1e300 without cap: MaxDuration"},
		{Backoff{Base: time.Second, Multiplier: math.Inf(1)}, 2, MaxDuration, "+Inf multiplier: saturates"},
		{Backoff{Base: MaxDuration - 1}, 2, MaxDuration, "base near MaxInt64 doubled: saturates, no wrap"},
		{Backoff{Base: MaxDuration/2 + 1}, 2, MaxDuration, "base just over half of MaxInt64 doubled: saturates"},
		{Backoff{Base: MaxDuration / 2}, 2, MaxDuration - 1, "base half of MaxInt64 doubled: fits exactly"},
		{Backoff{Base: MaxDuration - 1, Multiplier: 1.5}, 2, MaxDuration, "base near MaxInt64 × 1.5: saturates"},
		{Backoff{Base: MaxDuration - 1, Multiplier: 1.5}, 1, MaxDuration - 1, "base near MaxInt64, n = 1: base exactly"},
		{Backoff{Base: MaxDuration, Cap: time.Hour}, 1, time.Hour, "base above cap: cap"},
		{Backoff{Base: time.Second, Cap: 30 * time.Second, Multiplier: 1.5}, 1, time.Second, "1.5: base"},
		{Backoff{Base: time.Second, Cap: 30 * time.Second, Multiplier: 1.5}, 2, 1500 * time.Millisecond, "1.5^1"},
		{Backoff{Base: time.Second, Cap: 30 * time.Second, Multiplier: 1.5}, 5, 5062500 * time.Microsecond, "1.5^4 = 5.0625"},
		{Backoff{Base: time.Second, Cap: 30 * time.Second, Multiplier: 1.5}, 9, 25628906250 * time.Nanosecond, "1.5^8 = 25.62890625"},
		{Backoff{Base: time.Second, Cap: 30 * time.Second, Multiplier: 1.5}, 10, 30 * time.Second, "1.5^9 = 38.4: cap"},
		{Backoff{Base: time.Second, Cap: 30 * time.Second, Multiplier: 1.5}, 1_000_000_000, 30 * time.Second, "1.5^(1e9) is +Inf: cap"},
		{Backoff{Base: time.Second, Cap: 30 * time.Second, Multiplier: 3}, 4, 27 * time.Second, "integer 3: 27s"},
		{Backoff{Base: time.Second, Cap: 30 * time.Second, Multiplier: 3}, 5, 30 * time.Second, "integer 3: 81s capped"},
		{Backoff{Base: time.Second, Multiplier: 1 << 40}, 2, MaxDuration, "integer multiplier too big for the exact path: saturates"},
		{Backoff{Base: time.Second, Cap: 30 * time.Second, Multiplier: 0.5}, 5, time.Second, "multiplier < 1 acts as 1: never shrinks"},
		{Backoff{Base: time.Second, Cap: 30 * time.Second, Multiplier: -3}, 5, time.Second, "negative multiplier acts as 1"},
		{Backoff{Base: time.Second, Cap: 30 * time.Second, Multiplier: 1}, 1_000_000_000, time.Second, "multiplier 1: constant"},
		{Backoff{Base: time.Second, Cap: 30 * time.Second, Multiplier: math.NaN()}, 5, time.Second, "NaN multiplier acts as 1"},
		{Backoff{Base: time.Second, Cap: 30 * time.Second, Multiplier: 1.0000001}, 1_000_000_000, 30 * time.Second, "tiny growth over huge n: cap"},
		{Backoff{Base: time.Second, Cap: 30 * time.Second}, 0, time.Second, "n = 0 acts as 1"},
		{Backoff{Base: time.Second, Cap: 30 * time.Second}, math.MinInt, time.Second, "n = MinInt acts as 1"},
		{Backoff{Base: 0, Cap: 30 * time.Second}, 5, 0, "no base: no delay"},
		{Backoff{Base: -time.Second, Cap: 30 * time.Second}, 5, 0, "negative base: no delay"},
		{Backoff{Base: time.Second, Cap: -time.Second}, 3, 4 * time.Second, "negative cap means no cap"},
	}
	for _, tt := range tests {
		if got := tt.b.Capped(tt.n); got != tt.want {
			t.Errorf("%+v Capped(%d) (%s): got %v, want %v", tt.b, tt.n, tt.why, got, tt.want)
		}
	}
}

// randomBackoff draws a backoff from wide ranges, edge values included.
func randomBackoff(r *rand.Rand) Backoff {
	dur := func() time.Duration {
		switch r.IntN(6) {
		case 0:
			return MaxDuration - time.Duration(r.IntN(3))
		case 1:
			return time.Duration(r.IntN(5)) // tiny, zero
		default: // log-uniform over 1ns .. ~MaxInt64
			return time.Duration(math.Exp2(r.Float64() * 63))
		}
	}
	mults := []float64{0, 1, 1.5, 2, 3, 10, 0.5, -1, 1e300, math.Inf(1), math.NaN(), 1 << 40, 1.0000001}
	var m float64
	if r.IntN(2) == 0 {
		m = mults[r.IntN(len(mults))]
	} else {
		m = r.Float64() * 10
	}
	return Backoff{
		Base:        dur(),
		Cap:         dur(),
		Multiplier:  m,
		Jitter:      Jitter(r.IntN(6)),
		JitterRatio: []float64{0, 0.1, 0.5, 1, 2, -0.5}[r.IntN(6)],
	}
}

func randomN(r *rand.Rand) int {
	switch r.IntN(4) {
	case 0:
		return r.IntN(10) - 2
	case 1:
		return []int{math.MaxInt, math.MinInt, 1_000_000_000, 63, 64}[r.IntN(5)]
	}
	return 1 + r.IntN(100)
}

func randomU(r *rand.Rand) float64 {
	switch r.IntN(10) {
	case 0:
		return []float64{0, math.Nextafter(1, 0), 1, -0.5, 2, math.NaN(), math.Inf(1)}[r.IntN(7)]
	}
	return r.Float64()
}

// TestDelayProperties checks 100k random backoffs against the bounds each
// jitter kind promises.
func TestDelayProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const runs = 100_000
	for i := 0; i < runs; i++ {
		b := randomBackoff(r)
		n := randomN(r)
		u := randomU(r)
		prev := time.Duration(0)
		if r.IntN(2) == 0 {
			prev = time.Duration(math.Exp2(r.Float64() * 63))
		}
		c := b.Cap
		if c <= 0 {
			c = MaxDuration
		}
		d := b.Capped(n)
		if d < 0 || d > c {
			t.Fatalf("%+v Capped(%d) = %v outside [0, cap]", b, n, d)
		}
		if b.Base > 0 && d < min(b.Base, c) {
			t.Fatalf("%+v Capped(%d) = %v below min(base, cap)", b, n, d)
		}
		if b.Multiplier >= 1.01 && n >= 1 && n < math.MaxInt {
			if next := b.Capped(n + 1); next < d {
				t.Fatalf("%+v Capped shrinks: n=%d %v, n+1 %v", b, n, d, next)
			}
		}
		got := b.Delay(n, prev, JitterKeyOf("evt-1:p"), u)
		if got < 0 || got > c {
			t.Fatalf("%+v Delay(%d, %v, u=%v) = %v outside [0, cap %v]", b, n, prev, u, got, c)
		}
		switch b.Jitter {
		case JitterNone:
			if got != d {
				t.Fatalf("none: %v != capped %v", got, d)
			}
		case JitterFull:
			if got > d {
				t.Fatalf("full: %v outside [0, %v]", got, d)
			}
		case JitterEqual, JitterHash:
			if got < d/2 || got > d {
				t.Fatalf("%v: %v outside [%v, %v]", b.Jitter, got, d/2, d)
			}
		case JitterDecorrelated:
			if b.Base <= 0 {
				if got != 0 {
					t.Fatalf("decorrelated without base: %v", got)
				}
				break
			}
			p := max(prev, b.Base)
			hi := MaxDuration
			if p <= MaxDuration/3 {
				hi = 3 * p
			}
			lo := min(b.Base, c)
			if got < lo || got > min(c, hi) {
				t.Fatalf("decorrelated base=%v cap=%v prev=%v u=%v: %v outside [%v, %v]", b.Base, c, prev, u, got, lo, min(c, hi))
			}
		}
	}
}

// TestJitterFunctionsProperties exercises the exported jitter helpers
// directly over random delays, near MaxInt64 included.
func TestJitterFunctionsProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 100_000; i++ {
		d := time.Duration(math.Exp2(r.Float64() * 63))
		if i%10 == 0 {
			d = MaxDuration - time.Duration(r.IntN(2048))
		}
		u := randomU(r)
		if got := FullJitter(d, u); got < 0 || got > d {
			t.Fatalf("FullJitter(%v, %v) = %v", d, u, got)
		}
		if got := EqualJitter(d, u); got < d/2 || got > d {
			t.Fatalf("EqualJitter(%v, %v) = %v", d, u, got)
		}
		if got := ProportionalJitter(d, d, 0.5, u); got < 0 || got > d {
			t.Fatalf("ProportionalJitter(%v, cap %v) = %v", d, d, got)
		}
		if got := HashJitter(d, JitterKeyOf("evt"), i); got < d/2 || got > d {
			t.Fatalf("HashJitter(%v) = %v", d, got)
		}
	}
}

// JitterKeyOf is FNV-1a 32-bit of the id (hash/fnv's), and With continues
// it: the key of a + b is the key of a with b, at every split.
func TestJitterKeyWith(t *testing.T) {
	for _, id := range []string{"", "evt-000123:acme-0", "ünïcode:ids", "evt--00005:x-1"} {
		h := fnv.New32a()
		h.Write([]byte(id))
		if got := JitterKeyOf(id); uint32(got) != h.Sum32() {
			t.Errorf("JitterKeyOf(%q) = %#x, want FNV-1a %#x", id, got, h.Sum32())
		}
		for i := 0; i <= len(id); i++ {
			if got, want := JitterKeyOf(id[:i]).With(id[i:]), JitterKeyOf(id); got != want {
				t.Errorf("JitterKeyOf(%q).With(%q) = %#x, want %#x", id[:i], id[i:], got, want)
			}
		}
	}
}
