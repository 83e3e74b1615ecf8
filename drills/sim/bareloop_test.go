package sim

import (
	"fmt"
	"testing"
)

func TestBareRetryLoop(t *testing.T) {
	a := BareRetryLoop(1000, 100_000, 0.2, 7)
	if b := BareRetryLoop(1000, 100_000, 0.2, 7); a != b {
		t.Errorf("same seed, different runs: %d and %d", a, b)
	}
	// The checksum sums the failed tries of delivered items: with no
	// failures it is 0, with failures it grows.
	if z := BareRetryLoop(1000, 100_000, 0, 7); z != 0 {
		t.Errorf("no failures, checksum %d", z)
	}
	if a <= 0 {
		t.Errorf("20%% failures, checksum %d", a)
	}
}

// BenchmarkBareRetryLoopByPending runs the reference loop of `stormdrill
// bench` (100,000 pending) at larger heaps: its own cost per attempt grows
// once the heap outgrows the caches, as a simulation's does when its
// subscribers and pending deliveries do.
func BenchmarkBareRetryLoopByPending(b *testing.B) {
	for _, pending := range []int{100_000, 1_000_000, 3_000_000} {
		b.Run(fmt.Sprintf("pending=%d", pending), func(b *testing.B) {
			const attempts = 5_000_000 // as stormdrill bench runs it
			var sink int64
			for b.Loop() {
				sink += BareRetryLoop(pending, attempts, 0.2, 1)
			}
			if sink < 0 {
				b.Fatal("negative checksum")
			}
			b.ReportMetric(float64(b.N)*attempts/b.Elapsed().Seconds(), "attempts/s")
		})
	}
}
