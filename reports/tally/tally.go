package tally

import (
	"errors"
	"math"
	"strconv"
	"time"

	"github.com/stormdrill/stormdrill/model"
	"github.com/stormdrill/stormdrill/reports"
)

// Bounds that keep a tally's memory fixed whatever the drill says.
const (
	// MaxSamples bounds the time series; Interval grows to fit.
	MaxSamples = 20_000
	// MaxBreakerColumns bounds the breaker-state columns of the series.
	MaxBreakerColumns = 8
	// MaxTransitions bounds the breaker transitions kept for the summary.
	MaxTransitions = 10_000
	// MaxOrdinals bounds attempts.by_ordinal; later ordinals share the last.
	MaxOrdinals = 1000
	// MaxAlerts bounds the alerts kept for the summary.
	MaxAlerts = 10_000
	// MaxCohortColumns bounds the per-cohort columns of the series
	// (amplification and oldest age): the first cohorts of the drill.
	MaxCohortColumns = 8
	// MaxStatusCodes bounds the distinct status codes counted per cohort;
	// further codes count as "other".
	MaxStatusCodes = 32
)

// ErrAccounting is returned when a run breaks the accounting identity
// created = delivered + dead-lettered + pending.
var ErrAccounting = errors.New("accounting identity broken")

// Interval is the sample interval of a run of total drill time: the drill's
// interval (1s if unset), grown so that the series has at most MaxSamples
// rows.
func Interval(sample, total time.Duration) time.Duration {
	iv := sample
	if iv <= 0 {
		iv = time.Second
	}
	if total/iv > MaxSamples {
		iv = (total + MaxSamples - 1) / MaxSamples
	}
	return iv
}

// Config describes the run a tally measures.
type Config struct {
	Drill, Description string
	Seed               uint64
	Mode               string  // sim | live | external
	Speed              float64 // live: time compression, 0 otherwise
	Duration           time.Duration
	Layout             *Layout
	Interval           time.Duration // sample interval (see Interval)
	SLO                time.Duration // delivery latency objective
	// Classifier classifies attempt outcomes: model's defaults with the
	// drill's retryable_status / permanent_status overrides.
	Classifier *model.Classifier
	// Breakers: the series has a breaker-state column for each unhealthy
	// subscriber (at most MaxBreakerColumns).
	Breakers bool
	Gates    []string
	Policy   []reports.KV    // the policy echo
	Offered  reports.Offered // the load the source offers, read off the drill
	// Actions are the drill's operator actions for the summary, and
	// Replays its dlq-replay actions, which the tally follows.
	Actions []reports.ActionRecord
	Replays []ReplayConfig
}

// counts are one interval's counters.
type counts struct {
	first, retries, succ, transient, timeout, reset, permanent, dlq int64
	dlqBy                                                           [len(model.Reasons)]int64
	// Per cohort column: first attempts and all attempts.
	cohortFirst, cohortAttempts [MaxCohortColumns]int64
}

// Gauges are what a feeder reads off the queue at a sample.
type Gauges struct {
	Ready, Delayed, InFlight int64
	// OldestReadyAge and OldestDelayedAge are now − created of the oldest
	// due and of the oldest delayed delivery; 0 when there is none.
	OldestReadyAge, OldestDelayedAge time.Duration
	SourceHeldBack                   float64 // deliveries the source holds back
	// Breaker holds, per BreakerColumns entry, 0 closed, 1 half-open, 2 open.
	Breaker []float64
	// CohortOldestAge holds, for the first MaxCohortColumns cohorts, the
	// age of the cohort's oldest waiting delivery (ready or delayed); nil
	// when the feeder does not measure it.
	CohortOldestAge []time.Duration
}

// row is one sampled interval, as the series reads it (kept encoded: see
// sampledRows).
type row struct {
	t          int64 // drill ns
	g          Gauges
	c          counts
	p50, p99   float64 // healthy latency of the deliveries in the interval, seconds
	hasHealthy bool
}

type cohortCount struct {
	deliveries, delivered, dead, pending, attempts, attempted int64
	hist                                                      *LatencyHist // nil until a delivery lands
	reasons                                                   map[string]int64
	codes                                                     []codeCount // attempt outcomes by status code, in order of first sight
	oldestMaxS                                                float64
}

// codeKey names an attempt's outcome for the status-code counts without
// building a string per attempt: an HTTP status, or a kind of failure.
type codeKey struct {
	status int
	kind   uint8 // codeStatus, or the failure without a status
}

const (
	codeStatus uint8 = iota
	codeTimeout
	codeReset
	codeRefused
	codeNoAnswer
	codeOther // past MaxStatusCodes distinct keys
)

type codeCount struct {
	key codeKey
	n   int64
}

// String is the key's name in the summary: the HTTP status, or the kind of
// failure when there was no answer.
func (k codeKey) String() string {
	switch k.kind {
	case codeStatus:
		return strconv.Itoa(k.status)
	case codeTimeout:
		return "timeout"
	case codeReset:
		return "reset"
	case codeRefused:
		return "refused"
	case codeOther:
		return "other"
	}
	return "no answer"
}

func codeKeyOf(o model.Outcome) codeKey {
	if o.Status != 0 {
		return codeKey{status: o.Status}
	}
	switch o.Err {
	case model.ErrTimeout:
		return codeKey{kind: codeTimeout}
	case model.ErrReset:
		return codeKey{kind: codeReset}
	case model.ErrRefused:
		return codeKey{kind: codeRefused}
	}
	return codeKey{kind: codeNoAnswer}
}

// countCode adds one attempt outcome to c's status-code counts: a short
// linear scan (a drill sees a handful of codes, at most MaxStatusCodes+1),
// cheaper per attempt than hashing a string.
func (c *cohortCount) countCode(k codeKey) {
	for i := range c.codes {
		if c.codes[i].key == k {
			c.codes[i].n++
			return
		}
	}
	if len(c.codes) >= MaxStatusCodes {
		k = codeKey{kind: codeOther}
		for i := range c.codes {
			if c.codes[i].key == k {
				c.codes[i].n++
				return
			}
		}
	}
	c.codes = append(c.codes, codeCount{key: k, n: 1})
}

// codeMap is the status-code counts as the summary holds them; nil when
// there are none.
func (c *cohortCount) codeMap() map[string]int64 {
	if len(c.codes) == 0 {
		return nil
	}
	m := make(map[string]int64, len(c.codes))
	for _, cc := range c.codes {
		m[cc.key.String()] += cc.n
	}
	return m
}

// track is one outage's drain: the latest terminal time of a delivery to
// its subscribers created before it ended, and whether one is still
// pending.
type track struct {
	lastDone int64
	open     bool
	// The outage's cost: retries to its subscribers from its start
	// (retries), those before its end (retriesBeforeEnd) and as many as
	// there were when lastDone last moved (retriesAtDone): after that
	// instant its backlog is gone, so the retries it caused are the count
	// at the later of its end and that instant. dead counts dead letters
	// of deliveries to its subscribers created before its end.
	retries, retriesBeforeEnd, retriesAtDone int64
	dead                                     int64
}

// Tally measures one run. Times are drill time (since drill time 0).
type Tally struct {
	cfg      Config
	l        *Layout
	interval int64
	// coverMicros is the latencies the front counts of the healthy and
	// cohort histograms cover (histGeom.frontLen): twice the drill's
	// duration, at least an hour, until a longer one arrives (coverAll).
	coverMicros int64
	// subs packs each subscriber's cohort, whether an outage window holds
	// it and its health (cohort<<2 | windowed<<1 | healthy): 4 bytes a
	// subscriber, so the per-attempt lookup stays in cache at tens of
	// thousands of subscribers, where Layout.Subscribers would not.
	subs []uint32
	// openFrom is the drill time the open interval starts at (the last
	// sample's), math.MinInt64 before the first: a fact at or after it
	// counts in the open interval without a search of the rows.
	openFrom int64

	created, delivered, dead, pending int64
	attempts, first                   int64
	byOrdinal                         []int64
	duplicates, retryAfterIgnored     int64
	lostAcks                          int64
	reasons                           map[string]int64
	cohorts                           []cohortCount

	healthy, healthyOutage                                     *LatencyHist
	healthyInterval                                            *intervalHist // healthy latencies since the last sample
	healthyCreated, healthyWithin, healthyPermanent, youngPend int64
	tracks                                                     []track

	transitions        []transition
	transitionsDropped int64
	transitionStrings  stringTable // the transitions' subscriber and state names
	breakerCols        []int
	restarts           []reports.Restart
	alerts             []reports.Alert
	lateness           *reports.Percentiles
	heldBackS          float64
	heldBackMaxS       float64

	rows sampledRows
	open counts // the interval after the last sample
	end  int64  // drill ns when the run ended; set by End

	replays []*replayTrack
	spread  []spreadTrack // per outage
}

// New returns an empty tally.
func New(cfg Config) *Tally {
	t := &Tally{cfg: cfg, l: cfg.Layout, interval: int64(cfg.Interval), reasons: map[string]int64{}}
	d := min(cfg.Duration, histMaxMicros*time.Microsecond) // 2d cannot overflow
	t.coverMicros = max(2*d, time.Hour).Microseconds()
	t.healthy = newLatencyHist(histSigFigs, geom3(), t.coverMicros)
	t.healthyOutage = newLatencyHist(histSigFigs, geom3(), t.coverMicros)
	t.healthyInterval = newIntervalHist(t.coverMicros)
	if t.interval <= 0 {
		t.interval = int64(time.Second)
	}
	t.cohorts = make([]cohortCount, len(t.l.Cohorts))
	t.rows.ncol = min(len(t.cohorts), MaxCohortColumns)
	t.subs = make([]uint32, len(t.l.Subscribers))
	for i, sb := range t.l.Subscribers {
		t.subs[i] = uint32(sb.Cohort) << 2
		if sb.Healthy {
			t.subs[i] |= 1
		}
	}
	for _, w := range t.l.Outages {
		for i := w.Lo; i < w.Hi; i++ {
			t.subs[i] |= 2
		}
	}
	t.openFrom = math.MinInt64
	t.tracks = make([]track, len(t.l.Outages))
	t.initReplays()
	if cfg.Breakers {
		for i, s := range t.l.Subscribers {
			if !s.Healthy && len(t.breakerCols) < MaxBreakerColumns {
				t.breakerCols = append(t.breakerCols, i)
			}
		}
	}
	return t
}

// sub is subscriber i's cohort and whether it is healthy.
func (t *Tally) sub(i int) (cohort int, healthy bool) {
	v := t.subs[i]
	return int(v >> 2), v&1 != 0
}

// Layout is the tally's subscriber layout.
func (t *Tally) Layout() *Layout { return t.l }

// Interval is the sample interval.
func (t *Tally) Interval() time.Duration { return time.Duration(t.interval) }

// BreakerColumns lists the subscribers whose breaker state a sample's
// Gauges.Breaker holds, in order.
func (t *Tally) BreakerColumns() []int { return t.breakerCols }

// Created counts n deliveries created for subscriber sub.
func (t *Tally) Created(sub int, n int64) {
	t.created += n
	cohort, healthy := t.sub(sub)
	t.cohorts[cohort].deliveries += n
	if healthy {
		t.healthyCreated += n
	}
}

// CreatedTotal is the number of deliveries created so far.
func (t *Tally) CreatedTotal() int64 { return t.created }

// DeadLetteredTotal is the number of dead letters so far.
func (t *Tally) DeadLetteredTotal() int64 { return t.dead }

// at returns the interval counters that hold drill time at (ns): the open
// interval from the last sample on, else the sampled interval
// [previous sample, sample) that contains it.
func (t *Tally) at(at int64) *counts {
	if at >= t.openFrom {
		return &t.open
	}
	return t.atRow(at)
}

// atRow is at for a time before the open interval's start (late facts).
func (t *Tally) atRow(at int64) *counts {
	if k := t.rowIndex(at); k >= 0 {
		return t.rows.lateCounts(k)
	}
	return &t.open
}

// rowIndex is the index of the sampled row whose interval holds drill time
// at, or -1 for the open interval.
func (t *Tally) rowIndex(at int64) int {
	ts := t.rows.t
	n := len(ts)
	if n == 0 || at >= ts[n-1] {
		return -1
	}
	lo, hi := 0, n-1 // smallest k with at < ts[k]
	for lo < hi {
		m := (lo + hi) / 2
		if at < ts[m] {
			hi = m
		} else {
			lo = m + 1
		}
	}
	return lo
}

// AttemptStarted counts an attempt that reached (or was sent to) subscriber
// sub at drill time at; ordinal is 1 for a delivery's first attempt.
func (t *Tally) AttemptStarted(at time.Duration, sub, ordinal int) {
	col, _ := t.sub(sub)
	c := &t.cohorts[col]
	t.attempts++
	c.attempts++
	iv := t.at(int64(at))
	if col < MaxCohortColumns {
		iv.cohortAttempts[col]++
	}
	if len(t.replays) > 0 {
		t.replayLoad(int64(at), col)
	}
	if ordinal <= 1 {
		ordinal = 1
		c.attempted++
		t.first++
		iv.first++
		if col < MaxCohortColumns {
			iv.cohortFirst[col]++
		}
	} else {
		iv.retries++
		if t.subs[sub]&2 != 0 {
			t.outageRetry(int64(at), sub)
		}
	}
	i := min(ordinal, MaxOrdinals) - 1
	for len(t.byOrdinal) <= i {
		t.byOrdinal = append(t.byOrdinal, 0)
	}
	t.byOrdinal[i]++
}

// AttemptEnded counts how an attempt ended at drill time at, classified
// with the configured classifier, and returns the class.
func (t *Tally) AttemptEnded(at time.Duration, sub int, o model.Outcome) model.Class {
	cl := t.cfg.Classifier.Classify(o)
	cohort, _ := t.sub(sub)
	c := &t.cohorts[cohort]
	c.countCode(codeKeyOf(o))
	iv := t.at(int64(at))
	switch {
	case cl == model.ClassSuccess:
		iv.succ++
	case cl == model.ClassPermanent:
		iv.permanent++
	case o.Err == model.ErrTimeout:
		iv.timeout++
	case o.Err == model.ErrReset || o.Err == model.ErrRefused:
		iv.reset++
	default:
		iv.transient++
	}
	return cl
}

// RetryAfterIgnored counts a Retry-After the policy did not trust.
func (t *Tally) RetryAfterIgnored() { t.retryAfterIgnored++ }

// Duplicates counts n successful attempts for deliveries the partner had
// already accepted.
func (t *Tally) Duplicates(n int64) { t.duplicates += n }

// LostAck counts a success the partner recorded and whose answer it
// dropped on purpose (lost-ack).
func (t *Tally) LostAck() { t.lostAcks++ }

// Delivered counts a delivery to sub, created at created, accepted at at.
func (t *Tally) Delivered(at time.Duration, sub int, created time.Duration) {
	t.delivered0(at, sub, created, true)
}

// delivered0 is Delivered; track says whether the delivery's end counts
// towards the drain time of the outage it was created in.
func (t *Tally) delivered0(at time.Duration, sub int, created time.Duration, track bool) {
	cohort, healthy := t.sub(sub)
	c := &t.cohorts[cohort]
	t.delivered++
	c.delivered++
	lat := int64(at - created)
	us := micros(lat)
	if us > t.coverMicros {
		t.coverAll()
	}
	if c.hist == nil {
		c.hist = newCohortHist(t.coverMicros)
	}
	c.hist.recordAt(geom2().index(us))
	if healthy {
		// The healthy histograms share one geometry, so one index.
		i := geom3().index(us)
		t.healthy.recordAt(i)
		t.healthyInterval.recordAt(i)
		if lat <= int64(t.cfg.SLO) {
			t.healthyWithin++
		}
		for k := range t.l.Outages {
			if w := &t.l.Outages[k]; created >= w.Start && created < w.End {
				t.healthyOutage.recordAt(i)
				break
			}
		}
		if len(t.replays) > 0 {
			t.healthyDuringReplays(int64(at), lat)
		}
	}
	if track {
		t.terminal(at, sub, created)
	}
}

// coverAll grows the front counts of the healthy and cohort histograms to
// every value: a latency past coverMicros arrived.
//
//go:noinline
func (t *Tally) coverAll() {
	t.coverMicros = histMaxMicros
	t.healthy.growFront()
	t.healthyOutage.growFront()
	t.healthyInterval.growFront()
	for i := range t.cohorts {
		if h := t.cohorts[i].hist; h != nil {
			h.growFront()
		}
	}
}

// DeadLettered counts a delivery to sub, created at created, moved to the
// DLQ at at with reason after attempts attempts.
func (t *Tally) DeadLettered(at time.Duration, sub int, created time.Duration, reason string) {
	t.deadLettered0(at, sub, created, reason, true)
}

func (t *Tally) deadLettered0(at time.Duration, sub int, created time.Duration, reason string, track bool) {
	cohort, healthy := t.sub(sub)
	c := &t.cohorts[cohort]
	t.dead++
	t.reasons[reason]++
	c.dead++
	if c.reasons == nil {
		c.reasons = map[string]int64{}
	}
	c.reasons[reason]++
	iv := t.at(int64(at))
	iv.dlq++
	for i, rs := range model.Reasons {
		if string(rs) == reason {
			iv.dlqBy[i]++
		}
	}
	if healthy && model.Reason(reason).Info().BadData {
		t.healthyPermanent++
	}
	if t.subs[sub]&2 != 0 {
		t.outageDeadLetter(int64(at), sub, created)
	}
	if track {
		t.terminal(at, sub, created)
	}
}

func (t *Tally) terminal(at time.Duration, sub int, created time.Duration) {
	if t.subs[sub]&2 == 0 {
		return // in no outage window
	}
	for i := range t.l.Outages {
		if w := &t.l.Outages[i]; sub >= w.Lo && sub < w.Hi && created < w.End {
			if tr := &t.tracks[i]; int64(at) >= tr.lastDone {
				tr.lastDone = int64(at)
				tr.retriesAtDone = tr.retries
			}
		}
	}
}

// outageRetry counts a retry to sub at drill time at against each outage
// of sub that has started.
func (t *Tally) outageRetry(at int64, sub int) {
	for i := range t.l.Outages {
		if w := &t.l.Outages[i]; sub >= w.Lo && sub < w.Hi && at >= int64(w.Start) {
			t.tracks[i].retries++
			if at < int64(w.End) {
				t.tracks[i].retriesBeforeEnd++
			}
		}
	}
}

// outageDeadLetter counts a dead letter of a delivery to sub created at
// created against each outage of sub it was created before the end of.
func (t *Tally) outageDeadLetter(at int64, sub int, created time.Duration) {
	for i := range t.l.Outages {
		if w := &t.l.Outages[i]; sub >= w.Lo && sub < w.Hi && created < w.End && at >= int64(w.Start) {
			t.tracks[i].dead++
		}
	}
}

// YoungAtEnd reports whether a delivery created at created is younger
// than the SLO when the run ends.
func (t *Tally) YoungAtEnd(created time.Duration) bool {
	return t.end-int64(created) < int64(t.cfg.SLO)
}

// Pending counts n deliveries to sub, created at created, that are not
// terminal when the run ends. Call it after End.
func (t *Tally) Pending(sub int, created time.Duration, n int64) {
	cohort, healthy := t.sub(sub)
	t.pending += n
	t.cohorts[cohort].pending += n
	// A healthy delivery younger than the SLO can still make it: the
	// within-SLO fraction leaves it out.
	if healthy && t.YoungAtEnd(created) {
		t.youngPend += n
	}
	for i, w := range t.l.Outages {
		if sub >= w.Lo && sub < w.Hi && created < w.End {
			t.tracks[i].open = true
		}
	}
}

// Sample closes the interval that ends at drill time at with what the
// queue looks like then. Past MaxSamples rows the interval stays open.
func (t *Tally) Sample(at time.Duration, g Gauges) {
	if t.rows.len() >= MaxSamples {
		return
	}
	rw := row{t: int64(at), g: g, c: t.open}
	var v [2]int64
	if h, n := t.healthyInterval, t.healthyInterval.total(); n > 0 {
		h.valuesAt([]float64{50, 99}, n, v[:])
		rw.hasHealthy = true
		h.reset()
	}
	for c, age := range g.CohortOldestAge {
		if c < len(t.cohorts) {
			t.cohorts[c].oldestMaxS = max(t.cohorts[c].oldestMaxS, age.Seconds())
		}
	}
	t.rows.appendRow(&rw, v[0], v[1])
	t.openFrom = rw.t
	t.open = counts{}
	t.sampleReplays()
}

// BreakerTransition records a breaker of subscriber name changing state.
func (t *Tally) BreakerTransition(at time.Duration, name, from, to string) {
	if len(t.transitions) >= MaxTransitions {
		t.transitionsDropped++
		return
	}
	ts := &t.transitionStrings
	t.transitions = append(t.transitions, transition{at: int64(at), name: ts.id(name), from: ts.id(from), to: ts.id(to)})
}

// transition is a breaker transition as the tally keeps it: 16 bytes
// rather than the 56 of a reports.BreakerTransition, its strings in a
// stringTable (at most 3×MaxTransitions distinct ones, so uint16 ids).
type transition struct {
	at             int64 // drill ns
	name, from, to uint16
}

// Every string a kept transition names fits a uint16 id.
const _ = uint16(3*MaxTransitions - 1)

// stringTable numbers distinct strings.
type stringTable struct {
	ids     map[string]uint16
	strings []string
}

func (st *stringTable) id(s string) uint16 {
	if id, ok := st.ids[s]; ok {
		return id
	}
	if st.ids == nil {
		st.ids = map[string]uint16{}
	}
	id := uint16(len(st.strings))
	st.ids[s] = id
	st.strings = append(st.strings, s)
	return id
}

// breakerTransitions is the transitions kept, as the summary holds them.
func (t *Tally) breakerTransitions() []reports.BreakerTransition {
	out := make([]reports.BreakerTransition, 0, len(t.transitions))
	s := t.transitionStrings.strings
	for _, tr := range t.transitions {
		out = append(out, reports.BreakerTransition{Partner: s[tr.name], AtS: float64(tr.at) / 1e9, From: s[tr.from], To: s[tr.to]})
	}
	return out
}

// Restart records a restart fault carried out.
func (t *Tally) Restart(r reports.Restart) { t.restarts = append(t.restarts, r) }

// Alert records a DLQ alert the alert sink received.
func (t *Tally) Alert(a reports.Alert) {
	if len(t.alerts) < MaxAlerts {
		t.alerts = append(t.alerts, a)
	}
}

// SourceHeldBack sets how long the source held events back (sum and
// largest, drill seconds).
func (t *Tally) SourceHeldBack(sumS, maxS float64) { t.heldBackS, t.heldBackMaxS = sumS, maxS }

// Lateness sets the injection lateness (live: wall time).
func (t *Tally) Lateness(p reports.Percentiles) { t.lateness = &p }

// End marks the drill time the run ended at; Pending and Run read it.
func (t *Tally) End(at time.Duration) { t.end = int64(at) }
