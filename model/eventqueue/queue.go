package eventqueue

import "math/bits"

// Queue is the event queue: events of type E ordered by (At, insertion),
// so that events at the same virtual time run in the order they were
// scheduled and a run is deterministic. At is in nanoseconds of virtual
// time. The zero Queue is empty and ready to use.
//
// It is a calendar queue in front of a heap. A bucket holds the events of
// one slice of virtual time, 2^shift ns wide, in order; the buckets are a
// ring that covers the len(heads) slices from the current one. An event
// beyond them, or one that would land deep inside a crowded bucket, waits
// in a 4-ary heap (far) instead. Pop takes the earlier of the first
// non-empty bucket's head and the heap's top, so the order is exact
// whatever the buckets' width; the width decides only the speed. A
// simulation's next completion is usually far from the root of a heap, so
// a heap spends a chain of dependent comparisons on each event where a
// bucket spends a few; the queue retunes the width as it goes from what
// its pushes and pops cost (see retune).
type Queue[E any] struct {
	seq uint64
	now int64

	shift uint    // a bucket is 2^shift ns of virtual time
	heads []int32 // a bucket's list: its last event's index in ents plus 1 (0: empty); len a power of two
	ents  []node[E]
	free  int32 // the first free node's index plus 1; 0: none
	n     int   // events in buckets
	lo    int64 // no bucketed event is in a bucket numbered below lo

	far []entry[E] // 4-ary min-heap of the rest

	// The next event as next found it, while no Pop and no earlier Push
	// has moved it: a simulation peeks at the next event to prefetch what
	// it reads, then pushes later ones, then pops it.
	peeked  bool
	peekB   int64
	peekI   int32
	peekAt  int64
	peekSeq uint64

	// What the current width cost since the last retune.
	pops, pushes, farPushes, deepPushes, walked, scanned int
	// The last retune's change of width (-1 narrower, +1 wider, 0 none)
	// and how many retunes to skip before the next change.
	lastMove, hold int
	moved          []entry[E] // rebuild's scratch
}

// node is a bucketed event. A bucket's nodes form a circular list in
// (at, seq) order whose head is its last node's next: appending, the usual
// case, and taking the first are then both one step.
type node[E any] struct {
	at   int64
	seq  uint64
	ev   E
	next int32 // index plus 1
}

// entry is a heap event. at is never negative (Push clamps it to now,
// which starts at 0), so it compares as an unsigned number.
type entry[E any] struct {
	at  int64
	seq uint64
	ev  E
}

const (
	arity = 4 // of the far heap: half as deep as a binary heap

	// The width at start (about a millisecond) and the number of buckets
	// (a ring of about a second); retune adapts both.
	startShift   = 20
	startBuckets = 1 << 10
	minBuckets   = 1 << 8
	// maxBuckets bounds the ring at 1 MiB; bucketsPerEvent bounds it by the
	// queue's length, so that a small queue keeps a small ring.
	maxBuckets      = 1 << 18
	bucketsPerEvent = 128
	minShift        = 8 // 256 ns: events that tie share a bucket at any width

	// maxWalk is the most nodes a push passes to place its event inside a
	// bucket; an event that would go deeper goes to the heap instead.
	maxWalk = 32
	// retuneEvery is how many pops each width is judged on.
	retuneEvery = 8192
)

// Now is the virtual time of the event last popped.
func (q *Queue[E]) Now() int64 { return q.now }

// Len is the number of scheduled events.
func (q *Queue[E]) Len() int { return q.n + len(q.far) }

// Push schedules ev at virtual time at. An event in the past runs at now:
// virtual time never goes backwards.
func (q *Queue[E]) Push(at int64, ev E) {
	if at < q.now {
		at = q.now
	}
	q.seq++
	q.pushes++
	if q.heads == nil {
		q.shift, q.heads = startShift, make([]int32, startBuckets)
	}
	if !q.bucket(at, q.seq, ev) {
		q.farPush(entry[E]{at: at, seq: q.seq, ev: ev})
	}
	if q.peeked && lessKey(at, q.seq, q.peekAt, q.peekSeq) {
		q.peeked = false
	}
}

// bucket places an event in its bucket and reports whether it did: not
// when its time is beyond the ring, or when placing it would pass more
// than maxWalk of the bucket's events.
func (q *Queue[E]) bucket(at int64, seq uint64, ev E) bool {
	b := at >> q.shift
	mask := int64(len(q.heads) - 1)
	if b-q.now>>q.shift > mask {
		q.farPushes++
		return false
	}
	head := &q.heads[b&mask]
	var i int32
	if *head == 0 {
		i = q.alloc()
		q.ents[i].next = i + 1 // a list of one
		*head = i + 1
	} else if last := &q.ents[*head-1]; !lessKey(at, seq, last.at, last.seq) {
		// After the last: append.
		i = q.alloc()
		last = &q.ents[*head-1] // alloc may have moved ents
		q.ents[i].next, last.next = last.next, i+1
		*head = i + 1
	} else {
		// Before the last: find the first event after it.
		prev := *head - 1
		for k := 0; ; k++ {
			nx := q.ents[prev].next - 1
			if lessKey(at, seq, q.ents[nx].at, q.ents[nx].seq) {
				break
			}
			if k == maxWalk {
				q.deepPushes++
				return false
			}
			prev = nx
			q.walked++
		}
		i = q.alloc()
		q.ents[i].next, q.ents[prev].next = q.ents[prev].next, i+1
	}
	nd := &q.ents[i]
	nd.at, nd.seq, nd.ev = at, seq, ev
	q.n++
	if b < q.lo {
		q.lo = b
	}
	return true
}

// alloc returns the index of a free node.
func (q *Queue[E]) alloc() int32 {
	if q.free != 0 {
		i := q.free - 1
		q.free = q.ents[i].next
		return i
	}
	q.ents = append(q.ents, node[E]{})
	return int32(len(q.ents) - 1)
}

// first returns the number of the first non-empty bucket and the index of
// its first node. There must be a bucketed event. Every one is in
// [now>>shift, now>>shift + len(heads)): at or after now, and within the
// ring of the time it was pushed at, so the walk meets only buckets of the
// current turn of the ring.
func (q *Queue[E]) first() (b int64, i int32) {
	b = max(q.lo, q.now>>q.shift)
	mask := int64(len(q.heads) - 1)
	for q.heads[b&mask] == 0 {
		b++
		q.scanned++
	}
	q.lo = b
	return b, q.ents[q.heads[b&mask]-1].next - 1
}

// next is where the next event is: the first bucketed node (i ≥ 0, in
// bucket b) or the heap's top (i < 0). The queue must not be empty.
func (q *Queue[E]) next() (b int64, i int32) {
	if q.peeked {
		return q.peekB, q.peekI
	}
	b, i = 0, -1
	at, seq := int64(0), uint64(0)
	if q.n > 0 {
		b, i = q.first()
		at, seq = q.ents[i].at, q.ents[i].seq
	}
	if len(q.far) > 0 {
		if top := &q.far[0]; i < 0 || lessKey(top.at, top.seq, at, seq) {
			b, i, at, seq = 0, -1, top.at, top.seq
		}
	}
	q.peeked, q.peekB, q.peekI, q.peekAt, q.peekSeq = true, b, i, at, seq
	return b, i
}

// Peek returns the time of the next event; ok is false when there is none.
func (q *Queue[E]) Peek() (at int64, ok bool) {
	if q.Len() == 0 {
		return 0, false
	}
	if _, i := q.next(); i >= 0 {
		return q.ents[i].at, true
	}
	return q.far[0].at, true
}

// PeekEvent returns the event Pop would return next, without removing it;
// ok is false when there is none.
func (q *Queue[E]) PeekEvent() (ev E, ok bool) {
	if q.Len() == 0 {
		return ev, false
	}
	if _, i := q.next(); i >= 0 {
		return q.ents[i].ev, true
	}
	return q.far[0].ev, true
}

// Pop removes the next event, advances the clock to it and returns it.
// The queue must not be empty.
func (q *Queue[E]) Pop() (at int64, ev E) {
	b, i := q.next()
	if i >= 0 {
		head := &q.heads[b&int64(len(q.heads)-1)]
		nd := &q.ents[i]
		if *head-1 == i {
			*head = 0 // it was the only one
		} else {
			q.ents[*head-1].next = nd.next
		}
		at, ev = nd.at, nd.ev
		*nd = node[E]{next: q.free} // a free node holds nothing
		q.free = i + 1
		q.n--
	} else {
		top := q.farPop()
		at, ev = top.at, top.ev
	}
	q.now = at
	q.peeked = false
	if q.pops++; q.pops >= retuneEvery {
		q.retune()
	}
	return at, ev
}

// retune judges the width by what the last retuneEvery pops cost and, if
// another would cost less, rebuilds the buckets at it. A push passes the
// events of its bucket that come before its own (walked), one dependent
// read each, often a cache miss; a pop passes empty buckets (scanned), one
// read each of a slice read in order. Taking a step of the walk for 16 of
// the scan, and halving the width for halving the walk and doubling the
// scan (doubling it for the reverse):
//   - a push would have passed more than maxWalk events for more than 1
//     push in 64, or the walk cost more than twice the scan: the buckets
//     halve in width and double in number, if the ring may grow, so that
//     it covers as long (a shorter ring would send more to the heap);
//   - more than 1 push in 16 went beyond the ring: it doubles, in buckets
//     while it may grow, else in width;
//   - the scan cost more than twice the walk, and a pop passed more than
//     one empty bucket: the buckets double in width, and halve in number
//     while above the least.
//
// A simulation's events come in waves, so the costs swing from one judging
// to the next; a change that undoes the last one waits holdAfterReversal
// judgings before the next, so that the width settles instead of swinging
// with them.
func (q *Queue[E]) retune() {
	shift, nb := q.shift, len(q.heads)
	limit := min(maxBuckets, max(startBuckets, bucketsPerEvent*q.Len()))
	move := 0
	switch {
	case (q.deepPushes*64 > q.pushes || q.walked*8 > q.scanned) && shift > minShift && nb < limit:
		shift, nb, move = shift-1, nb*2, -1
	case q.farPushes*16 > q.pushes:
		if nb < limit {
			nb *= 2
		} else if shift < 62 {
			shift, move = shift+1, +1
		}
	case q.walked*32 < q.scanned && q.scanned > q.pops && shift < 62:
		shift, move = shift+1, +1
		if nb > minBuckets {
			nb /= 2
		}
	}
	if q.hold > 0 {
		q.hold--
	} else if shift != q.shift || nb != len(q.heads) {
		if move != 0 {
			if move == -q.lastMove {
				q.hold = holdAfterReversal
			}
			q.lastMove = move
		}
		q.rebuild(shift, nb)
	}
	q.pops, q.pushes, q.farPushes, q.deepPushes, q.walked, q.scanned = 0, 0, 0, 0, 0, 0
}

// holdAfterReversal is how many judgings of the width (retune) follow a
// change that undid the one before without a change.
const holdAfterReversal = 64

// rebuild moves every event to nb buckets 2^shift ns wide, or to the heap
// if beyond them: the heap's too, since a longer ring may hold them. The
// bucketed events go in order, so that each is appended to its bucket. It
// allocates only when the ring or the events outgrow what an earlier
// rebuild allocated.
func (q *Queue[E]) rebuild(shift uint, nb int) {
	moved := q.moved[:0]
	if q.n > 0 {
		mask := int64(len(q.heads) - 1)
		for b, left := q.now>>q.shift, q.n; left > 0; b++ {
			last := q.heads[b&mask]
			if last == 0 {
				continue
			}
			for i := q.ents[last-1].next - 1; ; i = q.ents[i].next - 1 {
				nd := &q.ents[i]
				moved = append(moved, entry[E]{at: nd.at, seq: nd.seq, ev: nd.ev})
				left--
				if i == last-1 {
					break
				}
			}
		}
	}
	for len(q.far) > 0 {
		moved = append(moved, q.farPop())
	}
	if cap(q.heads) >= nb {
		q.heads = q.heads[:nb]
		clear(q.heads)
	} else {
		q.heads = make([]int32, nb)
	}
	q.shift = shift
	q.lo = q.now >> shift
	q.peeked = false
	q.n = 0
	clear(q.ents)
	q.ents, q.free = q.ents[:0], 0
	for i := range moved {
		if !q.bucket(moved[i].at, moved[i].seq, moved[i].ev) {
			q.farPush(moved[i])
		}
	}
	clear(moved) // holds no event
	q.moved = moved[:0]
}

func (q *Queue[E]) farPush(e entry[E]) {
	q.far = append(q.far, e)
	h := q.far
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

func (q *Queue[E]) farPop() (top entry[E]) {
	h := q.far
	top = h[0]
	last := len(h) - 1
	e := h[last]
	h[last] = entry[E]{}
	h = h[:last]
	q.far = h
	if last == 0 {
		return top
	}
	i := 0
	for {
		c := arity*i + 1
		if c >= last {
			break
		}
		m := c
		for k := c + 1; k < c+arity && k < last; k++ {
			if less(&h[k], &h[m]) {
				m = k
			}
		}
		if !less(&h[m], &e) {
			break
		}
		h[i] = h[m]
		i = m
	}
	h[i] = e
	return top
}

func less[E any](a, b *entry[E]) bool { return lessKey(a.at, a.seq, b.at, b.seq) }

// lessKey orders events by (at, seq) as one 128-bit unsigned comparison:
// the borrow out of (aAt, aSeq) - (bAt, bSeq). No branch.
func lessKey(aAt int64, aSeq uint64, bAt int64, bSeq uint64) bool {
	_, borrow := bits.Sub64(aSeq, bSeq, 0)
	_, borrow = bits.Sub64(uint64(aAt), uint64(bAt), borrow)
	return borrow != 0
}
