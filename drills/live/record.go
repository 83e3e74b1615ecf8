package live

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/stormdrill/stormdrill/drills"
	"github.com/stormdrill/stormdrill/fakepartner"
	"github.com/stormdrill/stormdrill/model"
	"github.com/stormdrill/stormdrill/model/runtime/queue"
	"github.com/stormdrill/stormdrill/reports"
	"github.com/stormdrill/stormdrill/reports/tally"
)

// Recording limits.
const (
	// maxBufferedAttempts bounds the partner records waiting for the next
	// sample; past it they are counted as dropped and the run fails.
	maxBufferedAttempts = 1 << 20
	// maxOverlapIDs bounds the delivery ids whose last answer time the
	// overlap check remembers; past it the memory starts afresh (attempts
	// of one delivery are close together, so little is missed).
	maxOverlapIDs = 1 << 20
	// outcomePage is how many deliveries one read of the final accounting
	// takes.
	outcomePage = 10_000
)

// ErrOverlap is returned (with the run) when the partners saw two attempts
// of one delivery id in flight at once: a delivery was sent by two
// dispatchers (or twice by one) at the same time.
var ErrOverlap = errors.New("a delivery was in flight twice at once")

// liveRecorder feeds the tally: the partner server's records of every
// attempt as they arrive (drained at each sample), the store's depths at
// each sample, and every delivery's outcome at the end. Every time it
// reports is drill time, except lateness, which is wall time (it measures
// the harness, not the pipeline).
type liveRecorder struct {
	r        *runner
	t        *tally.Tally
	interval time.Duration // drill time
	endDT    time.Duration

	mu      sync.Mutex // guards buf and dropped, written by the partner server
	buf     []fakepartner.Attempt
	dropped int64

	lastAnswer map[string]answerSeen // delivery id → latest answer seen
	checked    int64                 // attempts with an id the overlap check saw
	overlaps   int64
	overlapEx  []string

	lastDead int64 // dead letters at the last sample, for progress

	backoff *model.Backoff // the drill's, for the retry spread's scheduled delays
}

func newLiveRecorder(r *runner) *liveRecorder {
	d := r.d
	total := d.Duration.D + d.Drain.D
	// A sample costs a few store queries; keep at least 20ms of wall time
	// between them.
	interval := max(tally.Interval(d.SampleInterval.D, total), r.clock.Drill(20*time.Millisecond))
	rec := &liveRecorder{r: r, interval: interval, lastAnswer: map[string]answerSeen{}}
	if pol, err := d.ModelPolicy(); err == nil {
		rec.backoff = &pol.Backoff
	}
	rec.t = d.NewTally(r.specs, "live", r.clock.Speed, interval)
	return rec
}

// attempt is the partner server's OnAttempt hook.
func (rec *liveRecorder) attempt(a fakepartner.Attempt) {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.buf) >= maxBufferedAttempts {
		rec.dropped++
		return
	}
	rec.buf = append(rec.buf, a)
}

// drain feeds the buffered partner records to the tally.
func (rec *liveRecorder) drain() {
	rec.mu.Lock()
	buf := rec.buf
	rec.buf = make([]fakepartner.Attempt, 0, len(buf))
	rec.mu.Unlock()
	t := rec.t
	for _, a := range buf {
		sub, ok := t.Layout().Index(a.Cohort + "-" + fmt.Sprint(a.Member))
		if !ok {
			continue
		}
		t.AttemptStarted(rec.drillTime(a.Arrived), sub, a.Ordinal)
		if rp := rec.r.replays; rp != nil && a.ID != "" {
			if rid, ok := rp.of(a.ID); ok && rec.drillTime(a.Arrived) >= rid.at {
				t.ReplayAttempt(rid.replay)
			}
		}
		o := model.Outcome{Status: a.Status}
		switch {
		case a.Held || a.Abandoned:
			o = model.Outcome{Err: model.ErrTimeout}
		case a.Reset:
			o = model.Outcome{Err: model.ErrReset}
		case a.Refused:
			o = model.Outcome{Err: model.ErrRefused}
		}
		t.AttemptEnded(rec.drillTime(a.Answered), sub, o)
		if a.Duplicate {
			t.Duplicates(1)
		}
		if a.AckLost {
			t.LostAck()
		}
		// The retry spread, seen from the partner: the gap from the end of
		// attempt k to the start of attempt k+1 is the delay it was given.
		if rec.backoff != nil && a.ID != "" && a.Ordinal >= 2 {
			if last, ok := rec.lastAnswer[a.ID]; ok && !a.Arrived.Before(last.at) {
				t.RetryScheduled(rec.drillTime(last.at), sub, a.Ordinal-1, rec.r.clock.Drill(a.Arrived.Sub(last.at)), rec.backoff.Capped(a.Ordinal-1))
			}
		}
		rec.checkOverlap(a)
	}
}

// answerSeen is the latest answer of a delivery's attempts at the
// partner, and whether its caller had left before it (a timeout).
type answerSeen struct {
	at   time.Time
	left bool
}

// checkOverlap counts an attempt that arrived before an earlier-answered
// attempt of the same delivery was answered. Records come in answer
// order, so comparing with the latest answer so far finds every overlap.
func (rec *liveRecorder) checkOverlap(a fakepartner.Attempt) {
	if a.ID == "" {
		return
	}
	rec.checked++
	// An attempt the caller left (a timeout) goes on at the partner until
	// its write lands, so a retry after a short backoff may arrive before
	// the partner is done with it: that is one dispatcher timing out, not
	// two sending at once, and is not counted.
	left := a.Abandoned || a.Held
	if last, ok := rec.lastAnswer[a.ID]; ok && a.Arrived.Before(last.at) && !left && !last.left {
		rec.overlaps++
		if len(rec.overlapEx) < maxRunAtMovedShown {
			rec.overlapEx = append(rec.overlapEx, fmt.Sprintf("%s: attempt %d arrived %v before the previous one was answered",
				a.ID, a.Ordinal, last.at.Sub(a.Arrived).Round(time.Microsecond)))
		}
	}
	if len(rec.lastAnswer) >= maxOverlapIDs {
		clear(rec.lastAnswer)
	}
	if last, ok := rec.lastAnswer[a.ID]; !ok || a.Answered.After(last.at) {
		rec.lastAnswer[a.ID] = answerSeen{at: a.Answered, left: left}
	}
}

func (rec *liveRecorder) drillTime(w time.Time) time.Duration {
	return rec.r.clock.At(w).Sub(rec.r.clock.Start)
}

// sample records one row at drill time dt and returns how many deliveries
// are not terminal.
func (rec *liveRecorder) sample(dt time.Duration) (pending int64, err error) {
	r := rec.r
	now := r.clock.Start.Add(dt)
	rec.drain()
	// Due rows of a partner whose breaker is not closed wait out the
	// breaker, not a worker: they are delayed, as the simulation's
	// Snapshot counts them. The runner knows the breaker states from the
	// dispatchers' transition lines.
	var held []string
	r.mu.Lock()
	for name, st := range r.breakerNow {
		if st != 0 {
			held = append(held, name)
		}
	}
	r.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), storeCallTimeout)
	defer cancel()
	sm, err := r.st.Sample(ctx, now, held)
	if err != nil {
		return 0, fmt.Errorf("live: sampling the store: %w", err)
	}
	g := tally.Gauges{Ready: sm.Ready, Delayed: sm.Delayed, InFlight: sm.InFlight, SourceHeldBack: float64(r.inj.heldBack.Load())}
	if !sm.OldestReady.IsZero() {
		g.OldestReadyAge = max(0, now.Sub(sm.OldestReady))
	}
	if !sm.OldestDelayed.IsZero() {
		g.OldestDelayedAge = max(0, now.Sub(sm.OldestDelayed))
	}
	if cols := rec.t.BreakerColumns(); len(cols) > 0 {
		g.Breaker = make([]float64, len(cols))
		r.mu.Lock()
		for i, sub := range cols {
			g.Breaker[i] = r.breakerNow[r.subs[sub].Name]
		}
		r.mu.Unlock()
	}
	rec.t.Sample(dt, g)
	rec.lastDead = sm.Dead
	pending = sm.Ready + sm.InFlight + sm.Delayed
	// Pending also counts deliveries the injector has not written yet, and
	// those written after now (they are not in the sample's counts).
	pending += max(0, r.inj.created.Load()-(sm.Delivered+sm.Dead+pending))
	return pending, nil
}

// report feeds the tally the end of the run (every delivery's outcome from
// the store, the partners' last records, what the runner saw) and
// assembles the run.
func (r *runner) report() (*reports.Run, error) {
	rec, t := r.rec, r.rec.t
	rec.drain()
	t.End(rec.endDT)
	lateness, writeTime := r.tellCreated(t)
	// Replays first: what each moved, then how the replayed deliveries
	// ended, so that the replays' drains are known when the healthy
	// deliveries during them are counted.
	r.tellReplays(t)
	unknown, err := r.tellOutcomes(t)
	if err != nil {
		return nil, err
	}
	r.tellRunnerSaw(t)
	run, err := t.Run()
	if run == nil {
		return nil, err
	}
	if f := reports.LateInjection(run.Summary); f != nil {
		reports.AddFindings(run.Summary, []reports.Finding{*f}, nil)
	}
	r.describeRun(run, lateness, writeTime)
	switch {
	case err != nil:
		return run, err
	case unknown != 0:
		return run, fmt.Errorf("%w: %d store rows of unknown partners", drills.ErrAccounting, unknown)
	case rec.dropped != 0:
		return run, fmt.Errorf("live: %d partner records dropped (more than %d between two samples)", rec.dropped, maxBufferedAttempts)
	case r.runAtMoved > 0:
		return run, fmt.Errorf("%w: %d deliveries, e.g. %s", ErrRunAtMoved, r.runAtMoved, strings.Join(r.runAtExample, "; "))
	case rec.overlaps > 0:
		return run, fmt.Errorf("%w: %d attempts, e.g. %s", ErrOverlap, rec.overlaps, strings.Join(rec.overlapEx, "; "))
	}
	return run, nil
}

// tellCreated tells the tally what the injector wrote or rejected, per
// subscriber, and the deliveries the source still held back when the run
// ended (on_full = "block"): created and pending, as the simulation counts
// them, though no store has seen them. Their age is the oldest's. It
// returns the injection's lateness and write time.
func (r *runner) tellCreated(t *tally.Tally) (lateness, writeTime reports.Percentiles) {
	r.inj.mu.Lock()
	for si, n := range r.inj.perSub {
		if n > 0 {
			t.Created(si, n)
		}
	}
	lateness = r.inj.lateness.Percentiles()
	t.Lateness(lateness)
	writeTime = r.inj.writeTime.Percentiles()
	t.SourceHeldBack(r.inj.heldBackSum, r.inj.heldBackMax)
	r.inj.mu.Unlock()
	for si := range r.subs {
		if n := r.inj.unwrittenFor(si); n > 0 {
			t.Created(si, n)
			t.Pending(si, r.inj.unwrittenSince, n)
		}
	}
	return lateness, writeTime
}

// tellReplays tells the tally what each dlq-replay action moved.
func (r *runner) tellReplays(t *tally.Tally) {
	lr := r.replays
	if lr == nil {
		return
	}
	lr.mu.Lock()
	defer lr.mu.Unlock()
	for k, res := range lr.results {
		if res.started {
			t.ReplayStarted(k, res.matched)
		}
	}
	for _, b := range lr.batches {
		t.ReplayBatch(b.replay, b.at, b.n, drillsActionWho(r.d.Replays()[b.replay]))
		t.ReplayMoved(b.replay, b.n)
	}
}

// tellOutcomes tells the tally how every delivery in the store ended, the
// replayed ones in a first pass when there are any, and counts the rows
// of partners it does not know.
func (r *runner) tellOutcomes(t *tally.Tally) (unknown int64, err error) {
	passes := 1
	if r.replays != nil && len(r.replays.moved) > 0 {
		passes = 2
	}
	for pass := 0; pass < passes; pass++ {
		replayedPass := pass == 0 && passes == 2
		after := ""
		for {
			cctx, cancel := context.WithTimeout(context.Background(), storeCallTimeout)
			page, err := r.st.Outcomes(cctx, after, outcomePage)
			cancel()
			if err != nil {
				return unknown, fmt.Errorf("live: reading the store: %w", err)
			}
			if len(page) == 0 {
				break
			}
			after = page[len(page)-1].ID
			for i := range page {
				if !r.tellOutcome(t, &page[i], replayedPass) {
					unknown++
				}
			}
		}
	}
	return unknown, nil
}

// tellOutcome tells the tally how delivery o ended, if it belongs to this
// pass: the replayed ones in the first of two, the rest in the last. It
// returns false for a row of a partner it does not know.
func (r *runner) tellOutcome(t *tally.Tally, o *queue.Outcome, replayedPass bool) bool {
	var rid replayedID
	var isReplayed bool
	if r.replays != nil {
		rid, isReplayed = r.replays.of(o.ID)
	}
	if isReplayed != replayedPass {
		return true
	}
	si, ok := t.Layout().Index(o.Partner)
	if !ok {
		return false
	}
	created, at := o.Created.Sub(r.clock.Start), o.At.Sub(r.clock.Start)
	switch {
	case isReplayed && o.State == queue.StateDelivered:
		t.ReplayDelivered(rid.replay, at, si, created)
	case isReplayed && o.State == queue.StateDead:
		t.ReplayDeadLettered(rid.replay, at, si, created, o.Reason)
	case isReplayed:
		t.ReplayPending(rid.replay, si, created, 1)
	case o.State == queue.StateDelivered:
		t.Delivered(at, si, created)
	case o.State == queue.StateDead:
		t.DeadLettered(at, si, created, o.Reason)
	default:
		t.Pending(si, created, 1)
	}
	return true
}

// tellRunnerSaw tells the tally what the runner saw itself: the breakers'
// transitions, the restarts and the partners' alerts.
func (r *runner) tellRunnerSaw(t *tally.Tally) {
	r.mu.Lock()
	for _, tr := range r.transitions {
		t.BreakerTransition(tr.at, tr.partner, tr.from, tr.to)
	}
	r.mu.Unlock()
	for _, rs := range r.restarts {
		t.Restart(rs)
	}
	for _, a := range r.srv.Alerts() {
		t.Alert(reports.Alert{AtS: r.clock.At(a.At).Sub(r.clock.Start).Seconds(), Partner: a.Partner, Reason: a.Reason, Count: int64(a.Count)})
	}
}

// describeRun adds how the live run went to the run's settings: speed and
// store, injection lateness, overlapping attempts and restarts.
func (r *runner) describeRun(run *reports.Run, lateness, writeTime reports.Percentiles) {
	rec := r.rec
	run.Policy = append(run.Policy, reports.KV{Key: "live", Value: fmt.Sprintf("speed ×%g (drill times in the report are drill time; lateness is wall time), store %s, %d dispatcher process(es), lease %s, claim batch %d",
		r.clock.Speed, queue.RedactDSN(r.storeDSN), r.processes(), r.d.Dispatcher.LeaseTimeout.D, r.d.Dispatcher.ClaimBatch)})
	run.Policy = append(run.Policy, reports.KV{Key: "live injection", Value: fmt.Sprintf(
		"arrival lateness (scheduled → insert committed) p50 %s, p99 %s; of it, the insert (waiting for the store's write lock, writing, committing) p50 %s, p99 %s",
		wallMS(lateness.P50), wallMS(lateness.P99), wallMS(writeTime.P50), wallMS(writeTime.P99))})
	run.Policy = append(run.Policy, reports.KV{Key: "live partners", Value: fmt.Sprintf(
		"%d attempts with a delivery id; %d arrived while another attempt of the same delivery was in flight", rec.checked, rec.overlaps)})
	if len(r.restarts) > 0 {
		run.Policy = append(run.Policy, reports.KV{Key: "live restarts", Value: fmt.Sprintf(
			"%d deliveries were delayed at a restart: %d kept their run_at until due, %d were not due yet at the end, %d moved",
			r.runAtKept+r.runAtMoved+int64(len(r.runAtWatch)), r.runAtKept, len(r.runAtWatch), r.runAtMoved)})
	}
}

// wallMS formats wall seconds as milliseconds for the report.
func wallMS(s float64) string { return strconv.FormatFloat(s*1e3, 'f', 2, 64) + " ms" }
