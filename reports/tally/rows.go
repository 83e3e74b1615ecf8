package tally

import (
	"encoding/binary"
	"math"
	"math/bits"
	"time"
)

// The sampled rows are kept encoded, as varints, in one byte slice: a
// row's counts and gauges are small numbers, mostly zero, so a row takes
// some 40 bytes instead of the 368 of a row struct. The drill time each
// row ends at stays in a slice of its own, which late facts and replays
// search. A late fact (one whose time falls in a sampled row) is counted
// in rowLate, per row, and added when the series is read.
type sampledRows struct {
	t    []int64         // drill ns each row ends at
	data []byte          // the rows, encoded by appendRow
	late map[int]*counts // counts of late facts per row; nil until one
	// ncol is the cohort columns a row's counts keep: the others are
	// always zero (every cohort index is below the number of cohorts).
	ncol int
	// cohortAges: some row's gauges held CohortOldestAge.
	cohortAges bool
}

// len is the number of sampled rows.
func (s *sampledRows) len() int { return len(s.t) }

// lateCounts is the counts of late facts in row k.
func (s *sampledRows) lateCounts(k int) *counts {
	c := s.late[k]
	if c == nil {
		if s.late == nil {
			s.late = map[int]*counts{}
		}
		c = &counts{}
		s.late[k] = c
	}
	return c
}

// appendRow adds rw, whose healthy latency percentiles are p50 and p99
// microseconds when rw.hasHealthy.
func (s *sampledRows) appendRow(rw *row, p50, p99 int64) {
	b := s.data
	c := &rw.c
	for _, v := range [...]int64{c.first, c.retries, c.succ, c.transient, c.timeout, c.reset, c.permanent, c.dlq} {
		b = binary.AppendVarint(b, v)
	}
	for _, v := range c.dlqBy {
		b = binary.AppendVarint(b, v)
	}
	for i := range s.ncol {
		b = binary.AppendVarint(b, c.cohortFirst[i])
		b = binary.AppendVarint(b, c.cohortAttempts[i])
	}
	g := &rw.g
	for _, v := range [...]int64{g.Ready, g.Delayed, g.InFlight, int64(g.OldestReadyAge), int64(g.OldestDelayedAge)} {
		b = binary.AppendVarint(b, v)
	}
	b = appendFloat(b, g.SourceHeldBack)
	b = appendLen(b, g.Breaker == nil, len(g.Breaker))
	for _, f := range g.Breaker {
		b = appendFloat(b, f)
	}
	b = appendLen(b, g.CohortOldestAge == nil, len(g.CohortOldestAge))
	for _, d := range g.CohortOldestAge {
		b = binary.AppendVarint(b, int64(d))
	}
	if g.CohortOldestAge != nil {
		s.cohortAges = true
	}
	if rw.hasHealthy {
		b = binary.AppendVarint(append(b, 1), p50)
		b = binary.AppendVarint(b, p99)
	} else {
		b = append(b, 0)
	}
	s.data = b
	s.t = append(s.t, rw.t)
}

// appendFloat writes f's bits byte-reversed, as a varint: the sign and
// exponent come first, so the small whole numbers gauges hold take a byte
// or two, and every float (NaN too) reads back as it was.
func appendFloat(b []byte, f float64) []byte {
	return binary.AppendUvarint(b, bits.ReverseBytes64(math.Float64bits(f)))
}

// appendLen writes a slice's length, 0 for a nil slice.
func appendLen(b []byte, isNil bool, n int) []byte {
	if isNil {
		return append(b, 0)
	}
	return binary.AppendUvarint(b, uint64(n)+1)
}

// rowReader decodes the rows in order.
type rowReader struct {
	s *sampledRows
	b []byte
	k int // the next row
}

func (s *sampledRows) reader() *rowReader { return &rowReader{s: s, b: s.data} }

func (r *rowReader) varint() int64 {
	v, n := binary.Varint(r.b)
	if n <= 0 {
		panic("tally: sampled rows corrupt") // written by appendRow only
	}
	r.b = r.b[n:]
	return v
}

func (r *rowReader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		panic("tally: sampled rows corrupt")
	}
	r.b = r.b[n:]
	return v
}

func (r *rowReader) float() float64 {
	return math.Float64frombits(bits.ReverseBytes64(r.uvarint()))
}

// next decodes the next row into rw, late facts added; false past the last.
func (r *rowReader) next(rw *row) bool {
	if r.k >= len(r.s.t) {
		return false
	}
	*rw = row{t: r.s.t[r.k]}
	c := &rw.c
	for _, p := range [...]*int64{&c.first, &c.retries, &c.succ, &c.transient, &c.timeout, &c.reset, &c.permanent, &c.dlq} {
		*p = r.varint()
	}
	for i := range c.dlqBy {
		c.dlqBy[i] = r.varint()
	}
	for i := range r.s.ncol {
		c.cohortFirst[i] = r.varint()
		c.cohortAttempts[i] = r.varint()
	}
	g := &rw.g
	for _, p := range [...]*int64{&g.Ready, &g.Delayed, &g.InFlight, (*int64)(&g.OldestReadyAge), (*int64)(&g.OldestDelayedAge)} {
		*p = r.varint()
	}
	g.SourceHeldBack = r.float()
	if n := r.uvarint(); n > 0 {
		g.Breaker = make([]float64, n-1)
		for i := range g.Breaker {
			g.Breaker[i] = r.float()
		}
	}
	if n := r.uvarint(); n > 0 {
		g.CohortOldestAge = make([]time.Duration, n-1)
		for i := range g.CohortOldestAge {
			g.CohortOldestAge[i] = time.Duration(r.varint())
		}
	}
	if r.uvarint() == 1 {
		rw.hasHealthy = true
		rw.p50 = float64(r.varint()) / 1e6
		rw.p99 = float64(r.varint()) / 1e6
	}
	if lc := r.s.late[r.k]; lc != nil {
		c.addAll(lc)
	}
	r.k++
	return true
}
