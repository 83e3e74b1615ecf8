package drills

import "testing"

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
