package seed

import "math/rand/v2"

// Derive returns the sub-seed of a named component: a SplitMix64 mix of the
// drill seed and an FNV-1a hash of the name. Each component derives its own
// stream by name, so adding a partner does not reshuffle every other stream.
func Derive(seed uint64, name string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(name); i++ {
		h ^= uint64(name[i])
		h *= 1099511628211
	}
	return splitmix(seed ^ splitmix(h))
}

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// SeedPCG seeds p as the source of NewRand(seed, name), so that a caller
// can keep many streams' state in one slice.
func SeedPCG(p *rand.PCG, seed uint64, name string) {
	s := Derive(seed, name)
	p.Seed(s, splitmix(s))
}

// Float64 is the number rand.New(p).Float64() would draw next, drawn
// from p itself: a hot path spares the call through rand.Source.
func Float64(p *rand.PCG) float64 { return float64(p.Uint64()<<11>>11) / (1 << 53) }

// NewRand returns the random stream of a named component of a drill.
func NewRand(seed uint64, name string) *rand.Rand {
	s := Derive(seed, name)
	return rand.New(rand.NewPCG(s, splitmix(s)))
}
