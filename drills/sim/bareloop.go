package sim

import (
	"math/rand/v2"
	"time"
)

// BareRetryLoop is the simulator's reference point: the least work a retry
// simulation can do per attempt. It keeps pending deliveries due times in a
// 4-ary min-heap, pops the earliest, fails it with probability failP
// (a capped exponential backoff with full jitter puts it back) or delivers
// it (a new delivery takes its place), until it has made attempts attempts.
// It returns a checksum of the run, so the compiler cannot drop the work.
func BareRetryLoop(pending, attempts int, failP float64, seed uint64) int64 {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	type item struct {
		due   int64
		tries int32
	}
	h := make([]item, 0, pending)
	less := func(i, j int) bool { return h[i].due < h[j].due }
	down := func(i int) {
		for {
			c := 4*i + 1
			if c >= len(h) {
				return
			}
			m := c
			for k := c + 1; k < c+4 && k < len(h); k++ {
				if less(k, m) {
					m = k
				}
			}
			if !less(m, i) {
				return
			}
			h[i], h[m] = h[m], h[i]
			i = m
		}
	}
	for i := 0; i < pending; i++ {
		h = append(h, item{due: int64(rng.IntN(int(time.Second)))})
	}
	for i := (len(h) - 2) / 4; i >= 0; i-- {
		down(i)
	}
	const base, capDelay = int64(time.Second), int64(5 * time.Minute)
	var sum int64
	for n := 0; n < attempts && len(h) > 0; n++ {
		it := &h[0]
		now := it.due
		if rng.Float64() < failP {
			it.tries++
			d := min(base<<min(it.tries, 20), capDelay)
			it.due = now + rng.Int64N(d+1)
		} else {
			sum += int64(it.tries)
			it.tries = 0
			it.due = now + int64(rng.IntN(int(time.Second)))
		}
		down(0)
	}
	return sum
}
