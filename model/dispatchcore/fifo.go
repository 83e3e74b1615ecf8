package dispatchcore

import "math"

// fifoChunkLen is how many entries a fifo chunk holds: a chunk is 128
// bytes (its allocation size class), so a partner with a few deliveries
// queued holds little beyond them, and one with thousands wastes at most
// one chunk.
const fifoChunkLen = 7

// fifoEntry is a fresh delivery queued in a fifo: when it is due (and was
// first seen), its seq as an offset from its chunk's base, and the
// caller's token for it (see OfferFresh). No item: a backlog of millions
// is mostly fresh deliveries nobody has tried yet, and an entry of 16
// bytes stands for what would otherwise be an item and an entry, 60.
type fifoEntry struct {
	runAt int64
	off   uint32
	tok   uint32
}

// fifoChunk holds entries of a fifo, each with its seq as an offset from
// the chunk's base, the seq of its first entry. An entry whose offset
// would not fit in 32 bits does not join the fifo (fifo.fits). The chunk
// holds no pointer but its link, so the collector has nothing to read in
// it.
type fifoChunk struct {
	next *fifoChunk
	base uint64
	e    [fifoChunkLen]fifoEntry
}

// fifo is a partner's fresh deliveries in the order they were offered, as
// long as that is due order: each is due no earlier than the one before
// it and was queued after it (a larger seq). New deliveries usually are,
// so a partner with a backlog (a breaker holding thousands) queues and
// takes them in constant time, in chunks that go back to the core's spare
// list as they empty, instead of sifting a heap that grows by copying.
type fifo struct {
	head, tail *fifoChunk
	n          int32 // entries
	lo, hi     uint8 // head's entries [lo:] and tail's [:hi] are queued ([lo:hi] when head is tail)
}

// fits reports whether a delivery due at runAt, with a seq larger than
// any queued one, can join the fifo's end: it keeps the fifo in due order,
// and its seq is within 32 bits of the tail chunk's base if it goes there.
func (f *fifo) fits(runAt int64, seq uint64) bool {
	return f.n == 0 || runAt >= f.tail.e[f.hi-1].runAt && (f.hi == fifoChunkLen || seq-f.tail.base <= math.MaxUint32)
}

// push adds the fresh delivery tok, due at runAt, with seq, at the end
// (fits says it may); spare is the core's list of free chunks.
func (f *fifo) push(runAt int64, seq uint64, tok uint32, spare **fifoChunk) {
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
	f.tail.e[f.hi] = fifoEntry{runAt: runAt, off: uint32(seq - f.tail.base), tok: tok}
	f.hi++
	f.n++
}

// front is the earliest entry: when it is due, its seq and its token;
// the fifo must not be empty.
func (f *fifo) front() (runAt int64, seq uint64, tok uint32) {
	e := &f.head.e[f.lo]
	return e.runAt, f.head.base + uint64(e.off), e.tok
}

// pop removes the front entry, returning emptied chunks to spare.
func (f *fifo) pop(spare **fifoChunk) {
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

// each calls fn for every entry's due time, front first.
func (f *fifo) each(fn func(runAt int64)) {
	for ch := f.head; ch != nil; ch = ch.next {
		from, to := 0, fifoChunkLen
		if ch == f.head {
			from = int(f.lo)
		}
		if ch == f.tail {
			to = int(f.hi)
		}
		for k := from; k < to; k++ {
			fn(ch.e[k].runAt)
		}
	}
}
