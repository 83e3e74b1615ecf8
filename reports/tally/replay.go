package tally

import (
	"sort"
	"time"

	"github.com/stormdrill/stormdrill/model"
	"github.com/stormdrill/stormdrill/reports"
)

// Bounds of the replay and retry-spread records.
const (
	// MaxReplayAudit bounds the audit records kept per replay.
	MaxReplayAudit = 10_000
	// MaxSpreadGroups bounds the groups of deliveries that failed together
	// kept per outage; later groups are not measured.
	MaxSpreadGroups = 100_000
	// SpreadWindow is how close in time failures must be to count as
	// failing together.
	SpreadWindow = time.Second
)

// ReplayConfig describes one dlq-replay action to the tally.
type ReplayConfig struct {
	Action         int // 1-based index among the drill's actions
	At             time.Duration
	Reason, Cohort string // "" = any
	Batch          int
	Rate           float64 // batches per second
	// Cohorts marks the cohorts whose load the report follows (all when
	// nil): the replayed cohort.
	Cohorts []bool
}

type replayTrack struct {
	cfg                        ReplayConfig
	matched, replayed, batches int64
	lastBatch                  int64
	attempts                   int64
	delivered, dead, pending   int64
	lastResolved               int64
	healthy                    *LatencyHist
	audit                      []reports.ReplayBatch
	rowLoad                    []int64 // attempts to its cohorts per sampled row
	openLoad                   int64   // … in the open interval
	started                    bool
}

// unresolved is the replayed deliveries neither delivered nor dead-lettered
// again, or still to be moved.
func (r *replayTrack) busy() bool {
	return r.started && (r.replayed < r.matched || r.replayed > r.delivered+r.dead)
}

type spreadKey struct {
	ordinal int
	window  int64
}

type spreadGroup struct {
	n        int64
	min, max int64 // delays, ns
	nominal  int64
}

type spreadTrack struct {
	groups  map[spreadKey]*spreadGroup
	dropped bool
}

func (t *Tally) initReplays() {
	for _, c := range t.cfg.Replays {
		t.replays = append(t.replays, &replayTrack{cfg: c, healthy: NewLatencyHist()})
	}
	t.spread = make([]spreadTrack, len(t.l.Outages))
}

// ReplayStarted records that replay r (an index into Config.Replays)
// started, with matched dead letters matching its selection.
func (t *Tally) ReplayStarted(r int, matched int64) {
	rp := t.replays[r]
	rp.started = true
	rp.matched = matched
}

// ReplayBatch records one batch of replay r moved at at: its audit record.
// Call Replayed for each delivery it moved.
func (t *Tally) ReplayBatch(r int, at time.Duration, count int64, who string) {
	rp := t.replays[r]
	rp.batches++
	rp.lastBatch = max(rp.lastBatch, int64(at))
	if len(rp.audit) < MaxReplayAudit {
		rp.audit = append(rp.audit, reports.ReplayBatch{Batch: int(rp.batches), AtS: at.Seconds(), Count: count, Who: who})
	}
}

// Replayed records that replay r moved a dead letter of subscriber sub,
// dead-lettered for reason, back to the queue: it is no longer a dead
// letter.
func (t *Tally) Replayed(r int, sub int, reason string) {
	s := &t.l.Subscribers[sub]
	c := &t.cohorts[s.Cohort]
	t.dead--
	c.dead--
	if t.reasons[reason]--; t.reasons[reason] == 0 {
		delete(t.reasons, reason)
	}
	if c.reasons != nil {
		if c.reasons[reason]--; c.reasons[reason] == 0 {
			delete(c.reasons, reason)
		}
	}
	if s.Healthy && model.Reason(reason).Info().BadData {
		t.healthyPermanent--
	}
	t.replays[r].replayed++
}

// ReplayMoved counts n deliveries that replay r moved back, for a feeder
// whose final accounting never counted them as dead letters (live: the
// store's outcomes at the end).
func (t *Tally) ReplayMoved(r int, n int64) { t.replays[r].replayed += n }

// ReplayAttempt counts an attempt of a delivery replay r moved back, made
// after the move (call AttemptStarted as well).
func (t *Tally) ReplayAttempt(r int) { t.replays[r].attempts++ }

// ReplayDelivered counts a delivery that replay r moved back and that was
// then delivered at at. It is counted as delivered like any other, but its
// end does not move the drain time of the outage it was created in: that
// backlog had ended in the DLQ; the replay's own drain time covers it.
func (t *Tally) ReplayDelivered(r int, at time.Duration, sub int, created time.Duration) {
	t.delivered0(at, sub, created, false)
	rp := t.replays[r]
	rp.delivered++
	rp.lastResolved = max(rp.lastResolved, int64(at))
}

// ReplayDeadLettered counts a delivery that replay r moved back and that was
// dead-lettered again at at.
func (t *Tally) ReplayDeadLettered(r int, at time.Duration, sub int, created time.Duration, reason string) {
	t.deadLettered0(at, sub, created, reason, false)
	rp := t.replays[r]
	rp.dead++
	rp.lastResolved = max(rp.lastResolved, int64(at))
}

// ReplayPending counts n deliveries that replay r moved back and that are
// still pending when the run ends. Call it after End.
func (t *Tally) ReplayPending(r int, sub int, created time.Duration, n int64) {
	s := &t.l.Subscribers[sub]
	t.pending += n
	t.cohorts[s.Cohort].pending += n
	if s.Healthy && t.YoungAtEnd(created) {
		t.youngPend += n
	}
	t.replays[r].pending += n
}

// replayLoad counts an attempt to cohort at drill time at for every replay
// that follows the cohort's load. Its callers skip it when there is no
// replay, as in most drills: the call was most of its cost.
func (t *Tally) replayLoad(at int64, cohort int) {
	k := t.rowIndex(at)
	for _, rp := range t.replays {
		if rp.cfg.Cohorts != nil && (cohort >= len(rp.cfg.Cohorts) || !rp.cfg.Cohorts[cohort]) {
			continue
		}
		if k < 0 {
			rp.openLoad++
		} else if k < len(rp.rowLoad) {
			rp.rowLoad[k]++
		}
	}
}

// sampleReplays closes the replays' open load counts at a sample.
func (t *Tally) sampleReplays() {
	for _, rp := range t.replays {
		rp.rowLoad = append(rp.rowLoad, rp.openLoad)
		rp.openLoad = 0
	}
}

// healthyDuringReplays records a healthy latency in the replays whose drain
// is under way at at. Its callers skip it when there is no replay (see
// replayLoad).
func (t *Tally) healthyDuringReplays(at int64, lat int64) {
	for _, rp := range t.replays {
		if rp.started && at >= int64(rp.cfg.At) && (rp.busy() || at <= rp.lastResolved) {
			rp.healthy.Record(lat)
		}
	}
}

// RetryScheduled records that the ordinal-th attempt of a delivery to sub
// failed at at and the delivery was given delay before its next attempt,
// where nominal is the policy's capped delay before jitter. Failures
// inside an outage of sub feed the outage's retry spread.
func (t *Tally) RetryScheduled(at time.Duration, sub, ordinal int, delay, nominal time.Duration) {
	if nominal <= 0 {
		return
	}
	for i, w := range t.l.Outages {
		if sub < w.Lo || sub >= w.Hi || at < w.Start || at >= w.End {
			continue
		}
		st := &t.spread[i]
		key := spreadKey{ordinal, int64((at - w.Start) / SpreadWindow)}
		g := st.groups[key]
		if g == nil {
			if len(st.groups) >= MaxSpreadGroups {
				st.dropped = true
				continue
			}
			if st.groups == nil {
				st.groups = map[spreadKey]*spreadGroup{}
			}
			g = &spreadGroup{min: int64(delay), max: int64(delay), nominal: int64(nominal)}
			st.groups[key] = g
		}
		g.n++
		g.min = min(g.min, int64(delay))
		g.max = max(g.max, int64(delay))
	}
}

// retrySpread assembles outage i's retry spread; nil when no two
// deliveries failed together.
func (t *Tally) retrySpread(i int) *reports.RetrySpread {
	st := &t.spread[i]
	var fr []float64
	var n int64
	for _, g := range st.groups {
		if g.n < 2 {
			continue
		}
		fr = append(fr, float64(g.max-g.min)/float64(g.nominal))
		n += g.n
	}
	if len(fr) == 0 {
		return nil
	}
	sort.Float64s(fr)
	return &reports.RetrySpread{WindowS: SpreadWindow.Seconds(), Groups: int64(len(fr)), Deliveries: n,
		P50: fr[(len(fr)-1)/2], Max: fr[len(fr)-1]}
}

// replaysSummary assembles what each replay did.
func (t *Tally) replaysSummary() []reports.Replay {
	out := []reports.Replay{}
	for _, rp := range t.replays {
		c := rp.cfg
		r := reports.Replay{
			Action: c.Action, AtS: c.At.Seconds(), Reason: c.Reason, Cohort: c.Cohort, Batch: c.Batch, RatePerS: c.Rate,
			Matched: rp.matched, Replayed: rp.replayed, Batches: rp.batches, LastBatchS: float64(rp.lastBatch) / 1e9,
			Attempts: rp.attempts, Delivered: rp.delivered, DeadLettered: rp.dead, Pending: rp.pending,
			HealthyLatencyS: rp.healthy.Percentiles(), Audit: append([]reports.ReplayBatch{}, rp.audit...),
		}
		if rp.replayed > 0 {
			r.Amplification = float64(rp.attempts) / float64(rp.replayed)
		}
		if rp.started && rp.pending == 0 && rp.delivered+rp.dead == rp.replayed {
			v := max(0, float64(rp.lastResolved-int64(c.At))/1e9)
			if rp.replayed == 0 {
				v = 0
			}
			r.DrainTimeS = &v
		}
		end := t.end
		if r.DrainTimeS != nil {
			end = max(int64(c.At), rp.lastResolved)
		}
		r.LoadDuringPerS, r.LoadBeforePerS, r.LoadPeakPerS = t.replayLoads(rp, int64(c.At), end)
		out = append(out, r)
	}
	return out
}

// replayLoads reads a replay's load off the sampled rows: attempts/s to
// its cohorts in the rows that cover [from, to], in as many rows just
// before them, and the busiest row among the first.
func (t *Tally) replayLoads(rp *replayTrack, from, to int64) (during, before, peak float64) {
	n := min(t.rows.len(), len(rp.rowLoad))
	if n == 0 {
		return 0, 0, 0
	}
	start := func(k int) int64 {
		if k == 0 {
			return 0
		}
		return t.rows.t[k-1]
	}
	k0 := sort.Search(n, func(k int) bool { return t.rows.t[k] > from })
	if k0 >= n {
		return 0, 0, 0
	}
	k1 := k0
	for k1+1 < n && t.rows.t[k1] < to {
		k1++
	}
	var sum int64
	for k := k0; k <= k1; k++ {
		sum += rp.rowLoad[k]
		if span := t.rows.t[k] - start(k); span > 0 {
			peak = max(peak, float64(rp.rowLoad[k])/(float64(span)/1e9))
		}
	}
	if span := t.rows.t[k1] - start(k0); span > 0 {
		during = float64(sum) / (float64(span) / 1e9)
	}
	b0 := max(0, k0-(k1-k0+1))
	sum = 0
	for k := b0; k < k0; k++ {
		sum += rp.rowLoad[k]
	}
	if k0 > b0 {
		if span := start(k0) - start(b0); span > 0 {
			before = float64(sum) / (float64(span) / 1e9)
		}
	}
	return during, before, peak
}
