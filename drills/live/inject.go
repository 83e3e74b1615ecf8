package live

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stormdrill/stormdrill/drills"
	"github.com/stormdrill/stormdrill/model"
	"github.com/stormdrill/stormdrill/model/runtime/queue"
	"github.com/stormdrill/stormdrill/model/runtime/wallclock"
	"github.com/stormdrill/stormdrill/reports/tally"
)

// Back-pressure limits (dispatcher.queue_capacity and on_full).
const (
	// maxHeldEvents bounds the due events the injector holds back while
	// the store is full. Past it, later arrivals stay in the schedule
	// (their created time does not change) and the held-back series
	// undercounts them.
	maxHeldEvents = 100_000
	// minCapacityPoll is the shortest pause (wall) between two counts of
	// the store's pending deliveries while it is at capacity.
	minCapacityPoll = 2 * time.Millisecond
	// capacityPollFactor: the pause after a count is at least this many
	// times what the count cost, so counting takes a bounded share of
	// the store however large the queue is.
	capacityPollFactor = 4
)

// injector inserts deliveries into the store on the drill's arrival
// schedule. Each delivery's created time is its scheduled time, not the
// time it was inserted (no coordinated omission); how late the insert's
// commit was is measured as lateness. The insert's own share of it (the
// store's write lock, shared with the dispatchers, and the commit) is
// measured apart, so a report tells the store's part from the injector's.
//
// It honours dispatcher.queue_capacity as the simulation does, counting
// the store's non-terminal deliveries as the queue: an estimate (the last
// count plus what was written since) is checked per delivery, and only
// when it reaches capacity is the store counted again, at a bounded rate.
// With on_full = "block" the source is held back until there is room:
// the deliveries keep their scheduled created time, so their latency
// includes the wait, and the wait is reported as source held back (not as
// lateness). With on_full = "reject" the delivery is dead-lettered with
// reason queue-full.
type injector struct {
	r       *runner
	st      queue.Store
	created atomic.Int64
	// heldBack is the number of deliveries whose event is due but which
	// the source holds back (on_full = "block"), for the series.
	heldBack atomic.Int64
	events   int64

	capacity int64 // 0: no limit
	block    bool
	// pendingEst is at least the store's non-terminal deliveries: the
	// last count plus every delivery written (or batched) since.
	pendingEst int64
	nextCount  time.Time // wall: no count before this

	arr       *drills.Arrivals
	ahead     []arrival          // pulled from the schedule while held back
	pauses    [][2]time.Duration // pause-source actions: [from, to) drill time
	aheadHead int
	aheadHeld int64 // events in ahead that were due when pulled
	// fan picks each event's subscribers (source.fanout), as the
	// simulation does: event n goes to the same subscribers in both modes.
	fan    *drills.Fanout
	fanBuf []int32
	// When run returns cancelled: the due deliveries not written, per
	// subscriber, and the scheduled time of the oldest of them.
	unwritten      []int64
	unwrittenSince time.Duration

	payload []byte // every delivery's body (source.payload_bytes)
	batch   []queue.Delivery
	// batchSince is when the batch's first event was taken (wall; zero
	// while empty): it is written once insertWindow has passed.
	batchSince time.Time
	rejects    []queue.Delivery // dead-lettered as queue-full at the next flush
	// rejectAt is when the latest of rejects was turned away (drill
	// time), and no earlier than any of their created times: the batch's
	// dead_at.
	rejectAt time.Time
	due      []scheduled

	mu          sync.Mutex         // guards what the recorder reads below
	lateness    *tally.LatencyHist // per event: scheduled → insert committed
	writeTime   *tally.LatencyHist // per event: insert began → committed
	perSub      []int64            // deliveries created per subscriber
	heldBackSum float64            // drill seconds, summed over held-back events
	heldBackMax float64
}

type arrival struct {
	at   time.Duration // drill time
	n    int           // events
	held bool          // already due when the held-back source pulled it
}

func newInjector(r *runner, st queue.Store) *injector {
	in := &injector{r: r, st: st, lateness: tally.NewLatencyHist(), writeTime: tally.NewLatencyHist(), perSub: make([]int64, len(r.subs)),
		fan: r.d.NewFanout(r.specs), unwritten: make([]int64, len(r.subs)), pauses: r.d.Pauses()}
	if c := r.d.Dispatcher.QueueCapacity; c > 0 {
		in.capacity = int64(c)
	}
	in.block = r.d.Dispatcher.OnFull != "reject"
	return in
}

type scheduled struct {
	wall time.Time // when the event was due, wall clock
	n    int       // deliveries it made
}

// run writes the source's deliveries to the store at their scheduled
// times, in batches, until the schedule ends or ctx is done.
func (in *injector) run(ctx context.Context) error {
	in.arr = in.r.d.NewArrivals()
	if n := in.r.d.Source.Payload; n > 0 {
		in.payload = bytes.Repeat([]byte{'x'}, n)
	}
	in.batch = make([]queue.Delivery, 0, 256)
	timer := time.NewTimer(0)
	defer timer.Stop()
	<-timer.C
	for {
		a, ok := in.nextArrival()
		if !ok {
			return in.flush()
		}
		wallAt := in.releaseAt(&a)
		if err := in.waitUntilDue(ctx, a, wallAt, timer); err != nil {
			return err
		}
		if err := in.writeArrival(ctx, a, wallAt); err != nil {
			return err
		}
		in.heldBack.Store(in.heldAheadDeliveries())
	}
}

// stop ends a cancelled run with ctx's error: what was batched is written
// (best effort), and the due deliveries not written are counted: part,
// the rest of the current event's subscribers, then events more whole
// events, then the events pulled ahead. cur is the scheduled time of the
// arrival being written.
func (in *injector) stop(ctx context.Context, cur time.Duration, part []int32, events int64) error {
	_ = in.flush()
	in.countUnwritten(part, events)
	in.unwrittenSince = cur
	if len(part) == 0 && events == 0 {
		in.unwrittenSince = in.oldestAhead()
	}
	return ctx.Err()
}

// releaseAt is the wall time arrival a is released. A paused source holds
// the events due during the pause and releases them when it resumes, as
// the simulation does: held back, their latency still from the schedule.
func (in *injector) releaseAt(a *arrival) time.Time {
	clock := in.r.clock
	wallAt := clock.WallAt(clock.Start.Add(a.at))
	for _, p := range in.pauses {
		if a.at >= p[0] && a.at < p[1] {
			wallAt = clock.WallAt(clock.Start.Add(p[1]))
			a.held = true
		}
	}
	return wallAt
}

// waitUntilDue waits for wall time wallAt, writing what is batched first
// unless arrival a comes within the window of the batch's start (then it
// joins it). A cancelled ctx stops the run.
func (in *injector) waitUntilDue(ctx context.Context, a arrival, wallAt time.Time, timer *time.Timer) error {
	if wait := time.Until(wallAt); wait <= 0 {
		if ctx.Err() != nil {
			return in.stop(ctx, a.at, nil, int64(a.n))
		}
		return nil
	}
	if in.batchSince.IsZero() || wallAt.Sub(in.batchSince) >= insertWindow {
		if err := in.flush(); err != nil {
			return err
		}
	}
	// A Go timer alone wakes up to a millisecond late on Linux, which was
	// most of the measured lateness.
	if err := wallclock.Until(ctx, wallAt, timer); err != nil {
		return in.stop(ctx, a.at, nil, 0)
	}
	return nil
}

// writeArrival batches the deliveries of arrival a's events, due at wall
// time wallAt, and writes the batch once it is full or insertWindow old.
func (in *injector) writeArrival(ctx context.Context, a arrival, wallAt time.Time) error {
	created := in.r.clock.Start.Add(a.at)
	for e := 0; e < a.n; e++ {
		subs, held, err := in.batchEvent(ctx, a, e, created)
		if err != nil {
			return err
		}
		if held {
			in.recordHeld(created)
		} else {
			in.due = append(in.due, scheduled{wall: wallAt, n: subs})
		}
		in.events++
		// due is bounded too: an event always adds to it, even one that
		// fans out to no subscriber.
		if in.batchSince.IsZero() {
			in.batchSince = time.Now()
		}
		if len(in.batch) >= MaxInsertBatch || len(in.due) >= MaxInsertBatch || len(in.rejects) >= MaxInsertBatch ||
			time.Since(in.batchSince) >= insertWindow {
			if err := in.flush(); err != nil {
				return err
			}
		}
	}
	return nil
}

// batchEvent batches the deliveries of event e of arrival a, the drill's
// event in.events, created at created. A full queue rejects them, or holds
// the source back until there is room. It returns how many subscribers the
// event goes to and whether it was held back.
func (in *injector) batchEvent(ctx context.Context, a arrival, e int, created time.Time) (subsN int, held bool, err error) {
	r := in.r
	held = a.held
	subs := in.pick(in.events)
	for k, si32 := range subs {
		si := int(si32)
		s := &r.subs[si]
		d := queue.Delivery{
			ID: drills.DeliveryID(in.events, s.Name), Event: fmt.Sprintf("evt-%06d", in.events),
			Partner: s.Name, Cohort: r.specs[s.Cohort].Name, Payload: in.payload, Created: created,
		}
		if in.capacity > 0 && !in.room() {
			if !in.block {
				in.turnAway(d, si)
				continue
			}
			// Held here: the rest of this arrival waits too.
			rest := int64(len(subs)-k) + int64(float64(a.n-e-1)*in.meanFan())
			if err := in.waitForRoom(ctx, rest); err != nil {
				if ctx.Err() != nil {
					return 0, false, in.stop(ctx, a.at, subs[k:], int64(a.n-e-1))
				}
				return 0, false, err
			}
			held = true
		}
		in.batch = append(in.batch, d)
		in.pendingEst++
		in.countSub(si)
	}
	return len(subs), held, nil
}

// turnAway turns delivery d away from a full queue (on_full = "reject"):
// it is dead-lettered as queue-full at the next flush.
func (in *injector) turnAway(d queue.Delivery, si int) {
	in.rejects = append(in.rejects, d)
	for _, at := range [...]time.Time{in.r.clock.Now(), d.Created} {
		if at.After(in.rejectAt) {
			in.rejectAt = at
		}
	}
	in.countSub(si)
}

// recordHeld records how long an event created at created was held back,
// as the simulation measures it: from the scheduled arrival until the
// source let the event's last delivery through.
func (in *injector) recordHeld(created time.Time) {
	heldS := max(0, in.r.clock.Now().Sub(created).Seconds())
	in.mu.Lock()
	in.heldBackSum += heldS
	in.heldBackMax = max(in.heldBackMax, heldS)
	in.mu.Unlock()
}

// pick returns event n's subscribers (for all, the shared list: do not
// modify it). The event number is the one the delivery ids carry.
func (in *injector) pick(n int64) []int32 {
	subs := in.fan.Pick(n, in.fanBuf)
	if !in.fan.All() {
		in.fanBuf = subs
	}
	return subs
}

// meanFan is the expected number of deliveries per event.
func (in *injector) meanFan() float64 {
	if in.fan.All() {
		return float64(in.fan.Eligible())
	}
	return in.r.d.FanoutMean()
}

// heldAheadDeliveries estimates the deliveries of the held events pulled
// ahead, for the held-back series (exact for all, one and k).
func (in *injector) heldAheadDeliveries() int64 {
	return int64(float64(in.aheadHeld)*in.meanFan() + 0.5)
}

// countUnwritten adds to unwritten, per subscriber, the due deliveries run
// did not write: part (the rest of event in.events), then events whole
// events, then the held events pulled ahead, numbered on from there.
func (in *injector) countUnwritten(part []int32, events int64) {
	for _, si := range part {
		in.unwritten[si]++
	}
	next := in.events
	if len(part) > 0 {
		next++
	}
	total := events + in.aheadHeld
	if in.fan.All() {
		for _, si := range in.fan.Pick(0, nil) {
			in.unwritten[si] += total
		}
		return
	}
	for i := int64(0); i < total; i++ { // at most maxHeldEvents plus one arrival
		for _, si := range in.pick(next + i) {
			in.unwritten[si]++
		}
	}
}

func (in *injector) countSub(si int) {
	in.mu.Lock()
	in.perSub[si]++
	in.mu.Unlock()
}

// nextArrival returns the next arrival: first those pulled ahead while
// the source was held back, then the schedule's.
func (in *injector) nextArrival() (arrival, bool) {
	if in.aheadHead < len(in.ahead) {
		a := in.ahead[in.aheadHead]
		in.aheadHead++
		if a.held {
			in.aheadHeld -= int64(a.n)
		}
		if in.aheadHead == len(in.ahead) {
			in.ahead, in.aheadHead = in.ahead[:0], 0
		} else if in.aheadHead > 4096 && in.aheadHead*2 > len(in.ahead) {
			in.ahead = append(in.ahead[:0], in.ahead[in.aheadHead:]...)
			in.aheadHead = 0
		}
		return a, true
	}
	at, n, ok := in.arr.Next()
	return arrival{at: at, n: n}, ok
}

// pullAhead takes the arrivals that are due now off the schedule, so the
// held-back series counts them, and at most one that is not due yet.
func (in *injector) pullAhead() {
	r := in.r
	due := func(at time.Duration) bool {
		return !r.clock.WallAt(r.clock.Start.Add(at)).After(time.Now())
	}
	if k := len(in.ahead); k > in.aheadHead && !in.ahead[k-1].held {
		last := &in.ahead[k-1]
		if !due(last.at) {
			return
		}
		last.held = true
		in.aheadHeld += int64(last.n)
	}
	for len(in.ahead)-in.aheadHead < maxHeldEvents {
		at, n, ok := in.arr.Next()
		if !ok {
			return
		}
		a := arrival{at: at, n: n, held: due(at)}
		in.ahead = append(in.ahead, a)
		if !a.held {
			return
		}
		in.aheadHeld += int64(n)
	}
}

// room reports whether the store has room for one more delivery,
// counting it again if the estimate says it is full and the last count
// is old enough.
func (in *injector) room() bool {
	if in.pendingEst < in.capacity {
		return true
	}
	if time.Now().Before(in.nextCount) {
		return false
	}
	// The count must see what is batched, or it would undercount.
	if err := in.flush(); err != nil {
		return false // counted again at the next poll; flush fails again if it must
	}
	if err := in.count(); err != nil {
		return false
	}
	return in.pendingEst < in.capacity
}

// count sets pendingEst to the store's non-terminal deliveries and the
// time of the next count.
func (in *injector) count() error {
	t0 := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), storeCallTimeout)
	defer cancel()
	c, err := in.st.Counts(ctx, in.r.clock.Now())
	took := time.Since(t0)
	in.nextCount = time.Now().Add(max(minCapacityPoll, capacityPollFactor*took))
	if err != nil {
		return fmt.Errorf("live: counting pending deliveries: %w", err)
	}
	in.pendingEst = c.Ready + c.Delayed + c.Leased
	return nil
}

// waitForRoom holds the source until the store has room. rest is how many
// deliveries of the current arrival are held; arrivals that come due
// meanwhile are pulled ahead and counted as held too.
func (in *injector) waitForRoom(ctx context.Context, rest int64) error {
	if err := in.flush(); err != nil {
		return err
	}
	timer := time.NewTimer(0)
	defer timer.Stop()
	<-timer.C
	for {
		in.pullAhead()
		in.heldBack.Store(rest + in.heldAheadDeliveries())
		if !time.Now().Before(in.nextCount) {
			if err := in.count(); err != nil {
				return err
			}
			if in.pendingEst < in.capacity {
				return nil
			}
		}
		timer.Reset(max(0, time.Until(in.nextCount)))
		select {
		case <-timer.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// flush writes the batch and the rejected deliveries and records the
// lateness and write time of the events written.
func (in *injector) flush() error {
	if len(in.batch) == 0 && len(in.due) == 0 && len(in.rejects) == 0 {
		return nil
	}
	begin := time.Now()
	if len(in.batch) > 0 {
		if err := in.enqueue(in.batch); err != nil {
			return err
		}
	}
	if len(in.rejects) > 0 {
		if err := in.retryBusy("dead-lettering deliveries (queue full)", in.reject); err != nil {
			return err
		}
	}
	done := time.Now()
	in.mu.Lock()
	for _, s := range in.due {
		in.lateness.Record(int64(done.Sub(s.wall)))
		in.writeTime.Record(int64(done.Sub(begin)))
	}
	in.mu.Unlock()
	in.created.Add(int64(len(in.batch) + len(in.rejects)))
	clear(in.batch)
	clear(in.rejects)
	in.batch, in.due, in.rejects = in.batch[:0], in.due[:0], in.rejects[:0]
	in.batchSince = time.Time{}
	in.rejectAt = time.Time{}
	return nil
}

// reject dead-letters the rejected deliveries with reason queue-full;
// `stormdrill dlq` lists and replays them like any other. One event can
// fan out past the store's batch limit, so they go in chunks; a retry
// after a partial write is safe, as a known id is ignored.
func (in *injector) reject() error {
	for rest := in.rejects; len(rest) > 0; {
		n := min(len(rest), queue.MaxRejectBatch)
		if err := in.rejectChunk(rest[:n]); err != nil {
			return err
		}
		rest = rest[n:]
	}
	return nil
}

func (in *injector) rejectChunk(ds []queue.Delivery) error {
	ctx, cancel := context.WithTimeout(context.Background(), storeCallTimeout)
	defer cancel()
	_, err := in.st.Reject(ctx, ds, string(model.ReasonQueueFull), in.rejectAt)
	return err
}

// unwrittenFor is how many due deliveries to subscriber si the source
// still held when run returned (cancelled while held back); read after
// run has returned.
func (in *injector) unwrittenFor(si int) int64 { return in.unwritten[si] }

// oldestAhead is the scheduled time of the oldest due arrival pulled
// ahead of the schedule.
func (in *injector) oldestAhead() time.Duration {
	for _, a := range in.ahead[in.aheadHead:] {
		if a.held {
			return a.at
		}
	}
	return in.r.rec.endDT
}

// busyRetry is the pause between two tries of a busy store.
const busyRetry = 200 * time.Microsecond

// enqueue inserts one batch, retrying while the store is busy (another
// process holds the write lock), for at most storeCallTimeout.
func (in *injector) enqueue(batch []queue.Delivery) error {
	return in.retryBusy("injecting deliveries", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), storeCallTimeout)
		defer cancel()
		_, err := in.st.Enqueue(ctx, batch)
		return err
	})
}

// retryBusy runs fn until it succeeds, fails with another error than a
// busy store, or storeCallTimeout has passed.
func (in *injector) retryBusy(what string, fn func() error) error {
	deadline := time.Now().Add(storeCallTimeout)
	for {
		err := fn()
		if err == nil {
			return nil
		}
		if !isBusy(err) || time.Now().After(deadline) {
			return fmt.Errorf("live: %s: %w", what, err)
		}
		wallclock.Sleep(busyRetry)
	}
}

// isBusy reports whether err is SQLite's "another connection holds the
// lock".
func isBusy(err error) bool {
	s := err.Error()
	return strings.Contains(s, "SQLITE_BUSY") || strings.Contains(s, "database is locked")
}
