package dispatchcore

import "math"

// fifoChunkLen is how many entries a fifo chunk holds: a chunk is 124
// bytes (in the 128-byte allocation size class), so a partner with a few
// deliveries queued holds little beyond them, and one with thousands
// wastes at most one chunk.
const fifoChunkLen = 9

// fifoChunk holds entries of a fifo: the items, and each one's seq as an
// offset from the chunk's base, the seq of its first entry. An entry is 12
// bytes where an item's pointer and its full seq took 16: a backlog of
// millions is mostly fifo entries. An entry whose offset would not fit in
// 32 bits does not join the fifo (fifo.fits): it goes to the partner's heap.
//
// An item's RunAt is read off the item, which does not change it while
// queued, and only for the fifo's front.
type fifoChunk struct {
	next *fifoChunk
	base uint64
	it   [fifoChunkLen]*Item
	off  [fifoChunkLen]uint32
}

// fifo is a partner's offered deliveries in the order they were offered,
// as long as that is due order: each is due no earlier than the one before
// it and was queued after it (a larger seq). New deliveries usually are,
// so a partner with a backlog (a breaker holding thousands) queues and
// takes them in constant time, in chunks that go back to the core's spare
// list as they empty, instead of sifting a heap that grows by copying.
type fifo struct {
	head, tail *fifoChunk
	lastRunAt  int64 // the newest entry's RunAt
	n          int32 // entries
	lo, hi     uint8 // head's entries [lo:] and tail's [:hi] are queued ([lo:hi] when head is tail)
}

// fits reports whether a delivery due at runAt, with a seq larger than
// any queued one, can join the fifo's end: it keeps the fifo in due order,
// and its seq is within 32 bits of the tail chunk's base if it goes there.
func (f *fifo) fits(runAt int64, seq uint64) bool {
	return f.n == 0 || runAt >= f.lastRunAt && (f.hi == fifoChunkLen || seq-f.tail.base <= math.MaxUint32)
}

// push adds it, due at runAt, with seq, at the end (fits says it may);
// spare is the core's list of free chunks.
func (f *fifo) push(it *Item, seq uint64, runAt int64, spare **fifoChunk) {
	if f.tail == nil || f.hi == fifoChunkLen {
		ch := *spare
		if ch != nil {
			*spare, ch.next = ch.next, nil
		} else {
			ch = new(fifoChunk)
		}
		ch.base = seq
		if f.tail == nil {
			f.head, f.lo = ch, 0
		} else {
			f.tail.next = ch
		}
		f.tail, f.hi = ch, 0
	}
	f.tail.it[f.hi] = it
	f.tail.off[f.hi] = uint32(seq - f.tail.base)
	f.hi++
	f.n++
	f.lastRunAt = runAt
}

// front is the earliest entry: its item and seq; the fifo must not be
// empty.
func (f *fifo) front() (*Item, uint64) {
	return f.head.it[f.lo], f.head.base + uint64(f.head.off[f.lo])
}

// pop removes the front entry, returning emptied chunks to spare.
func (f *fifo) pop(spare **fifoChunk) {
	f.head.it[f.lo] = nil
	f.lo++
	f.n--
	switch {
	case f.n == 0:
		f.head.next = *spare
		*spare = f.head
		*f = fifo{}
	case f.lo == fifoChunkLen:
		ch := f.head
		f.head, f.lo = ch.next, 0
		ch.next = *spare
		*spare = ch
	}
}

// each calls fn for every entry's item, front first.
func (f *fifo) each(fn func(*Item)) {
	for ch := f.head; ch != nil; ch = ch.next {
		from, to := 0, fifoChunkLen
		if ch == f.head {
			from = int(f.lo)
		}
		if ch == f.tail {
			to = int(f.hi)
		}
		for k := from; k < to; k++ {
			fn(ch.it[k])
		}
	}
}
