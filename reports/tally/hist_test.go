package tally

import (
	"math"
	"math/rand/v2"
	"testing"
)

// The one-pass reads (ValueAtPercentilesSlice) give what ValueAtQuantile
// gives at each quantile, on histograms of many shapes.
func TestLatencyHistOnePassReads(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	qs := append([]float64{50, 90, 99, 99.9}, cdfQuantiles...)
	for round := 0; round < 40; round++ {
		l := NewLatencyHist()
		if round%2 == 0 {
			l = newCohortHist()
		}
		n := 1 + r.IntN(5000)
		for i := 0; i < n; i++ {
			ns := int64(80e6 * math.Exp(r.NormFloat64()*float64(1+round%4)))
			l.Record(ns)
		}
		got := l.h.ValueAtPercentilesSlice(qs)
		for i, q := range qs {
			if want := l.h.ValueAtQuantile(q); got[i] != want {
				t.Fatalf("round %d (%d values): q%v = %d in one pass, %d alone", round, n, q, got[i], want)
			}
		}
		p := l.Percentiles()
		if p.P50 != float64(l.h.ValueAtQuantile(50))/1e6 || p.P999 != float64(l.h.ValueAtQuantile(99.9))/1e6 {
			t.Fatalf("round %d: Percentiles %+v disagree with ValueAtQuantile", round, p)
		}
	}
}
