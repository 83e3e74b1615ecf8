package drills

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"

	"github.com/stormdrill/stormdrill/fakepartner"
	"github.com/stormdrill/stormdrill/model/seed"
	"github.com/stormdrill/stormdrill/reports"
)

// Fan-out shapes (source.fanout): which of the eligible subscribers (those
// of the cohorts in source.to) one event goes to.
const (
	FanoutAll    = "all"    // every eligible subscriber
	FanoutOne    = "one"    // one, uniformly or by source.weights
	FanoutK      = "k"      // source.k distinct ones
	FanoutDegree = "degree" // n distinct ones, n drawn from source.degree
)

// maxDegreeRows bounds source.degree.
const maxDegreeRows = 1000

// Degree is one row of a fan-out degree distribution: an event goes to N
// distinct subscribers with probability P.
type Degree struct {
	N int     `toml:"n"`
	P float64 `toml:"p"`
}

// validateFanout checks source.fanout and its keys against the cohorts.
func validateFanout(d *Drill, cohorts map[string]int, bad badFunc) {
	s := &d.Source
	switch s.Fanout {
	case "", FanoutAll, FanoutOne, FanoutK, FanoutDegree:
	default:
		if near, ok := nearest(s.Fanout, []string{FanoutAll, FanoutOne, FanoutK, FanoutDegree}); ok {
			bad("source.fanout", "%q is not one of all, one, k or degree; did you mean %s?", clip(s.Fanout), near)
		} else {
			bad("source.fanout", "%q is not one of all, one, k or degree", clip(s.Fanout))
		}
		return
	}
	eligible := 0
	for _, p := range d.Partners {
		if len(s.To) == 0 || contains(s.To, p.Name) {
			eligible += max(p.Count, 0)
		}
	}
	if s.Fanout == FanoutK {
		if s.K < 1 || (eligible > 0 && s.K > eligible) {
			bad("source.k", "fanout = \"k\" needs k between 1 and the %d subscribers it can reach (got %d)", eligible, s.K)
		}
	} else if s.K != 0 {
		bad("source.k", "only with fanout = \"k\"")
	}
	if s.Fanout == FanoutDegree {
		checkDegree(s.Degree, eligible, bad)
	} else if len(s.Degree) > 0 {
		bad("source.degree", "only with fanout = \"degree\"")
	}
	checkWeights(s, cohorts, bad)
}

// checkDegree checks source.degree, the distribution of how many of the
// eligible subscribers one event goes to.
func checkDegree(rows []Degree, eligible int, bad badFunc) {
	if len(rows) == 0 || len(rows) > maxDegreeRows {
		bad("source.degree", "fanout = \"degree\" needs 1 to %d rows such as { n = 3, p = 0.2 }", maxDegreeRows)
	}
	sum := 0.0
	for i, r := range rows {
		key := "source.degree[" + strconv.Itoa(i) + "]"
		if r.N < 1 || (eligible > 0 && r.N > eligible) {
			bad(key+".n", "must be between 1 and the %d subscribers it can reach (got %d)", eligible, r.N)
		}
		if !(r.P >= 0 && r.P <= 1) {
			bad(key+".p", "must be a probability in [0, 1] (got %v)", r.P)
		}
		sum += r.P
	}
	if len(rows) > 0 && !(sum > 1-1e-9 && sum < 1+1e-9) {
		bad("source.degree", "the probabilities add up to %v, not 1", sum)
	}
}

// checkWeights checks source.weights: cohorts the source sends to, each
// with a positive weight, for a fan-out that chooses.
func checkWeights(s *Source, cohorts map[string]int, bad badFunc) {
	if len(s.Weights) > 0 && (s.Fanout == "" || s.Fanout == FanoutAll) {
		bad("source.weights", "only with fanout = \"one\", \"k\" or \"degree\"; with all, every subscriber gets every event")
	}
	names := make([]string, 0, len(s.Weights))
	for n := range s.Weights {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		key := "source.weights." + n
		if _, ok := cohorts[n]; !ok {
			bad(key, "%q names no partner cohort", clip(n))
		} else if len(s.To) > 0 && !contains(s.To, n) {
			bad(key, "%q is not in source.to", clip(n))
		}
		if w := s.Weights[n]; !(w > 0 && w <= 1e9) {
			bad(key, "a subscriber's weight must be above 0 and at most 1e9 (got %v)", w)
		}
	}
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// FanoutMean is the expected number of deliveries per event.
func (d *Drill) FanoutMean() float64 {
	eligible := 0
	for _, p := range d.Partners {
		if len(d.Source.To) == 0 || contains(d.Source.To, p.Name) {
			eligible += p.Count
		}
	}
	switch d.Source.Fanout {
	case FanoutOne:
		return 1
	case FanoutK:
		return float64(d.Source.K)
	case FanoutDegree:
		m := 0.0
		for _, r := range d.Source.Degree {
			m += float64(r.N) * r.P
		}
		return m
	}
	return float64(eligible)
}

// SubscriberShare is the expected share of all deliveries that go to one
// subscriber of cohort name (0 when the cohort gets no events). For all,
// one and uniform choices it is exact; for k or degree with weights it
// takes inclusion as proportional to weight, which it is for small k.
func (d *Drill) SubscriberShare(name string) float64 {
	s := &d.Source
	if len(s.To) > 0 && !contains(s.To, name) {
		return 0
	}
	total := 0.0
	for _, p := range d.Partners {
		if len(s.To) == 0 || contains(s.To, p.Name) {
			total += float64(p.Count) * d.subscriberWeight(p.Name)
		}
	}
	if total == 0 {
		return 0
	}
	return d.subscriberWeight(name) / total
}

func (d *Drill) subscriberWeight(cohort string) float64 {
	if w, ok := d.Source.Weights[cohort]; ok && d.Source.Fanout != FanoutAll && d.Source.Fanout != "" {
		return w
	}
	return 1
}

// Fanout picks each event's subscribers. The choice for event n is a pure
// function of the drill's seed and n, so the simulation and any replay of
// the same drill pick the same subscribers, whatever order they ask in.
type Fanout struct {
	shape    string
	eligible []int32   // subscriber indexes, in the simulation's numbering
	cum      []float64 // cumulative weights over eligible; nil: uniform
	k        int
	degN     []int
	degCum   []float64
	seed     uint64
	pcg      *rand.PCG
	rng      *rand.Rand
	mark     []uint32 // mark[i] == epoch: eligible[i] already chosen
	epoch    uint32
}

// NewFanout builds the picker for d's subscribers as specs number them
// (cohort by cohort, member by member).
func (d *Drill) NewFanout(specs []fakepartner.Spec) *Fanout {
	s := &d.Source
	f := &Fanout{shape: s.Fanout, k: s.K, seed: seed.Derive(d.Seed, "fanout")}
	if f.shape == "" {
		f.shape = FanoutAll
	}
	weighted := false
	idx := int32(0)
	for ci := range specs {
		sp := &specs[ci]
		take := len(s.To) == 0 || contains(s.To, sp.Name)
		w := d.subscriberWeight(sp.Name)
		for m := 0; m < sp.Count; m++ {
			if take {
				f.eligible = append(f.eligible, idx)
				prev := 0.0
				if n := len(f.cum); n > 0 {
					prev = f.cum[n-1]
				}
				f.cum = append(f.cum, prev+w)
				weighted = weighted || w != 1
			}
			idx++
		}
	}
	if !weighted {
		f.cum = nil
	}
	acc := 0.0
	for _, r := range s.Degree {
		acc += r.P
		f.degN = append(f.degN, r.N)
		f.degCum = append(f.degCum, acc)
	}
	f.pcg = rand.NewPCG(0, 0)
	f.rng = rand.New(f.pcg)
	if f.shape != FanoutAll {
		f.mark = make([]uint32, len(f.eligible))
	}
	return f
}

// All reports whether every event goes to every eligible subscriber.
func (f *Fanout) All() bool { return f.shape == FanoutAll }

// Eligible is how many subscribers an event can go to.
func (f *Fanout) Eligible() int { return len(f.eligible) }

// Pick returns event n's subscribers, appended to dst[:0] (for all, the
// shared list itself: do not modify it).
func (f *Fanout) Pick(event int64, dst []int32) []int32 {
	if f.shape == FanoutAll {
		return f.eligible
	}
	dst = dst[:0]
	if len(f.eligible) == 0 {
		return dst
	}
	f.pcg.Seed(f.seed, uint64(event))
	n := f.degreeOf()
	f.epoch++
	if f.epoch == 0 { // wrapped: clear the marks once
		clear(f.mark)
		f.epoch = 1
	}
	// Draws with rejection of repeats, bounded; past the bound (n close
	// to the eligible count) the rest come in index order from a random
	// start, which stays distinct and deterministic.
	for tries := 0; len(dst) < n && tries < 8*n+16; tries++ {
		i := f.draw()
		if f.mark[i] != f.epoch {
			f.mark[i] = f.epoch
			dst = append(dst, f.eligible[i])
		}
	}
	for i := f.rng.IntN(len(f.eligible)); len(dst) < n; i = (i + 1) % len(f.eligible) {
		if f.mark[i] != f.epoch {
			f.mark[i] = f.epoch
			dst = append(dst, f.eligible[i])
		}
	}
	return dst
}

// Degree is how many subscribers event n goes to.
func (f *Fanout) Degree(event int64) int {
	if f.shape == FanoutAll {
		return len(f.eligible)
	}
	f.pcg.Seed(f.seed, uint64(event))
	return f.degreeOf()
}

// degreeOf draws the degree: the first draw of the event's stream.
func (f *Fanout) degreeOf() int {
	var n int
	switch f.shape {
	case FanoutOne:
		n = 1
	case FanoutK:
		n = f.k
	case FanoutDegree:
		u := f.rng.Float64()
		n = f.degN[len(f.degN)-1]
		for i, c := range f.degCum {
			if u < c {
				n = f.degN[i]
				break
			}
		}
	}
	return min(max(n, 0), len(f.eligible))
}

// draw picks one eligible position, by weight when there are weights.
func (f *Fanout) draw() int {
	if f.cum == nil {
		return f.rng.IntN(len(f.eligible))
	}
	u := f.rng.Float64() * f.cum[len(f.cum)-1]
	i := sort.SearchFloat64s(f.cum, u)
	// SearchFloat64s finds the first cum >= u; u == cum[i] belongs to i+1.
	for i < len(f.cum)-1 && f.cum[i] <= u {
		i++
	}
	return i
}

// String describes the shape for reports: "one of 500 subscribers".
func (f *Fanout) String() string {
	switch f.shape {
	case FanoutOne:
		return fmt.Sprintf("one of %d subscribers", len(f.eligible))
	case FanoutK:
		return fmt.Sprintf("%d of %d subscribers", f.k, len(f.eligible))
	case FanoutDegree:
		return fmt.Sprintf("a drawn number of %d subscribers", len(f.eligible))
	}
	return fmt.Sprintf("all %d subscribers", len(f.eligible))
}

// Offered is the load the source offers, for the summary.
func (d *Drill) Offered(specs []fakepartner.Spec) reports.Offered {
	ev := d.MeanEventRate()
	m := d.FanoutMean()
	return reports.Offered{EventsPerS: ev, FanoutMean: m, DeliveriesPerS: ev * m, Fanout: d.NewFanout(specs).String()}
}
