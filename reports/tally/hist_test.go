package tally

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// The one-pass reads (ValueAtPercentilesSlice) give what ValueAtQuantile
// gives at each quantile, on histograms of many shapes.
func TestLatencyHistOnePassReads(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	qs := append([]float64{50, 90, 99, 99.9}, cdfQuantiles...)
	for round := 0; round < 40; round++ {
		l := NewLatencyHist()
		if round%2 == 0 {
			l = newCohortHist(histMaxMicros)
		}
		n := 1 + r.IntN(5000)
		for i := 0; i < n; i++ {
			ns := int64(80e6 * math.Exp(r.NormFloat64()*float64(1+round%4)))
			l.Record(ns)
		}
		l.flush()
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

// latencies draws n latencies (ns) of a lognormal shape whose spread
// grows with round, some of them past the histogram's bounds.
func latencies(r *rand.Rand, round, n int) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = int64(80e6 * math.Exp(r.NormFloat64()*float64(1+round%6)))
		switch r.IntN(200) {
		case 0:
			out[i] = r.Int64N(5000) // below 1µs
		case 1:
			out[i] = math.MaxInt64 - r.Int64N(1000) // past the highest
		}
	}
	return out
}

// A LatencyHist's front counts land in its hdr histogram as if each value
// had been recorded there: the same counts, wraps of a front count included.
func TestLatencyHistFrontIsExact(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for round := 0; round < 24; round++ {
		l, sig := NewLatencyHist(), histSigFigs
		if round%2 == 1 {
			l, sig = newCohortHist(histMaxMicros), cohortSigFigs
		}
		want := hdrhistogram.New(1, histMaxMicros, sig)
		if got, n := l.g.countsLen(), len(want.Export().Counts); got > n || l.g.index(histMaxMicros) >= got {
			t.Fatalf("sig %d: %d front counts, hdr has %d", sig, got, n)
		}
		vs := latencies(r, round, 1+r.IntN(20000))
		if round%3 == 0 { // one count wraps, more than once
			for range 3*(1<<16) + 5 {
				vs = append(vs, 123_456_789)
			}
		}
		for _, ns := range vs {
			l.Record(ns)
			if err := want.RecordValue(micros(ns)); err != nil {
				t.Fatal(err)
			}
		}
		if l.Count() != want.TotalCount() {
			t.Fatalf("round %d: count %d, want %d", round, l.Count(), want.TotalCount())
		}
		if got := l.Percentiles(); got != (&LatencyHist{h: want, front: make([]uint16, l.g.countsLen())}).Percentiles() {
			t.Fatalf("round %d: percentiles %+v", round, got)
		}
		if !slices.Equal(l.h.Export().Counts, want.Export().Counts) || l.h.TotalCount() != want.TotalCount() {
			t.Fatalf("round %d: counts differ from hdr's", round)
		}
		if want := geomOf(sig); l.g != want {
			t.Fatalf("the constant geometry of %d significant figures is %+v, not %+v", sig, l.g, want)
		}
		for i := range l.g.countsLen() {
			if l.g.index(l.g.value(i)) != i {
				t.Fatalf("sig %d: index(value(%d)) = %d", sig, i, l.g.index(l.g.value(i)))
			}
		}
	}
}

// intervalHist reads the percentiles hdr's ValueAtPercentilesSlice reads off
// the same values, across resets and wraps.
func TestIntervalHistReadsAsHdr(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	h := newIntervalHist(histMaxMicros)
	want := hdrhistogram.New(1, histMaxMicros, histSigFigs)
	qs := append([]float64{50, 90, 99, 99.9}, cdfQuantiles[1:]...)
	slices.Sort(qs)
	got := make([]int64, len(qs))
	for round := 0; round < 40; round++ {
		vs := latencies(r, round, 1+r.IntN(3000))
		if round%7 == 3 {
			for range 2*(1<<16) + 1 {
				vs = append(vs, 2_000_000)
			}
		}
		for _, ns := range vs {
			h.recordAt(h.g.index(micros(ns)))
			_ = want.RecordValue(micros(ns))
		}
		if h.total() != want.TotalCount() {
			t.Fatalf("round %d: count %d, want %d", round, h.total(), want.TotalCount())
		}
		h.valuesAt(qs, h.total(), got)
		if w := want.ValueAtPercentilesSlice(qs); !slices.Equal(got, w) {
			t.Fatalf("round %d: %v, want %v", round, got, w)
		}
		if round%2 == 1 {
			h.reset()
			want.Reset()
			if !slices.Equal(h.front, make([]uint16, len(h.front))) || h.wrapped || len(h.wraps) != 0 || h.total() != 0 {
				t.Fatalf("round %d: reset left counts", round)
			}
		}
	}
}

// geomOf is hdr's geometry of sigFigs significant figures, worked out as
// hdr does: the sub-bucket count is the power of 2 at or above 2×10^sigFigs.
func geomOf(sigFigs int) histGeom {
	largest := int64(2)
	for range sigFigs {
		largest *= 10
	}
	var g histGeom
	for int64(2)<<g.halfMag < largest {
		g.halfMag++
	}
	g.mask = 2<<g.halfMag - 1
	return g
}
