package sim

import (
	"math/bits"
	"math/rand/v2"
)

// Queue is the event queue: events of type E ordered by (at, insertion),
// so that events at the same virtual time run in the order they were
// scheduled and a run is deterministic. At is in nanoseconds of virtual
// time.
//
// It is a radix heap, which a simulation's clock allows: virtual time never
// goes backwards, so no event is scheduled before the last one popped.
// Times are read as base-64 numbers. An event's bucket is set by the
// highest digit in which its time differs from last (the time of the
// event popped last) and by its own value of that digit; bucket 0 holds
// the events at last itself. Buckets in index order hold ever later
// events. A push appends to its bucket. A pop takes bucket 0's first
// event; when bucket 0 is empty, the lowest bucket that is not gives its
// earliest event's time as the new last, and its events move down to the
// buckets they now belong in, each at a lower digit than before. So an
// event moves once per digit at most (two or three times for a delay of
// tens of milliseconds among events microseconds apart), each move a
// sequential copy, where a 4-ary heap of thousands of events sifts
// through five or six levels of dependent, data-dependent loads at every
// pop. With 6,400 attempts in flight (20,000 subscribers) that made the
// simulation about 8% faster; with 64 and 640, it is as fast as the heap.
//
// Insertion order: every bucket keeps its events in insertion order. A
// push appends the newest event; a bucket is emptied only into buckets
// that are empty (they are lower than the lowest non-empty one), keeping
// its order. So bucket 0, the events at one time, pops in insertion order,
// and the earliest event of a bucket is its first at the least time.
type Queue[E any] struct {
	b    [1 + digits<<digitBits]bucket[E]
	head int               // bucket 0's next event
	mask [maskWords]uint64 // bit k-1: bucket k (k ≥ 1) has events
	last int64             // the time buckets are relative to; ≤ every queued time
	n    int
	seq  uint64
	now  int64
	// The earliest event outside bucket 0, found by a Peek: bucket minK,
	// index minJ; minK is 0 when unknown.
	minK, minJ int
}

// bucket is a bucket's events, es[:n]. The slice is written only when it
// grows: writing a slice header (a pointer) on every push would cost a
// write barrier whenever the collector is marking.
type bucket[E any] struct {
	es []entry[E]
	n  int
}

// add appends e.
func (b *bucket[E]) add(e entry[E]) {
	if b.n == len(b.es) {
		b.es = append(b.es[:b.n], e)
		b.es = b.es[:cap(b.es)]
	} else {
		b.es[b.n] = e
	}
	b.n++
}

// entry is a scheduled event.
type entry[E any] struct {
	at  int64
	seq uint64
	ev  E
}

// Now is the virtual time of the event last popped.
func (q *Queue[E]) Now() int64 { return q.now }

// Len is the number of scheduled events.
func (q *Queue[E]) Len() int { return q.n }

// Push schedules ev at virtual time at. An event in the past runs at now:
// virtual time never goes backwards.
func (q *Queue[E]) Push(at int64, ev E) {
	if at < q.now {
		at = q.now
	}
	q.seq++
	k := bucketOf(at, q.last)
	q.b[k].add(entry[E]{at: at, seq: q.seq, ev: ev})
	q.n++
	if k == 0 {
		return
	}
	q.mask[(k-1)>>6] |= 1 << ((k - 1) & 63)
	if q.minK != 0 {
		switch {
		case k < q.minK:
			q.minK = 0
		case k == q.minK && at < q.b[k].es[q.minJ].at:
			q.minJ = q.b[k].n - 1
		}
	}
}

// bucketOf is the bucket of an event at at when the queue is relative to
// last: 0 when they are equal; else 1 + 64 × the highest base-64 digit in
// which they differ (counted from 0) + at's value of that digit.
func bucketOf(at, last int64) int {
	x := uint64(at ^ last)
	if x == 0 {
		return 0
	}
	d := (bits.Len64(x) - 1) / digitBits
	return 1 + d<<digitBits + int(uint64(at)>>(d*digitBits)&(1<<digitBits-1))
}

// digitBits is the width of a digit: 6 (base 64) did better than 4 and 8
// at 640 and 6,400 events in BenchmarkQueueCompletions.
const (
	digitBits = 6
	digits    = (64 + digitBits - 1) / digitBits // of an int64 time
	maskWords = (digits<<digitBits + 63) / 64
)

// earliest finds the earliest event outside bucket 0: the first event at
// the least time in the lowest non-empty bucket. Events must be queued
// outside bucket 0.
func (q *Queue[E]) earliest() {
	if q.minK != 0 {
		return
	}
	w := 0
	for q.mask[w] == 0 {
		w++
	}
	k := w<<6 + bits.TrailingZeros64(q.mask[w]) + 1
	es := q.b[k].es[:q.b[k].n]
	j := 0
	for i := 1; i < len(es); i++ {
		if es[i].at < es[j].at {
			j = i
		}
	}
	q.minK, q.minJ = k, j
}

// front returns the next event: bucket 0's first, else the earliest of
// the lowest bucket. The queue must not be empty.
func (q *Queue[E]) front() *entry[E] {
	if q.head < q.b[0].n {
		return &q.b[0].es[q.head]
	}
	q.earliest()
	return &q.b[q.minK].es[q.minJ]
}

// redistribute empties the lowest non-empty bucket into the lower ones,
// relative to its earliest time. Bucket 0 must be empty.
func (q *Queue[E]) redistribute() {
	q.earliest()
	k := q.minK
	es := q.b[k].es[:q.b[k].n]
	q.last = es[q.minJ].at
	for i := range es {
		kk := bucketOf(es[i].at, q.last)
		q.b[kk].add(es[i])
		if kk != 0 {
			q.mask[(kk-1)>>6] |= 1 << ((kk - 1) & 63)
		}
	}
	// The copies left behind are overwritten by later pushes; until then
	// an E holding pointers keeps what they point to alive.
	q.b[k].n = 0
	q.mask[(k-1)>>6] &^= 1 << ((k - 1) & 63)
	q.minK = 0
}

// Peek returns the time of the next event; ok is false when there is none.
func (q *Queue[E]) Peek() (at int64, ok bool) {
	if q.n == 0 {
		return 0, false
	}
	return q.front().at, true
}

// PeekEvent returns the event Pop would return next, without removing it;
// ok is false when there is none.
func (q *Queue[E]) PeekEvent() (ev E, ok bool) {
	if q.n == 0 {
		return ev, false
	}
	return q.front().ev, true
}

// Pop removes the next event, advances the clock to it and returns it.
// The queue must not be empty.
func (q *Queue[E]) Pop() (at int64, ev E) {
	if q.head == q.b[0].n {
		q.redistribute()
	}
	e := &q.b[0].es[q.head]
	at, ev = e.at, e.ev
	*e = entry[E]{} // a popped slot holds nothing
	if q.head++; q.head == q.b[0].n {
		q.b[0].n, q.head = 0, 0 // so that events at one time do not grow it
	}
	q.n--
	q.now = at
	return at, ev
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
