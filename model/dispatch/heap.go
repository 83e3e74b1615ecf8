package dispatch

// itemHeap is a partner's queue ordered by (RunAt, seq): due-ordered, FIFO
// among equals. Hand-written rather than container/heap to avoid interface
// calls on the simulator's hot path.
type itemHeap []*Item

func (h itemHeap) less(i, j int) bool {
	if h[i].RunAt != h[j].RunAt {
		return h[i].RunAt < h[j].RunAt
	}
	return h[i].seq < h[j].seq
}

func (h *itemHeap) push(it *Item) {
	*h = append(*h, it)
	s := *h
	i := len(s) - 1
	it.heapIdx = i
	for i > 0 {
		parent := (i - 1) / 2
		if !s.less(i, parent) {
			break
		}
		s[i], s[parent] = s[parent], s[i]
		s[i].heapIdx, s[parent].heapIdx = i, parent
		i = parent
	}
}

func (h *itemHeap) pop() *Item {
	s := *h
	top := s[0]
	last := len(s) - 1
	s[0] = s[last]
	s[0].heapIdx = 0
	s[last] = nil
	s = s[:last]
	*h = s
	i := 0
	for {
		l := 2*i + 1
		if l >= len(s) {
			break
		}
		m := l
		if r := l + 1; r < len(s) && s.less(r, l) {
			m = r
		}
		if !s.less(m, i) {
			break
		}
		s[i], s[m] = s[m], s[i]
		s[i].heapIdx, s[m].heapIdx = i, m
		i = m
	}
	top.heapIdx = -1
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
	t.c.partners[t.h[i]].timerIdx = i
	t.c.partners[t.h[j]].timerIdx = j
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
	t.c.partners[partner].timerIdx = i
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
