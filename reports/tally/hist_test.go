package tally

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/stormdrill/stormdrill/reports"
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
		if !slices.Equal(trimZeros(l.h.Export().Counts), trimZeros(want.Export().Counts)) || l.h.TotalCount() != want.TotalCount() {
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

// trimZeros is counts without its trailing zeros: a histogram made up to
// a lower value holds the same counts, fewer of them.
func trimZeros(counts []int64) []int64 {
	n := len(counts)
	for n > 0 && counts[n-1] == 0 {
		n--
	}
	return counts[:n]
}

// The hdr histogram a LatencyHist makes when it is read (or a front count
// wraps) is only as large as the values recorded so far need: one up to
// 100 days, 270 KiB at 3 significant figures, made while the report was
// built, set the simulator's peak heap. It reads what a histogram up to
// 100 days fed the same values reads: count, percentiles, max and CDF,
// including after values past what it holds arrive between reads (it
// grows) and a wrapped front count spills to it, up to the 100-day clamp.
func TestReadTimeHdrHistogramMemory(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for round := range 12 {
		l, sig := NewLatencyHist(), histSigFigs
		if round%2 == 1 {
			l, sig = newCohortHist(histMaxMicros), cohortSigFigs
		}
		full := hdrhistogram.New(1, histMaxMicros, sig)
		var recorded, top int64 // values recorded, the highest in µs
		record := func(ns int64) {
			l.Record(ns)
			if err := full.RecordValue(micros(ns)); err != nil {
				t.Fatal(err)
			}
			recorded++
			top = max(top, micros(ns))
		}
		// Each phase reaches higher: about a second, minutes, hours, then
		// past the 100-day clamp.
		for phase, sigma := range []float64{0.3, 1.5, 3.5, 0} {
			for range 1 + r.IntN(4000) {
				ns := int64(80e6 * math.Exp(r.NormFloat64()*sigma))
				if phase == 3 {
					ns = []int64{histMaxMicros * 1000, math.MaxInt64, r.Int64N(1000), 2e12}[r.IntN(4)]
				}
				record(ns)
			}
			if round%3 == 0 && phase == 1 { // a wrap past what h holds: the spill grows it
				ns, held := 4*top*1000, l.h.TotalCount() // h holds what the last read flushed
				for range 1<<16 + 3 {
					record(ns)
				}
				if got := l.h.TotalCount(); got != held+1<<16 {
					t.Fatalf("round %d: h holds %d values after a wrap, want %d", round, got, held+1<<16)
				}
			}
			if n := l.Count(); n != recorded || n != full.TotalCount() {
				t.Fatalf("round %d phase %d: count %d, %d recorded, full %d", round, phase, n, recorded, full.TotalCount())
			}
			// hdr allocates whole buckets: at most half a bucket's counts past
			// the highest value's.
			half := 1 << l.g.halfMag
			bound := max(2*half, l.g.index(top)+half)
			if got := len(l.h.Export().Counts); got > bound || l.h.ByteSize() != full.ByteSize()-8*(len(full.Export().Counts)-got) {
				t.Fatalf("round %d phase %d (sig %d, up to %d µs): %d counts (%d bytes), want at most %d", round, phase, sig, top, got, l.h.ByteSize(), bound)
			}
			if phase < 3 && l.h.ByteSize() >= full.ByteSize() {
				t.Fatalf("round %d phase %d: %d bytes for values up to %d µs, as many as up to 100 days", round, phase, l.h.ByteSize(), top)
			}
			q := full.ValueAtPercentilesSlice([]float64{50, 90, 99, 99.9})
			s := func(v int64) float64 { return float64(v) / 1e6 }
			want := reports.Percentiles{Count: recorded, P50: s(q[0]), P90: s(q[1]), P99: s(q[2]), P999: s(q[3]), Max: s(full.Max())}
			if got := l.Percentiles(); got != want {
				t.Fatalf("round %d phase %d: percentiles %+v, want %+v", round, phase, got, want)
			}
			cdf := l.CDF()
			if len(cdf) != len(cdfQuantiles) {
				t.Fatalf("round %d phase %d: %d CDF points", round, phase, len(cdf))
			}
			for i, p := range cdf {
				if want := s(full.ValueAtQuantile(cdfQuantiles[i])); p.X != want {
					t.Fatalf("round %d phase %d: CDF at %v = %v, want %v", round, phase, cdfQuantiles[i], p.X, want)
				}
			}
		}
		if top != histMaxMicros || len(l.h.Export().Counts) != len(full.Export().Counts) {
			t.Fatalf("round %d: up to the clamp, %d counts, want %d", round, len(l.h.Export().Counts), len(full.Export().Counts))
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
