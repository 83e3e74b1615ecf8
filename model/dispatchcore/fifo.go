package dispatchcore

// fifoChunkLen is how many entries a fifo chunk holds: a chunk is 120
// bytes (in the 128-byte allocation size class), so a partner with a few
// deliveries queued holds little beyond them, and one with thousands
// wastes at most one chunk.
const fifoChunkLen = 7

// fifoEntry is a delivery in a fifo; its RunAt is read off the item, which
// does not change it while queued, and only for the fifo's front.
type fifoEntry struct {
	it  *Item
	seq uint64
}

type fifoChunk struct {
	next *fifoChunk
	e    [fifoChunkLen]fifoEntry
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
	lo, hi     uint8 // head.e[lo:] and tail.e[:hi] hold entries (e[lo:hi] when head is tail)
}

// fits reports whether a delivery due at runAt, with a seq larger than
// any queued one, can join the fifo's end and keep it in due order.
func (f *fifo) fits(runAt int64) bool { return f.n == 0 || runAt >= f.lastRunAt }

// push adds e, due at runAt, at the end; spare is the core's list of free
// chunks.
func (f *fifo) push(e fifoEntry, runAt int64, spare **fifoChunk) {
	if f.tail == nil || f.hi == fifoChunkLen {
		ch := *spare
		if ch != nil {
			*spare, ch.next = ch.next, nil
		} else {
			ch = new(fifoChunk)
		}
		if f.tail == nil {
			f.head, f.lo = ch, 0
		} else {
			f.tail.next = ch
		}
		f.tail, f.hi = ch, 0
	}
	f.tail.e[f.hi] = e
	f.hi++
	f.n++
	f.lastRunAt = runAt
}

// front is the earliest entry; the fifo must not be empty.
func (f *fifo) front() *fifoEntry { return &f.head.e[f.lo] }

// pop removes the front entry, returning emptied chunks to spare.
func (f *fifo) pop(spare **fifoChunk) {
	f.head.e[f.lo] = fifoEntry{}
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

// each calls fn for every entry, front first.
func (f *fifo) each(fn func(*fifoEntry)) {
	for ch := f.head; ch != nil; ch = ch.next {
		from, to := 0, fifoChunkLen
		if ch == f.head {
			from = int(f.lo)
		}
		if ch == f.tail {
			to = int(f.hi)
		}
		for k := from; k < to; k++ {
			fn(&ch.e[k])
		}
	}
}
