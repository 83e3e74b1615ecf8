package dispatchcore

// itemHeap is a partner's queue ordered by (RunAt, seq): due-ordered, FIFO
// among equals. Hand-written rather than container/heap to avoid interface
// calls on the simulator's hot path. Each entry carries its item's keys, so
// sifting reads one contiguous array and never the items themselves (a
// cache miss each, with many partners).
type itemHeap []heapEntry

type heapEntry struct {
	runAt int64  // it.RunAt, which does not change while it is queued
	seq   uint64 // the core's count of pushes when it was queued: FIFO among equal runAt
	it    *Item
}

func (e *heapEntry) less(f *heapEntry) bool {
	if e.runAt != f.runAt {
		return e.runAt < f.runAt
	}
	return e.seq < f.seq
}

func (h *itemHeap) push(e heapEntry) {
	*h = append(*h, e)
	s := *h
	i := len(s) - 1
	for i > 0 {
		parent := (i - 1) / 2
		if !e.less(&s[parent]) {
			break
		}
		s[i] = s[parent]
		i = parent
	}
	s[i] = e
}

func (h *itemHeap) pop() heapEntry {
	s := *h
	top := s[0]
	last := len(s) - 1
	e := s[last]
	s[last] = heapEntry{}
	s = s[:last]
	*h = s
	if last == 0 {
		return top
	}
	i := 0
	for {
		l := 2*i + 1
		if l >= last {
			break
		}
		m := l
		if r := l + 1; r < last && s[r].less(&s[l]) {
			m = r
		}
		if !s[m].less(&e) {
			break
		}
		s[i] = s[m]
		i = m
	}
	s[i] = e
	return top
}

// timerHeap orders parked partners by wakeAt.
type timerHeap struct {
	c *Core
	h []int
}

func (t *timerHeap) Len() int { return len(t.h) }

func (t *timerHeap) less(i, j int) bool {
	a, b := &t.c.partners[t.h[i]], &t.c.partners[t.h[j]]
	if a.wakeAt != b.wakeAt {
		return a.wakeAt < b.wakeAt
	}
	return t.h[i] < t.h[j]
}

func (t *timerHeap) swap(i, j int) {
	t.h[i], t.h[j] = t.h[j], t.h[i]
	t.c.partners[t.h[i]].timerIdx = int32(i)
	t.c.partners[t.h[j]].timerIdx = int32(j)
}

func (t *timerHeap) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !t.less(i, p) {
			break
		}
		t.swap(i, p)
		i = p
	}
}

func (t *timerHeap) down(i int) bool {
	start := i
	for {
		l := 2*i + 1
		if l >= len(t.h) {
			break
		}
		m := l
		if r := l + 1; r < len(t.h) && t.less(r, l) {
			m = r
		}
		if !t.less(m, i) {
			break
		}
		t.swap(i, m)
		i = m
	}
	return i > start
}

func (t *timerHeap) push(partner int) {
	t.h = append(t.h, partner)
	i := len(t.h) - 1
	t.c.partners[partner].timerIdx = int32(i)
	t.up(i)
}

func (t *timerHeap) remove(i int) {
	last := len(t.h) - 1
	removed := t.h[i]
	if i != last {
		t.swap(i, last)
	}
	t.h = t.h[:last]
	t.c.partners[removed].timerIdx = -1
	if i != last {
		if !t.down(i) {
			t.up(i)
		}
	}
}

func (t *timerHeap) fix(i int) {
	if !t.down(i) {
		t.up(i)
	}
}
