package tally

import (
	"fmt"
	"math/bits"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/stormdrill/stormdrill/reports"
)

// Latency histograms: microseconds from 1µs to 100 days, 3 significant
// figures. Memory is bounded per histogram, whatever the drill's length:
// 2 bytes a count up to the latencies the run expects (48 KiB for a drill
// of an hour) and, once it is read or a front count wraps, the hdr
// histogram's 8 bytes a count up to the highest latency recorded (128 KiB
// up to 33 s, 270 KiB up to 100 days). So the tally makes one only where a
// value arrives.
const (
	histMaxMicros = 100 * 24 * 3600 * 1_000_000
	histSigFigs   = 3 // geom3
	cohortSigFigs = 2 // geom2
)

// LatencyHist is a latency histogram with the tally's bounds.
//
// A value is counted first in front, 2-byte counts on the hdr histogram's
// own indexes, and reaches h when its count wraps (65,536 at once) or when
// the histogram is read: the counts a drill's latencies hit fill a quarter
// of the cache lines they would in h, and a simulation records one per
// delivery, mostly a cache miss at thousands of subscribers. h holds the
// same counts in the end, so every figure read off it is the same. h is
// nil until then: most runs read a histogram only once they are over, and
// a drill of thousands of subscribers wraps no count before its peak. It
// is then made only up to the highest value it holds (hdrTo): a report is
// built while the run's queues are still live, and histograms up to 100
// days would set the run's peak heap.
type LatencyHist struct {
	front   []uint16
	g       histGeom
	sigFigs uint8
	h       *hdrhistogram.Histogram // nil until a count reaches it
}

// histGeom is the index arithmetic of an hdr histogram whose lowest
// discernible value is 1 (unit magnitude 0): the index of a value, and the
// value an index starts at. Its sub-bucket count, 2<<halfMag, is the power
// of 2 at or above 2×10^(significant figures), as hdr's.
type histGeom struct {
	halfMag uint8 // log2 of half the sub-buckets
	mask    uint64
}

// countsLen is the number of counts of a histogram up to histMaxMicros.
func (g histGeom) countsLen() int { return g.index(histMaxMicros) + 1 }

// geom3 is the geometry of 3 significant figures (histSigFigs), as a
// constant: inlined, its index needs no loads.
const geom3HalfMag = 10

func geom3() histGeom { return histGeom{halfMag: geom3HalfMag, mask: 2<<geom3HalfMag - 1} }

// geom2 is the geometry of 2 significant figures (cohortSigFigs).
const geom2HalfMag = 7

func geom2() histGeom { return histGeom{halfMag: geom2HalfMag, mask: 2<<geom2HalfMag - 1} }

// index is hdr's counts index of v (v >= 0).
func (g histGeom) index(v int64) int {
	bucket := 64 - bits.LeadingZeros64(uint64(v)|g.mask) - int(g.halfMag) - 1
	return bucket<<(g.halfMag&63) + int(uint64(v)>>(uint(bucket)&63))
}

// value is the lowest value at counts index i: index(value(i)) == i.
func (g histGeom) value(i int) int64 {
	half := 1 << g.halfMag
	bucket := i>>g.halfMag - 1
	sub := i&(half-1) + half
	if bucket < 0 {
		sub -= half
		bucket = 0
	}
	return int64(sub) << bucket
}

// highest is the highest value equivalent to v, as hdr reads percentiles.
func (g histGeom) highest(v int64) int64 {
	bucket := 64 - bits.LeadingZeros64(uint64(v)|g.mask) - int(g.halfMag) - 1
	sub := uint64(v) >> bucket
	size := bucket
	if sub >= g.mask+1 {
		size++
	}
	return int64(sub<<bucket) + 1<<size - 1
}

// bucketEnd is the highest value of the bucket counts index i is in: hdr
// makes a histogram up to it with counts up to that bucket's last index,
// no further.
func (g histGeom) bucketEnd(i int) int64 {
	bucket := max(0, i>>g.halfMag-1)
	return int64(2)<<(int(g.halfMag)+bucket) - 1
}

// newLatencyHist returns an empty histogram of sigFigs significant
// figures, whose geometry is g, with front counts up to coverMicros (see
// frontLen).
func newLatencyHist(sigFigs int, g histGeom, coverMicros int64) *LatencyHist {
	return &LatencyHist{g: g, sigFigs: uint8(sigFigs), front: make([]uint16, g.frontLen(coverMicros))}
}

// frontLen is the number of front counts that cover the values up to
// coverMicros, the latencies a run expects. Before a value past them is
// recorded the front grows to every index (growFront), so the cover
// decides the memory, never a count: a front up to 100 days holds 43%
// more counts than one up to two hours, for latencies a drill of an hour
// never has.
func (g histGeom) frontLen(coverMicros int64) int {
	return g.index(max(1, min(coverMicros, histMaxMicros))) + 1
}

// hdrTo is l's hdr histogram, made or grown so that it holds counts index
// i. It is made only up to the end of i's bucket: the highest trackable
// value sets only how many buckets hdr allocates, never where a value's
// count goes, so every figure read off it is the one a histogram up to
// 100 days gives. Growing makes a larger one and merges the old in, at
// most once per bucket (a doubling of the values held).
func (l *LatencyHist) hdrTo(i int) *hdrhistogram.Histogram {
	if l.h != nil && i <= l.g.index(l.h.HighestTrackableValue()) {
		return l.h
	}
	h := hdrhistogram.New(1, l.g.bucketEnd(i), int(l.sigFigs))
	if l.h != nil {
		if dropped := h.Merge(l.h); dropped != 0 {
			panic(fmt.Sprintf("tally: growing a latency histogram dropped %d values", dropped))
		}
	}
	l.h = h
	return h
}

// record adds n values at counts index i to h, which holds i (hdrTo).
// Neither can hdr refuse them (in range, n > 0, and a total of 2^63
// latencies is never reached), nor may a count be lost without a word.
func (l *LatencyHist) record(h *hdrhistogram.Histogram, i int, n int64) {
	if err := h.RecordValues(l.g.value(i), n); err != nil {
		panic("tally: latency histogram: " + err.Error())
	}
}

// NewLatencyHist returns an empty histogram.
func NewLatencyHist() *LatencyHist { return newLatencyHist(histSigFigs, geom3(), histMaxMicros) }

// newCohortHist is a cohort's latency histogram: 2 significant figures
// (percentiles within 1%), at most about 46 KiB instead of 340 KiB, since
// a drill may have many cohorts. The healthy-subscriber histograms, which
// the SLO gates read, keep 3.
func newCohortHist(coverMicros int64) *LatencyHist {
	return newLatencyHist(cohortSigFigs, geom2(), coverMicros)
}

func micros(ns int64) int64 { return max(1, min(ns/1000, histMaxMicros)) }

// Record adds one latency in nanoseconds (clamped to the bounds).
func (l *LatencyHist) Record(ns int64) { l.recordAt(l.g.index(micros(ns))) }

// recordAt adds one value at counts index i, which the front covers.
func (l *LatencyHist) recordAt(i int) {
	if l.front[i]++; l.front[i] == 0 {
		l.spill(i)
	}
}

// spill moves the 65,536 values a wrapped front count stood for to h.
// Rare: not inlined, so that recordAt is.
//
//go:noinline
func (l *LatencyHist) spill(i int) { l.record(l.hdrTo(i), i, 1<<16) }

// growFront makes the front cover every value.
func (l *LatencyHist) growFront() { l.front = grown(l.front, l.g.countsLen()) }

// grown is s grown to n elements (n >= len(s)), zeros appended.
func grown[E any](s []E, n int) []E {
	return append(s[:len(s):len(s)], make([]E, n-len(s))...)
}

// flush moves every front count to h, which it first makes or grows to
// hold the highest.
func (l *LatencyHist) flush() {
	top := len(l.front) - 1
	for top >= 0 && l.front[top] == 0 {
		top--
	}
	if top < 0 {
		return
	}
	h := l.hdrTo(top)
	for i, c := range l.front[:top+1] {
		if c != 0 {
			l.record(h, i, int64(c))
			l.front[i] = 0
		}
	}
}

// Count is the number of values recorded; 0 for a nil histogram.
func (l *LatencyHist) Count() int64 {
	if l == nil {
		return 0
	}
	l.flush()
	if l.h == nil {
		return 0 // nothing recorded
	}
	return l.h.TotalCount()
}

// Percentiles returns the summary percentiles in seconds; zero for an
// empty or nil histogram.
func (l *LatencyHist) Percentiles() reports.Percentiles {
	if l.Count() == 0 {
		return reports.Percentiles{}
	}
	h := l.h
	// One pass over the counts for all four (ValueAtQuantile scans from the
	// start for each); the same values.
	v := h.ValueAtPercentilesSlice([]float64{50, 90, 99, 99.9})
	s := func(i int) float64 { return float64(v[i]) / 1e6 }
	return reports.Percentiles{Count: h.TotalCount(), P50: s(0), P90: s(1), P99: s(2), P999: s(3), Max: float64(h.Max()) / 1e6}
}

// cdfQuantiles are where the latency CDF is read: fine in the tail, where
// SLO questions live, and bounded in number.
var cdfQuantiles = func() []float64 {
	var qs []float64
	for q := 0.0; q < 90; q += 1 {
		qs = append(qs, q)
	}
	for q := 90.0; q < 99; q += 0.25 {
		qs = append(qs, q)
	}
	for q := 99.0; q < 100; q += 0.05 {
		qs = append(qs, q)
	}
	return append(qs, 100)
}()

// CDF returns the bounded CDF the reports plot; nil when empty.
func (l *LatencyHist) CDF() []reports.CDFPoint {
	if l.Count() == 0 {
		return nil
	}
	pts := make([]reports.CDFPoint, 0, len(cdfQuantiles))
	vs := l.h.ValueAtPercentilesSlice(cdfQuantiles) // one pass; the values ValueAtQuantile gives
	for i, q := range cdfQuantiles {
		pts = append(pts, reports.CDFPoint{X: float64(vs[i]) / 1e6, P: q / 100})
	}
	return pts
}

// intervalHist is the healthy latencies since the last sample: the front
// counts of a LatencyHist with 3 significant figures, without the hdr
// histogram, and their sums by block of 64 indexes, so that a sample
// reads and clears the blocks recorded into, not all 34,780 counts (hdr's
// Reset cleared 272 KiB at every sample, and a pass over the 10,000 or so
// counts between the least and the greatest latency of a second costs as
// much, at a few hundred deliveries a second).
type intervalHist struct {
	front   []uint16
	wraps   map[int]int64 // per index, how often its front count wrapped; few ever do
	wrapped bool          // some front count wrapped since the last reset
	blocks  []int64       // per block of 1<<blockShift indexes, the values recorded
	g       histGeom
}

const blockShift = 6

// newIntervalHist returns an empty intervalHist whose front counts cover
// the values up to coverMicros (see histGeom.frontLen).
func newIntervalHist(coverMicros int64) *intervalHist {
	g := geom3()
	n := g.frontLen(coverMicros)
	return &intervalHist{g: g, front: make([]uint16, n), wraps: map[int]int64{}, blocks: make([]int64, blocksFor(n))}
}

// blocksFor is the number of blocks of n counts.
func blocksFor(n int) int { return (n + 1<<blockShift - 1) >> blockShift }

// recordAt adds one value at counts index i, which the front covers.
func (h *intervalHist) recordAt(i int) {
	if h.front[i]++; h.front[i] == 0 {
		h.wraps[i]++
		h.wrapped = true
	}
	h.blocks[i>>blockShift]++
}

// growFront makes the counts cover every value.
func (h *intervalHist) growFront() {
	n := h.g.countsLen()
	h.front = grown(h.front, n)
	h.blocks = grown(h.blocks, blocksFor(n))
}

func (h *intervalHist) count(i int) int64 {
	c := int64(h.front[i])
	if h.wrapped {
		c += h.wraps[i] << 16
	}
	return c
}

// total is the number of values recorded.
func (h *intervalHist) total() int64 {
	var n int64
	for _, c := range h.blocks {
		n += c
	}
	return n
}

// valuesAt is what hdr's ValueAtPercentilesSlice gives for the percentiles
// ps, which must be ascending and above 0, on the same counts, n of them
// (n > 0).
func (h *intervalHist) valuesAt(ps []float64, n int64, out []int64) {
	k := 0
	rank := percentileRank(ps[0], n)
	var total int64
	for b, c := range h.blocks {
		if total+c < rank {
			total += c
			continue
		}
		end := min((b+1)<<blockShift, len(h.front))
		for i := b << blockShift; i < end; i++ {
			total += h.count(i)
			for total >= rank {
				out[k] = h.g.highest(h.g.value(i))
				if k++; k == len(ps) {
					return
				}
				rank = percentileRank(ps[k], n)
			}
		}
	}
}

// percentileRank is hdr's: the rank, in [1, n], of the value at percentile p.
func percentileRank(p float64, n int64) int64 {
	p = min(p, 100)
	rank := (p/100)*float64(n) + 0.5
	if !(rank >= 1) {
		return 1
	}
	if rank >= float64(n) {
		return n
	}
	return int64(rank)
}

// reset empties h.
func (h *intervalHist) reset() {
	for b, c := range h.blocks {
		if c == 0 {
			continue
		}
		lo, hi := b<<blockShift, min((b+1)<<blockShift, len(h.front))
		clear(h.front[lo:hi])
		h.blocks[b] = 0
	}
	if h.wrapped {
		clear(h.wraps)
		h.wrapped = false
	}
}
