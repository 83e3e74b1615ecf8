package sim

import (
	"math/bits"
	"math/rand/v2"
)

// Queue is the event heap: events of type E ordered by (At, insertion), so
// that events at the same virtual time run in the order they were
// scheduled and a run is deterministic. At is in nanoseconds of virtual time.
type Queue[E any] struct {
	h   []entry[E]
	seq uint64
	now int64
}

// arity: a 4-ary heap is half as deep as a binary one, and a node's four
// children share one or two cache lines, so a pop touches fewer lines.
// (at, seq) orders events totally, so the pop order is the same whatever
// the heap's shape.
const arity = 4

type entry[E any] struct {
	at  int64
	seq uint64
	ev  E
}

// Now is the virtual time of the event last popped.
func (q *Queue[E]) Now() int64 { return q.now }

// Len is the number of scheduled events.
func (q *Queue[E]) Len() int { return len(q.h) }

// Push schedules ev at virtual time at. An event in the past runs at now:
// virtual time never goes backwards.
func (q *Queue[E]) Push(at int64, ev E) {
	if at < q.now {
		at = q.now
	}
	q.seq++
	q.h = append(q.h, entry[E]{at: at, seq: q.seq, ev: ev})
	h := q.h
	i := len(h) - 1
	e := h[i]
	for i > 0 {
		p := (i - 1) / arity
		if !less(&e, &h[p]) {
			break
		}
		h[i] = h[p]
		i = p
	}
	h[i] = e
}

// Peek returns the time of the next event; ok is false when there is none.
func (q *Queue[E]) Peek() (at int64, ok bool) {
	if len(q.h) == 0 {
		return 0, false
	}
	return q.h[0].at, true
}

// PeekEvent returns the event Pop would return next, without removing it;
// ok is false when there is none.
func (q *Queue[E]) PeekEvent() (ev E, ok bool) {
	if len(q.h) == 0 {
		return ev, false
	}
	return q.h[0].ev, true
}

// Pop removes the next event, advances the clock to it and returns it.
func (q *Queue[E]) Pop() (at int64, ev E) {
	h := q.h
	top := h[0]
	last := len(h) - 1
	e := h[last]
	var zero entry[E]
	h[last] = zero
	h = h[:last]
	q.h = h
	if last > 0 {
		// Sift the last entry down from the root, moving the smallest child
		// up a level at each step. A node with all four children picks the
		// smallest in a tournament of three comparisons, the first two
		// independent; less has no branch, so the picks compile to
		// conditional moves: the choice is data-dependent and a branch on
		// it is mispredicted about every other time.
		i := 0
		for {
			c := arity*i + 1
			if c >= last {
				break
			}
			var m int
			if c+arity <= last {
				ch := h[c : c+arity : c+arity]
				a := b2i(less(&ch[1], &ch[0]))
				b := 2 + b2i(less(&ch[3], &ch[2]))
				m = c + a + (b-a)*b2i(less(&ch[b&3], &ch[a&1]))
			} else {
				m = c
				for k := c + 1; k < last; k++ {
					if less(&h[k], &h[m]) {
						m = k
					}
				}
			}
			if !less(&h[m], &e) {
				break
			}
			h[i] = h[m]
			i = m
		}
		h[i] = e
	}
	q.now = top.at
	return top.at, top.ev
}

// less orders entries by (at, seq) as one 128-bit unsigned comparison:
// the borrow out of (a.at, a.seq) - (b.at, b.seq), with at's sign bit
// flipped so that unsigned order is signed order. No branch.
func less[E any](a, b *entry[E]) bool {
	const sign = 1 << 63
	_, borrow := bits.Sub64(a.seq, b.seq, 0)
	_, borrow = bits.Sub64(uint64(a.at)^sign, uint64(b.at)^sign, borrow)
	return borrow != 0
}

// b2i is 1 for true, 0 for false, without a branch.
func b2i(b bool) int {
	var i int
	if b {
		i = 1
	}
	return i
}

// Derive returns the sub-seed of a named component: a SplitMix64 mix of the
// drill seed and an FNV-1a hash of the name. Each component derives its own
// stream by name, so adding a partner does not reshuffle every other stream.
func Derive(seed uint64, name string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(name); i++ {
		h ^= uint64(name[i])
		h *= 1099511628211
	}
	return splitmix(seed ^ splitmix(h))
}

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// SeedPCG seeds p as the source of NewRand(seed, name), so that a caller
// can keep many streams' state in one slice.
func SeedPCG(p *rand.PCG, seed uint64, name string) {
	s := Derive(seed, name)
	p.Seed(s, splitmix(s))
}

// NewRand returns the random stream of a named component of a drill.
func NewRand(seed uint64, name string) *rand.Rand {
	s := Derive(seed, name)
	return rand.New(rand.NewPCG(s, splitmix(s)))
}
