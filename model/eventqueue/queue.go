package eventqueue

import "math/bits"

// Queue is the event queue: events of type E ordered by (At, insertion),
// so that events at the same virtual time run in the order they were
// scheduled and a run is deterministic. At is in nanoseconds of virtual
// time.
//
// It is a radix heap with 4-bit digits. A simulation's clock only moves
// forward, so every queued time is at or after last, the time of the
// earliest event the queue has moved to the front; an event goes to the
// bucket of the highest digit in which its time differs from last and its
// value there. A push is an append; a pop that finds the front empty moves
// the lowest bucket's events to lower buckets around its earliest time, or,
// if they are few and close together, sorts them into the front.
// An event moves down a few times in its life (a digit at least each
// time), walking its bucket's array in order, where a 4-ary heap sifts it
// through levels scattered over memory on every push and pop: at 32,000
// events in flight a heap's deeper levels miss the cache.
type Queue[E any] struct {
	// b[0] holds the next events from head0 on, sorted by time (ties in
	// the order they were pushed): after a move, those at time last;
	// after a sort (see sortedFrom), a small bucket's, from last to max0.
	// The other buckets hold the rest, all at or after max0, as bucketOf
	// says. Times are never negative, so 16 digits of 4 bits hold them
	// all.
	b     [buckets][]entry[E]
	head0 int
	max0  int64                // the latest time in b[0] (from head0 on, when it is not empty)
	full  [buckets / 64]uint64 // bit k%64 of word k/64 set: b[k] holds events (k >= 1)
	n     int
	now   int64
	last  int64
	// spare[c] holds arrays of at least minArray<<c events that no
	// bucket uses. A bucket grows into a spare array and gives its own
	// back, so growing leaves no garbage; a bucket emptied with an array
	// larger than the whole queue gives it back too. (Arrays that stayed
	// with their buckets and grew by append held 20 times the events'
	// bytes, and left as much again as garbage.)
	spare [64][][]entry[E]
}

// entry is a scheduled event. Events at the same time are always in the
// same bucket (the bucket is a function of the time and last) in the
// order they were pushed, and a move keeps that order: so the queue needs
// no insertion number.
type entry[E any] struct {
	at int64
	ev E
}

// digitBits is the width of a digit. Each move takes an event down one
// digit or more, so wider digits move it fewer times, over more buckets.
// With delays of about 80 ms, an event moves 3.2 times at 640 in flight
// and 4.5 at 32,000 with 4-bit digits, 5.5 and 8.4 with 1-bit ones; and
// BenchmarkQueueCompletions takes 56-58 ns against 65-66 at 640 in
// flight, 60-62 against 82-84 at 64,000. (3 bits: 56 and 68.)
const digitBits = 4

// buckets is how many buckets 64-bit times need, b[0] included: a
// multiple of 64, so full has a bit for each in whole words.
const buckets = 64 / digitBits << digitBits

// bucketOf is the bucket of an event at time at: 0 at last, else
// p<<digitBits + d for the highest digit p in which at differs from last
// and at's value d there (which is above last's, so never 0).
func bucketOf(at, last int64) int {
	x := uint64(at ^ last)
	if x == 0 {
		return 0
	}
	p := (bits.Len64(x) - 1) / digitBits
	return p<<digitBits | int(uint64(at)>>(p*digitBits)&(1<<digitBits-1))
}

// lowest is the lowest non-empty bucket above b[0]; there must be one.
func (q *Queue[E]) lowest() int {
	m := q.full[0] &^ 1
	for w := 1; m == 0; w++ {
		m = q.full[w]
		if m != 0 {
			return w*64 + bits.TrailingZeros64(m)
		}
	}
	return bits.TrailingZeros64(m)
}

// Now is the virtual time of the event last popped.
func (q *Queue[E]) Now() int64 { return q.now }

// Len is the number of scheduled events.
func (q *Queue[E]) Len() int { return q.n }

// Push schedules ev at virtual time at. An event in the past runs at now:
// virtual time never goes backwards.
func (q *Queue[E]) Push(at int64, ev E) {
	at = max(at, q.now) // now >= last: Peek never moves last
	if at < q.max0 && q.head0 < len(q.b[0]) {
		q.insert0(entry[E]{at: at, ev: ev})
	} else {
		q.put(bucketOf(at, q.last), entry[E]{at: at, ev: ev})
	}
	q.n++
}

// insert0 puts e in b[0] after the events at or before its time: a refill
// of a small bucket sorted it there (see sortedFrom), and e is earlier than
// the latest of them.
func (q *Queue[E]) insert0(e entry[E]) {
	b := &q.b[0]
	n := len(*b)
	if n == cap(*b) {
		q.grow(b)
	}
	*b = (*b)[:n+1]
	i := n
	for ; i > q.head0 && (*b)[i-1].at > e.at; i-- {
		(*b)[i] = (*b)[i-1]
	}
	(*b)[i] = e
}

// put appends e to bucket k.
func (q *Queue[E]) put(k int, e entry[E]) {
	b := &q.b[k]
	n := len(*b)
	if n == cap(*b) {
		q.grow(b)
	}
	*b = (*b)[:n+1] // the same array: no pointer written
	(*b)[n] = e
	q.full[k/64] |= 1 << (k % 64)
}

// minArray is the smallest array a bucket gets: class c of the spares
// holds arrays of at least minArray<<c events.
const minArray = 16

// grow gives bucket *b an array with room for more than its events (at
// least twice as many, or minArray), its events copied in: a spare one if
// there is one. Its own goes to the spares.
func (q *Queue[E]) grow(b *[]entry[E]) {
	c := bits.Len(uint(len(*b) / minArray)) // minArray<<c > len(*b)
	var to []entry[E]
	if n := len(q.spare[c]); n > 0 {
		to = q.spare[c][n-1]
		q.spare[c][n-1] = nil
		q.spare[c] = q.spare[c][:n-1]
	} else {
		to = make([]entry[E], 0, minArray<<c)
	}
	to = append(to, *b...)
	q.retire(*b)
	*b = to
}

// retire empties array b and puts it with the spares of its class.
func (q *Queue[E]) retire(b []entry[E]) {
	if cap(b) == 0 {
		return // every array came from grow: minArray or more
	}
	// Hold no moved event's pointers.
	clear(b)
	c := bits.Len(uint(cap(b)/minArray)) - 1 // cap(b) >= minArray<<c
	q.spare[c] = append(q.spare[c], b[:0])
}

// sortedFrom is the most events a bucket holds for refill to sort them
// into b[0] rather than move them to lower buckets: each would otherwise
// move once or more again before its pop.
const sortedFrom = 16

var _ [minArray - sortedFrom]struct{} // does not compile unless minArray >= sortedFrom (refill's grow)

// sortedLevel is the highest digit whose buckets refill sorts: a bucket at
// digit p spans 16^p ns, and a push earlier than the latest event sorted
// into b[0] is inserted among them, so the span must be short beside the
// simulation's delays (1 ms at digit 5, beside tens of milliseconds).
// Sorting every digit's buckets let b[0] grow, at 20,000 subscribers, to
// room for 131,072 events inserted one by one (5 MiB more peak heap, and
// slower); up to digit 4 only, the simulator made more instructions than
// with none.
const sortedLevel = 5

// refill moves the events of the lowest non-empty bucket to lower ones
// around the earliest of them, which becomes last: b[0] then holds the
// next events, in the order they were pushed. A bucket of sortedFrom
// events or fewer is instead sorted by time (ties in the order they were
// pushed) into b[0], whose latest time max0 then tells Push which events
// to insert there. The queue must not be empty; b[0] must be.
func (q *Queue[E]) refill() {
	k := q.lowest()
	from := q.b[k]
	q.full[k/64] &^= 1 << (k % 64)
	if len(from) <= sortedFrom && k>>digitBits <= sortedLevel {
		// Sorted in place (ties in the order they were pushed), then
		// copied to b[0], empty: each bucket keeps its own array, as after
		// a move, where swapping them let the large arrays of busy
		// buckets settle in quiet ones.
		for i := 1; i < len(from); i++ {
			e := from[i]
			j := i
			for ; j > 0 && from[j-1].at > e.at; j-- {
				from[j] = from[j-1]
			}
			from[j] = e
		}
		b0 := &q.b[0]
		if cap(*b0) < len(from) {
			q.grow(b0) // b[0] is empty: grow gives it minArray, at least sortedFrom
		}
		*b0 = (*b0)[:len(from)] // the same array: no pointer written
		copy(*b0, from)
		q.last, q.max0 = from[0].at, from[len(from)-1].at
		q.keepOrRetire(k, from)
		return
	}
	m := from[0].at
	for i := 1; i < len(from); i++ {
		m = min(m, from[i].at)
	}
	q.last, q.max0 = m, m
	// Every event of b[k] has b[k]'s digits, as m does, and is at or
	// after m, so it moves to a lower bucket (b[k] itself stays as it is
	// until keepOrRetire). The loop is put's, by hand:
	// with grow's call in it, put is past the compiler's inlining budget,
	// and calling it here cost the simulator 2-4% of its CPU at 100,000
	// subscribers (21.57-21.91 user-s against 20.88-21.61, three pairs).
	for i := range from {
		j := bucketOf(from[i].at, m)
		b := &q.b[j]
		n := len(*b)
		if n == cap(*b) {
			q.grow(b)
		}
		*b = (*b)[:n+1] // the same array: no pointer written
		(*b)[n] = from[i]
		q.full[j/64] |= 1 << (j % 64)
	}
	q.keepOrRetire(k, from)
}

// keepOrRetire empties bucket k, whose events (from) have left it: it
// keeps its array, cleared, unless that is larger than the whole queue;
// then the array goes to the spares.
func (q *Queue[E]) keepOrRetire(k int, from []entry[E]) {
	if cap(from) <= q.n {
		// b[k] keeps its array: it will likely fill it again.
		clear(from)
		q.b[k] = from[:0]
	} else {
		q.b[k] = nil
		q.retire(from)
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
	from := q.b[q.lowest()]
	m := &from[0]
	for i := 1; i < len(from); i++ {
		if from[i].at < m.at { // the first of equal times was pushed first
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
