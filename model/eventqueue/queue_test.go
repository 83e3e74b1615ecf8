package eventqueue

import (
	"fmt"
	"math"
	"runtime"
	"testing"
	"weak"

	"github.com/stormdrill/stormdrill/model/seed"
)

func TestQueueOrdersByTimeThenInsertion(t *testing.T) {
	var q Queue[string]
	q.Push(30, "c")
	q.Push(10, "a1")
	q.Push(20, "b")
	q.Push(10, "a2") // same time as a1: runs after it
	want := []string{"a1", "a2", "b", "c"}
	for i, w := range want {
		at, ev := q.Pop()
		if ev != w {
			t.Fatalf("pop %d = %q at %d, want %q", i, ev, at, w)
		}
		if q.Now() != at {
			t.Fatalf("clock %d after popping an event at %d", q.Now(), at)
		}
	}
	if q.Len() != 0 {
		t.Fatalf("queue not empty")
	}
}

func TestQueuePeekEventIsWhatPopReturns(t *testing.T) {
	var q Queue[int]
	if _, ok := q.PeekEvent(); ok {
		t.Fatal("PeekEvent on an empty queue says ok")
	}
	r := seed.NewRand(3, "peek")
	for i := 0; i < 200; i++ {
		q.Push(r.Int64N(50), i)
	}
	for q.Len() > 0 {
		peeked, ok := q.PeekEvent()
		at, _ := q.Peek()
		gotAt, got := q.Pop()
		if !ok || peeked != got || at != gotAt {
			t.Fatalf("PeekEvent %d (ok %v) at %d, then Pop %d at %d", peeked, ok, at, got, gotAt)
		}
	}
}

func TestQueuePastEventRunsNow(t *testing.T) {
	var q Queue[int]
	q.Push(100, 1)
	q.Pop()
	q.Push(50, 2) // in the past: clamped to now
	if at, _ := q.Pop(); at != 100 {
		t.Fatalf("past event ran at %d, want 100 (time went backwards)", at)
	}
}

func TestQueueManyRandom(t *testing.T) {
	r := seed.NewRand(7, "test")
	var q Queue[int]
	for i := 0; i < 10000; i++ {
		q.Push(r.Int64N(1_000_000), i)
	}
	last := int64(-1)
	for q.Len() > 0 {
		at, _ := q.Pop()
		if at < last {
			t.Fatalf("out of order: %d after %d", at, last)
		}
		last = at
	}
}

func BenchmarkQueuePushPop(b *testing.B) {
	var q Queue[int]
	r := seed.NewRand(1, "bench")
	for i := 0; i < 10000; i++ {
		q.Push(r.Int64N(1e9), i)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		at, ev := q.Pop()
		q.Push(at+r.Int64N(1e6), ev)
	}
}

// Pops and pushes interleaved, as a simulation makes them (many ties, so
// that events at one time move down from a bucket together), come out in
// (time, insertion) order.
func TestQueueInterleavedMatchesSortedOrder(t *testing.T) {
	r := seed.NewRand(11, "interleaved")
	var q Queue[int]
	var ref refQueue
	var n int64
	for step := 0; step < 20000; step++ {
		switch k := r.IntN(10); {
		case k < 4 || len(ref) == 0:
			at := max(q.Now()+r.Int64N(30), q.Now()) // many ties
			q.Push(at, int(n))
			ref.insert(refEvent{at, n})
			n++
		case k < 5:
			at, ok := q.Peek()
			pe, pok := q.PeekEvent()
			if !ok || !pok || at != ref[0].at || int64(pe) != ref[0].n {
				t.Fatalf("step %d: peek (%d, %d) ok %v, want (%d, %d)", step, at, pe, ok, ref[0].at, ref[0].n)
			}
		default:
			at, e := q.Pop()
			if at != ref[0].at || int64(e) != ref[0].n {
				t.Fatalf("step %d: pop (%d, %d), want (%d, %d)", step, at, e, ref[0].at, ref[0].n)
			}
			ref = ref[1:]
		}
		if q.Len() != len(ref) {
			t.Fatalf("step %d: Len %d, want %d", step, q.Len(), len(ref))
		}
	}
}

// BenchmarkQueueCompletions is the event queue as a simulation of
// attempts in flight uses it: each pop schedules the next completion
// at a lognormal delay (median 80 ms, p99 600 ms) after the current time,
// with pending events in flight.
func BenchmarkQueueCompletions(b *testing.B) {
	for _, pending := range []int{64, 640, 6400, 64000} {
		b.Run(fmt.Sprintf("pending=%d", pending), func(b *testing.B) {
			var q Queue[int]
			r := seed.NewRand(1, "completions")
			delay := func() int64 { return int64(80e6 * math.Exp(0.866*r.NormFloat64())) }
			for i := 0; i < pending; i++ {
				q.Push(delay(), i)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				at, ev := q.Pop()
				q.Push(at+delay(), ev)
			}
		})
	}
}

// Times spread over many orders of magnitude, ties with the last event
// popped and with queued ones, events in the past, and peeks between
// pushes and pops, against a sorted list.
func TestQueueWideTimesMatchSortedOrder(t *testing.T) {
	for _, s := range []uint64{1, 2, 3} {
		r := seed.NewRand(s, "wide")
		var q Queue[int]
		var ref refQueue
		var n int64
		for step := 0; step < 50000; step++ {
			switch k := r.IntN(20); {
			case k < 8 || len(ref) == 0:
				var at int64
				switch r.IntN(4) {
				case 0: // anywhere up to about 2^40 ns ahead
					at = q.Now() + r.Int64N(1<<r.IntN(41))
				case 1: // now: a tie with the event popped last
					at = q.Now()
				case 2: // in the past: runs now
					at = q.Now() - r.Int64N(1000)
				default: // a tie with a queued event
					if len(ref) > 0 {
						at = ref[r.IntN(len(ref))].at
					}
				}
				q.Push(at, int(n))
				ref.insert(refEvent{max(at, q.Now()), n})
				n++
			case k < 11:
				at, ok := q.Peek()
				pe, pok := q.PeekEvent()
				if !ok || !pok || at != ref[0].at || int64(pe) != ref[0].n {
					t.Fatalf("seed %d step %d: peek (%d, %d) ok %v, want (%d, %d)", s, step, at, pe, ok, ref[0].at, ref[0].n)
				}
			default:
				at, e := q.Pop()
				if at != ref[0].at || int64(e) != ref[0].n {
					t.Fatalf("seed %d step %d: pop (%d, %d), want (%d, %d)", s, step, at, e, ref[0].at, ref[0].n)
				}
				ref = ref[1:]
			}
			if q.Len() != len(ref) {
				t.Fatalf("seed %d step %d: Len %d, want %d", s, step, q.Len(), len(ref))
			}
		}
		for len(ref) > 0 {
			at, e := q.Pop()
			if at != ref[0].at || int64(e) != ref[0].n {
				t.Fatalf("seed %d, draining: pop (%d, %d), want (%d, %d)", s, at, e, ref[0].at, ref[0].n)
			}
			ref = ref[1:]
		}
		if _, ok := q.Peek(); ok || q.Len() != 0 {
			t.Fatalf("seed %d: drained queue peeks an event or has length %d", s, q.Len())
		}
	}
}

// refQueue is what the queue tests compare the queue with: the pending
// events in (time, insertion) order, in a sorted slice.
type refQueue []refEvent

type refEvent struct{ at, n int64 }

// insert places e after every pending event at or before its time.
func (ref *refQueue) insert(e refEvent) {
	s := *ref
	i := len(s)
	for i > 0 && s[i-1].at > e.at {
		i--
	}
	s = append(s, refEvent{})
	copy(s[i+1:], s[i:])
	s[i] = e
	*ref = s
}

// A popped event, and one moved from bucket to bucket, is not kept alive
// by the queue's arrays: a simulation's events may point at large state.
func TestQueueHoldsNoPoppedEvent(t *testing.T) {
	var q Queue[*[1 << 10]byte]
	var popped []weak.Pointer[[1 << 10]byte]
	for i := 0; i < 64; i++ {
		ev := new([1 << 10]byte)
		popped = append(popped, weak.Make(ev))
		// One bucket: the first pop moves them all, one by one after.
		q.Push(1<<30+int64(i)*1000, ev)
	}
	q.Push(1<<40, new([1 << 10]byte)) // still queued
	for q.Len() > 1 {
		q.Pop()
	}
	runtime.GC()
	for i, w := range popped {
		if w.Value() != nil {
			t.Fatalf("event %d is still reachable after its pop", i)
		}
	}
	runtime.KeepAlive(&q) // the queue itself is live
}

// Regression: buckets that grew by append kept the largest array each
// ever needed, 20 times the events' bytes, and left as much as garbage,
// which pushed the simulator past 150 bytes per pending delivery. Once
// warm, the queue allocates nothing, and its arrays stay a small multiple
// of its events.
func TestQueueArraysStayNearItsEvents(t *testing.T) {
	const inFlight = 640
	var q Queue[int]
	r := seed.NewRand(5, "arrays")
	delay := func() int64 { return int64(80e6 * math.Exp(0.866*r.NormFloat64())) }
	for i := range inFlight {
		q.Push(delay(), i)
	}
	step := func() {
		at, ev := q.Pop()
		q.Push(at+delay(), ev)
	}
	for range 200_000 {
		step()
	}
	if allocs := testing.AllocsPerRun(20, func() {
		for range 10_000 {
			step()
		}
	}); allocs != 0 {
		t.Errorf("a warm queue allocates: %v allocations per 10,000 events", allocs)
	}
	held := arraysHeld(&q)
	if held > 16*inFlight {
		t.Errorf("arrays hold room for %d events, %.1f times the %d queued", held, float64(held)/inFlight, inFlight)
	}
}

// Regression test for the first form of sorted small buckets, which sorted
// a small bucket into b[0] at any digit: after a quiet spell left a few
// events spread over seconds, a burst of pushes (a fan-out starting
// thousands of attempts at once) landed before b[0]'s latest event and
// was inserted there one by one. At 20,000 subscribers b[0] grew to room
// for 131,072 events. The steady pop-one-push-one load of
// TestQueueArraysStayNearItsEvents never leaves such a gap.
func TestQueueBurstAfterQuietSpellStaysInBuckets(t *testing.T) {
	// Given a queue holding a few events spread over ten seconds,
	var q Queue[int]
	for i := range 10 {
		q.Push(int64(i+1)*1e9, -1)
	}
	r := seed.NewRand(9, "burst")
	delay := func() int64 { return int64(80e6 * math.Exp(0.866*r.NormFloat64())) }
	const burst = 20_000
	largest0 := 0
	for round := range 3 {
		// when the next is popped and a burst follows it, due within the
		// next second or so,
		now, _ := q.Pop()
		for i := range burst {
			q.Push(now+delay(), i)
			largest0 = max(largest0, cap(q.b[0]))
		}
		// then b[0] holds what a refill sorted there, not the burst;
		if largest0 > 4*minArray {
			t.Fatalf("round %d: b[0] grew to room for %d events during a burst of %d", round, largest0, burst)
		}
		// and the arrays stay near the events they hold, with the burst
		// popped.
		for q.Len() > 10-round-1 {
			q.Pop()
			largest0 = max(largest0, cap(q.b[0]))
		}
		held := arraysHeld(&q)
		if held > 16*burst {
			t.Errorf("round %d: arrays hold room for %d events, %.1f times the burst of %d", round, held, float64(held)/burst, burst)
		}
	}
	if largest0 > 4*minArray {
		t.Errorf("b[0] grew to room for %d events", largest0)
	}
}

// arraysHeld is how many events the queue's arrays have room for, its
// buckets' and its spares'.
func arraysHeld[E any](q *Queue[E]) int {
	held := 0
	for k := range q.b {
		held += cap(q.b[k])
	}
	for _, class := range q.spare {
		for _, s := range class {
			held += cap(s)
		}
	}
	return held
}
