package eventqueue

import "math/bits"

// Queue is the event heap: events of type E ordered by (At, insertion), so
// that events at the same virtual time run in the order they were
// scheduled and a run is deterministic. At is in nanoseconds of virtual time.
//
// Pop leaves the root empty (hole) until the next call: a simulation
// usually pushes an event soon after it pops one (a completion starts the
// next attempt), and a push into the hole sifts the new event down from
// the root once, instead of the pop moving the last event down and the
// push moving the new one up.
type Queue[E any] struct {
	h    []entry[E]
	seq  uint64
	now  int64
	hole bool // h[0] was popped: it is empty
}

// arity: a 4-ary heap is half as deep as a binary one, and a node's four
// children share one or two cache lines, so a pop touches fewer lines.
// (at, seq) orders events totally, so the pop order is the same whatever
// the heap's shape.
const arity = 4

// entry is a scheduled event. at is never negative (Push clamps it to
// now, which starts at 0), so it compares as an unsigned number.
type entry[E any] struct {
	at  int64
	seq uint64
	ev  E
}

// Now is the virtual time of the event last popped.
func (q *Queue[E]) Now() int64 { return q.now }

// Len is the number of scheduled events.
func (q *Queue[E]) Len() int {
	if q.hole {
		return len(q.h) - 1
	}
	return len(q.h)
}

// Push schedules ev at virtual time at. An event in the past runs at now:
// virtual time never goes backwards.
func (q *Queue[E]) Push(at int64, ev E) {
	if at < q.now {
		at = q.now
	}
	q.seq++
	e := entry[E]{at: at, seq: q.seq, ev: ev}
	if q.hole {
		q.hole = false
		q.siftDown(e, len(q.h))
		return
	}
	q.h = append(q.h, e)
	h := q.h
	i := len(h) - 1
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

// fill closes the hole a Pop left at the root with the last event.
func (q *Queue[E]) fill() {
	q.hole = false
	h := q.h
	last := len(h) - 1
	e := h[last]
	var zero entry[E]
	h[last] = zero
	q.h = h[:last]
	if last > 0 {
		q.siftDown(e, last)
	}
}

// siftDown places e in the empty root of h[:n], moving the smallest child
// up a level at each step. A node with all four children picks the
// smallest in a tournament of three comparisons, the first two
// independent; less has no branch, so the picks compile to conditional
// moves: the choice is data-dependent and a branch on it is mispredicted
// about every other time.
func (q *Queue[E]) siftDown(e entry[E], n int) {
	h := q.h[:n]
	i := 0
	for {
		c := arity*i + 1
		if c >= n {
			break
		}
		var m int
		if c+arity <= n {
			ch := h[c : c+arity : c+arity]
			a := b2i(less(&ch[1], &ch[0]))
			b := 2 + b2i(less(&ch[3], &ch[2]))
			m = c + a + (b-a)*b2i(less(&ch[b&3], &ch[a&1]))
		} else {
			m = c
			for k := c + 1; k < n; k++ {
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

// Peek returns the time of the next event; ok is false when there is none.
func (q *Queue[E]) Peek() (at int64, ok bool) {
	if q.hole {
		q.fill()
	}
	if len(q.h) == 0 {
		return 0, false
	}
	return q.h[0].at, true
}

// PeekEvent returns the event Pop would return next, without removing it;
// ok is false when there is none.
func (q *Queue[E]) PeekEvent() (ev E, ok bool) {
	if q.hole {
		q.fill()
	}
	if len(q.h) == 0 {
		return ev, false
	}
	return q.h[0].ev, true
}

// Pop removes the next event, advances the clock to it and returns it.
// The queue must not be empty.
func (q *Queue[E]) Pop() (at int64, ev E) {
	if q.hole {
		q.fill()
	}
	top := &q.h[0]
	at, ev = top.at, top.ev
	var zero E
	top.ev = zero // a hole holds nothing
	q.hole = true
	q.now = at
	return at, ev
}

// less orders entries by (at, seq) as one 128-bit unsigned comparison: the
// borrow out of (a.at, a.seq) - (b.at, b.seq). No branch.
func less[E any](a, b *entry[E]) bool {
	_, borrow := bits.Sub64(a.seq, b.seq, 0)
	_, borrow = bits.Sub64(uint64(a.at), uint64(b.at), borrow)
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
