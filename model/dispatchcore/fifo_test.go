package dispatchcore

import (
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"
)

// TestQueuePopsInDueOrder: whatever mix of fresh deliveries (fifo, when
// in due order) and retries (heap) a partner holds, they come off its
// queue by due time, first queued first among equals, and the fifo's
// chunks go back to the spare list once empty. Now and then the core's
// seq jumps by 2^32, as after 4 billion pushes elsewhere: an entry's seq
// must survive the fifo's 32-bit offsets.
func TestQueuePopsInDueOrder(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		rng := rand.New(rand.NewPCG(seed, 0))
		c := &Core{partners: make([]PartnerState, 1), fresh: func(p int32, runAt int64, _ uint32) *Item {
			return &Item{Partner: p, RunAt: runAt, FirstSeen: runAt}
		}}
		p := &c.partners[0]
		type want struct {
			runAt int64
			seq   uint64
		}
		var queued []want
		now := int64(0)
		for step := 0; step < 2000; step++ {
			switch op := rng.IntN(10); {
			case op < 6: // a new delivery, due now or (rarely) earlier
				runAt := now
				if rng.IntN(10) == 0 {
					runAt -= rng.Int64N(50)
				}
				now += rng.Int64N(3) // ties happen
				if rng.IntN(50) == 0 {
					c.seq += 1 << 32
				}
				c.seq++
				c.pushFresh(0, runAt, c.seq, 0)
				queued = append(queued, want{runAt, c.seq})
			case op < 8: // a retry, due later
				runAt := now + rng.Int64N(100)
				c.seq++
				c.pushItem(p, &Item{RunAt: runAt}, c.seq)
				queued = append(queued, want{runAt, c.seq})
			default:
				if p.head.it == nil {
					continue
				}
				least := slices.MinFunc(queued, func(a, b want) int {
					if a.runAt != b.runAt {
						return int(a.runAt - b.runAt)
					}
					return int(a.seq) - int(b.seq)
				})
				if got := (want{p.head.runAt, p.head.seq}); got != least {
					t.Fatalf("seed %d step %d: head %+v, want %+v", seed, step, got, least)
				}
				queued = slices.DeleteFunc(queued, func(w want) bool { return w == least })
				c.popItem(0)
			}
		}
		for p.head.it != nil {
			c.popItem(0)
		}
		if p.fifo != (fifo{}) || len(p.q) != 0 {
			t.Fatalf("seed %d: queue not empty after popping everything: fifo %+v, heap %d", seed, p.fifo, len(p.q))
		}
		if seed == 1 && c.spare == nil {
			t.Fatal("no fifo chunk went back to the spare list")
		}
	}
}

// TestFifoChunkIs128Bytes: a chunk fills its allocation size class; an
// entry is 16 bytes with a seventh of the link and the base.
func TestFifoChunkIs128Bytes(t *testing.T) {
	if got := unsafe.Sizeof(fifoChunk{}); got > 128 || got+unsafe.Sizeof(fifoEntry{}) <= 128 {
		t.Errorf("fifoChunk is %d bytes, want the most entries that fit in 128", got)
	}
}
