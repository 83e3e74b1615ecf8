package dispatchcore

import (
	"testing"
	"time"

	"github.com/stormdrill/stormdrill/model"
)

// benchCore is a dispatcher shaped like the flagship drill's: 200 partners
// with a breaker and a per-partner limit, 64 workers, full jitter; items is
// the pool of deliveries the cycle reuses.
func benchCore(tb testing.TB) (*Core, []*Item) {
	pol := &model.Policy{MaxAttempts: 8, Backoff: model.Backoff{Base: 2 * time.Second, Cap: 5 * time.Minute, Jitter: model.JitterFull}}
	pcs := partners(200, 4, pol)
	for i := range pcs {
		pcs[i].Breaker = model.NewBreaker(model.BreakerSettings{Trip: model.TripConsecutive, Threshold: 5, Cooldown: 30 * time.Second})
	}
	c := mustNew(tb, Config{Workers: 64, QueueCapacity: 100_000, Partners: pcs})
	items := make([]*Item, 4096)
	for i := range items {
		items[i] = &Item{Partner: int32(i % len(pcs))}
	}
	return c, items
}

// cycle offers one delivery, starts what is due and completes it: the
// dispatcher's work per delivery in a healthy simulation.
func cycle(c *Core, it *Item, now time.Time) {
	*it = Item{Partner: it.Partner, FirstSeen: now.UnixNano(), RunAt: now.UnixNano()}
	if err := c.Offer(it, now.UnixNano()); err != nil {
		panic(err) // a benchmark harness bug, not user input
	}
	nextComplete(c, now)
}

func nextComplete(c *Core, now time.Time) {
	for {
		got, v, _ := c.Next(now.UnixNano())
		if got == nil {
			return
		}
		if v == Start {
			c.Complete(got, model.Outcome{Status: 200}, now.UnixNano(), 0.5)
		}
	}
}

func BenchmarkOfferNextComplete(b *testing.B) {
	c, items := benchCore(b)
	now := t0
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		now = now.Add(time.Millisecond)
		cycle(c, items[i%len(items)], now)
		i++
	}
}

// TestNextCompleteAllocs: the steady-state cycle allocates nothing once the
// queues have grown to size.
func TestNextCompleteAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	c, items := benchCore(t)
	now := t0
	i := 0
	step := func() {
		now = now.Add(time.Millisecond)
		cycle(c, items[i%len(items)], now)
		i++
	}
	for range 10_000 { // warm up: grow every heap and the ring
		step()
	}
	if n := testing.AllocsPerRun(10_000, step); n != 0 {
		t.Errorf("Offer+Next+Complete: %v allocs per cycle, want 0", n)
	}
	// A retry cycle too: the failure reschedules and the retry starts later.
	fails := func() {
		now = now.Add(time.Millisecond)
		it := items[i%len(items)]
		i++
		*it = Item{Partner: it.Partner, FirstSeen: now.UnixNano(), RunAt: now.UnixNano()}
		_ = c.Offer(it, now.UnixNano())
		for {
			got, v, _ := c.Next(now.UnixNano())
			if got == nil {
				break
			}
			if v == Start && got.Attempts == 1 {
				c.Complete(got, model.Outcome{Status: 503}, now.UnixNano(), 0.5)
			} else if v == Start {
				c.Complete(got, model.Outcome{Status: 200}, now.UnixNano(), 0.5)
			}
		}
	}
	for range 10_000 {
		fails()
	}
	if n := testing.AllocsPerRun(10_000, fails); n != 0 {
		t.Errorf("cycle with retries: %v allocs per cycle, want 0", n)
	}
}
