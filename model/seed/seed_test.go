package seed

import (
	"math/rand/v2"
	"testing"
)

func TestDeriveIndependentAndStable(t *testing.T) {
	tests := []struct {
		seed      uint64
		a, b      string
		wantEqual bool
	}{
		{42, "partner/acme/0", "partner/acme/0", true},  // same name, same seed
		{42, "partner/acme/0", "partner/acme/1", false}, // another member
		{42, "source", "partner/acme/0", false},         // another component
	}
	for _, tt := range tests {
		if got := Derive(tt.seed, tt.a) == Derive(tt.seed, tt.b); got != tt.wantEqual {
			t.Errorf("Derive(%d,%q)==Derive(%d,%q) is %v", tt.seed, tt.a, tt.seed, tt.b, got)
		}
	}
	if Derive(1, "x") == Derive(2, "x") {
		t.Error("different seeds gave the same sub-seed")
	}
	a, b := NewRand(9, "s"), NewRand(9, "s")
	for i := 0; i < 100; i++ {
		if a.Uint64() != b.Uint64() {
			t.Fatal("same seed and name gave different streams")
		}
	}
}

// A stream seeded in place with SeedPCG is NewRand's stream.
func TestSeedPCGMatchesNewRand(t *testing.T) {
	var p rand.PCG
	SeedPCG(&p, 42, "partner/x-1")
	a, b := rand.New(&p), NewRand(42, "partner/x-1")
	for i := range 1000 {
		if x, y := a.Uint64(), b.Uint64(); x != y {
			t.Fatalf("draw %d: %#x vs %#x", i, x, y)
		}
	}
}

// Float64 draws what rand.Rand's Float64 draws from the same PCG.
func TestFloat64IsRandsFloat64(t *testing.T) {
	var p rand.PCG
	SeedPCG(&p, 7, "float")
	r := NewRand(7, "float")
	for i := range 1000 {
		if x, y := Float64(&p), r.Float64(); x != y {
			t.Fatalf("draw %d: %v, rand.Rand %v", i, x, y)
		}
	}
}
