package eventqueue

import (
	"math/bits"
	"slices"
)

// Queue is the event queue: events of type E ordered by (At, insertion),
// so that events at the same virtual time run in the order they were
// scheduled and a run is deterministic. At is in nanoseconds of virtual
// time.
//
// It is a radix heap. A simulation's clock only moves forward, so every
// queued time is at or after last, the time of the earliest event the
// queue has moved to the front, and an event goes to the bucket of the
// highest bit in which its time differs from last. A push is an append; a
// pop that finds the front empty moves the lowest bucket's events to lower
// buckets around its earliest time. An event moves down a few times in
// its life, walking its bucket's array in order, where a 4-ary heap sifts
// it through levels scattered over memory on every push and pop: at
// 32,000 events in flight a heap's deeper levels miss the cache.
type Queue[E any] struct {
	// b[0] holds the events at time last, in insertion order, from head0
	// on; b[k] (k >= 1) the events whose time first differs from last at
	// bit k-1 (bit 0 the lowest). Times are never negative, so 64 buckets
	// hold them all.
	b     [64][]entry[E]
	head0 int
	full  uint64 // bit k set: b[k] holds events (k >= 1)
	n     int
	seq   uint64
	now   int64
	last  int64
}

// entry is a scheduled event.
type entry[E any] struct {
	at  int64
	seq uint64
	ev  E
}

// bucketOf is the bucket of an event at time at: 0 at last, else one more
// than the highest bit in which at differs from last.
func bucketOf(at, last int64) int { return bits.Len64(uint64(at ^ last)) }

// Now is the virtual time of the event last popped.
func (q *Queue[E]) Now() int64 { return q.now }

// Len is the number of scheduled events.
func (q *Queue[E]) Len() int { return q.n }

// Push schedules ev at virtual time at. An event in the past runs at now:
// virtual time never goes backwards.
func (q *Queue[E]) Push(at int64, ev E) {
	at = max(at, q.now) // now >= last: Peek never moves last
	q.seq++
	k := bucketOf(at, q.last)
	q.b[k] = append(q.b[k], entry[E]{at: at, seq: q.seq, ev: ev})
	q.full |= 1 << k
	q.n++
}

// refill moves the events of the lowest non-empty bucket to lower ones
// around the earliest of them, which becomes last: b[0] then holds the
// next events. The queue must not be empty; b[0] must be.
func (q *Queue[E]) refill() {
	k := bits.TrailingZeros64(q.full &^ 1)
	from := q.b[k]
	q.b[k] = from[:0]
	q.full &^= 1 << k
	if len(from) == 1 {
		// Most refills past a few hundred events in flight: a move.
		q.last = from[0].at
		q.b[0] = append(q.b[0], from[0])
		from[0] = entry[E]{}
		return
	}
	m := from[0].at
	for i := 1; i < len(from); i++ {
		m = min(m, from[i].at)
	}
	q.last = m
	for i := range from {
		// Every event of b[k] shares the bits above bit k-1 with m, so it
		// moves to a lower bucket.
		j := bucketOf(from[i].at, m)
		q.b[j] = append(q.b[j], from[i])
		q.full |= 1 << j
	}
	clear(from) // hold no moved event's pointers
	if b0 := q.b[0]; len(b0) > 1 {
		// Events at the same time came from b[k] in no particular order.
		slices.SortFunc(b0, func(x, y entry[E]) int {
			if x.seq < y.seq {
				return -1
			}
			return 1
		})
	}
}

// Pop removes the next event, advances the clock to it and returns it.
// The queue must not be empty.
func (q *Queue[E]) Pop() (at int64, ev E) {
	if q.head0 == len(q.b[0]) {
		q.b[0], q.head0 = q.b[0][:0], 0
		q.refill()
	}
	e := &q.b[0][q.head0]
	at, ev = e.at, e.ev
	*e = entry[E]{} // hold no popped event's pointers
	q.head0++
	q.n--
	q.now = at
	return at, ev
}

// front is the next event, without moving any: the first of b[0], else
// the earliest of the lowest bucket. (Moving them would move last past
// now, and an event pushed between now and last would have no bucket.)
func (q *Queue[E]) front() *entry[E] {
	if q.head0 < len(q.b[0]) {
		return &q.b[0][q.head0]
	}
	if q.n == 0 {
		return nil
	}
	from := q.b[bits.TrailingZeros64(q.full&^1)]
	m := &from[0]
	for i := 1; i < len(from); i++ {
		if less(&from[i], m) {
			m = &from[i]
		}
	}
	return m
}

// Peek returns the time of the next event; ok is false when there is none.
func (q *Queue[E]) Peek() (at int64, ok bool) {
	if e := q.front(); e != nil {
		return e.at, true
	}
	return 0, false
}

// PeekEvent returns the event Pop would return next, without removing it;
// ok is false when there is none.
func (q *Queue[E]) PeekEvent() (ev E, ok bool) {
	if e := q.front(); e != nil {
		return e.ev, true
	}
	return ev, false
}

// less orders entries by (at, seq).
func less[E any](a, b *entry[E]) bool {
	return a.at < b.at || a.at == b.at && a.seq < b.seq
}
