package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"time"

	"github.com/stormdrill/stormdrill/drills"
	"github.com/stormdrill/stormdrill/fakepartner"
	"github.com/stormdrill/stormdrill/model"
	"github.com/stormdrill/stormdrill/model/dispatchcore"
	"github.com/stormdrill/stormdrill/model/eventqueue"
	"github.com/stormdrill/stormdrill/model/seed"
	"github.com/stormdrill/stormdrill/reports"
	"github.com/stormdrill/stormdrill/reports/tally"
)

// Limits that keep a simulated run bounded whatever the drill says.
const (
	// MaxHeldEvents bounds events the source holds back under back-pressure.
	MaxHeldEvents = 10_000_000
	// MaxSimEvents bounds one run's event loop.
	MaxSimEvents = 2_000_000_000
)

// Options tune a simulated run.
type Options struct {
	// Progress, if set, is called now and then from the run's goroutine.
	Progress func(drills.Progress)
	// MaxEvents, if above 0, ends the run after that many simulated
	// events, as if the drill ended there (for fuzzing whole drills).
	MaxEvents int64
}

type evKind uint8

const (
	evArrival evKind = iota
	evComplete
	evWake
	evSample
	evDown
	evUp
	evWrite
	evAction // slot: index into d.Actions
	evReplay // slot: index into r.replays: its next batch
	evResume // the source resumes after a pause
)

// simEvent is small on purpose: the event queue copies it on every move. An
// evComplete carries where its attempt's state lies (its slot, its item,
// its subscriber), so that all of it can be prefetched an event ahead at
// once, rather than the item only once the slot has come.
type simEvent struct {
	kindEpoch uint32 // the kind in the top 4 bits, below it the epoch (evComplete: r.epoch when it started)
	slot      int32  // evComplete: in-flight slot; evDown/evUp: fault index; evWrite: r.writes index
	sub       int32  // evComplete: the subscriber
	item      uint32 // evComplete, when prefetching: the item's itemArena.index
}

// epochBits is the width of an event's epoch: restarts are at most the
// drill's faults, which newSimRun bounds below 2^epochBits.
const epochBits = 28

func mkEvent(k evKind, slot int32) simEvent {
	return simEvent{kindEpoch: uint32(k) << epochBits, slot: slot}
}

// withEpoch is e with its epoch set to epoch (below 2^epochBits).
func (e simEvent) withEpoch(epoch uint32) simEvent {
	e.kindEpoch = e.kindEpoch&^(1<<epochBits-1) | epoch
	return e
}

func (e simEvent) kind() evKind  { return evKind(e.kindEpoch >> epochBits) }
func (e simEvent) epoch() uint32 { return e.kindEpoch & (1<<epochBits - 1) }

// inflight is an attempt under way, in 32 bytes: the slots are read in
// completion order, which is not the order they were written in, so at
// thousands of attempts in flight each read is a cache miss unless they
// all fit in the cache. The usual call's outcome fits the fields here; a
// call that needs more (a contended write Finish decides, a Retry-After)
// keeps the whole of it in r.calls.
type inflight struct {
	it        *dispatchcore.Item
	started   int64
	status    int32 // the call's Result.Status, when full < 0
	kind      fakepartner.ResultKind
	timedOut  bool
	processed bool   // the call's Processed, when full < 0
	ackLost   bool   // the call's AckLost, when full < 0
	noAnswer  bool   // the call's NoAnswer, when full < 0
	full      int32  // index into r.calls of the whole call; -1: none
	epoch     uint32 // r.epoch when it started: a completion of an earlier epoch was lost in a restart
}

// lateWrite is a contended call whose caller stopped waiting (its timeout
// fired, or a hard restart lost it) before the partner's write landed. The
// write lands at its time all the same: Finish must see it, in time order,
// so that later calls conflict with it, and a write that succeeds is a
// success the caller never saw.
type lateWrite struct {
	it   *dispatchcore.Item
	call fakepartner.Call
}

// writeRef counts an item's late writes still to land; the item stays out
// of the pool until the last one has, so the pointer keeps naming the same
// delivery.
type writeRef struct {
	n        int32
	terminal bool // the delivery ended meanwhile; pool it after the last write
}

type simRun struct {
	d     *drills.Drill
	pol   *model.Policy
	specs []fakepartner.Spec
	subs  []subscriber
	names []string // subscriber names, by index

	// cohortLo[c] is cohort c's first subscriber index (its subscribers
	// are consecutive), and cohortLo[len(specs)] the number of
	// subscribers; cohortBad[c]: the cohort rejects some deliveries as bad
	// data, so its items need their own data draw (see ref.go), made from
	// cohortSeed[c], its data seed. A cohort's permanent-error rate is set
	// for the whole drill, so the others never read their draw: it is 0.
	cohortLo   []int32
	cohortBad  []bool
	cohortSeed []uint64
	oldestBuf  []int64 // sample's per-cohort oldest FirstSeen

	fan     *drills.Fanout
	fanout  []int32 // the subscriber indexes held[heldHead] fans out to
	fanBuf  []int32 // backing of fanout when the shape picks per event
	heldBuf []int32 // scratch for the picks of other held events
	core    *dispatchcore.Core
	q       eventqueue.Queue[simEvent]
	jitter  rand.PCG         // the dispatcher's jitter stream (seed.Float64)
	arr     *drills.Arrivals // the source's schedule
	arrN    int              // events the scheduled evArrival releases
	epoch0  int64            // unix ns of drill time 0
	needID  bool

	// prefixes holds the hashes of recent events' ids (see eventPrefix):
	// items are made when their deliveries come up, by partners at
	// different places in the backlog, not in event order.
	prefixes [prefixCacheLen]eventPrefix

	breakers  []simBreaker                // the current breakers, one a subscriber; nil without
	coreState []dispatchcore.PartnerState // the core's partners' state (dispatchcore.Config.State)
	// prefetch: the subscribers' state outgrows the CPU's caches, so
	// prefetching it pays (see tuning.go); below that it only costs.
	prefetch bool
	// ringAsked is the core's RingPos when prefetchRing last asked.
	ringAsked [2]int

	slots     []inflight
	freeSlots []int32
	calls     []fakepartner.Call // whole calls of slots that need them (inflight.full)
	freeCalls []int32
	items     itemArena

	writes     []lateWrite
	freeWrites []int32
	writeRefs  map[*dispatchcore.Item]writeRef // nil until a write is late
	writesLate int                             // late writes still to land

	epoch      uint32
	down       bool
	wakeAt     int64 // earliest evWake scheduled (drill ns); math.MaxInt64 if none
	eventSeq   int64
	endNs      int64 // source stops
	hardEndNs  int64 // drill stops
	sourceDone bool

	// back-pressure
	held        []int64 // scheduled times of events not yet fully enqueued
	heldHead    int
	heldSub     int // fan-out progress of held[heldHead]
	heldBackSum float64
	heldBackMax float64

	tally    *tally.Tally
	interval int64 // sample interval, drill ns
	events   int64 // events the source has released

	// Operator actions (actions.go).
	pauses       [][2]int64 // the source's pauses, [from, to) drill ns
	replays      []simReplay
	dlq          []dlqEntry                   // dead letters a replay may still move, oldest first
	dlqHead      int                          // entries before it are all gone
	replayOf     map[*dispatchcore.Item]int32 // replayed delivery → its replay's index
	outageSpread bool                         // the layout has outages: feed the retry spread
}

// simReplay is one dlq-replay action under way.
type simReplay struct {
	action         int // index into d.Actions
	reason         model.Reason
	cohort         int32 // -1: any
	batch          int
	gap            int64
	started, done  bool
	matched, moved int64
	cursor         int // dlq entries before it match no longer
}

// dlqEntry is a dead letter kept for a replay.
type dlqEntry struct {
	it     *dispatchcore.Item // nil once replayed
	reason model.Reason
	cohort int32
}

func (rp *simReplay) selects(e *dlqEntry) bool {
	return e.it != nil && (rp.reason == "" || rp.reason == e.reason) && (rp.cohort < 0 || rp.cohort == e.cohort)
}

// Run runs a drill under the deterministic simulation.
func Run(d *drills.Drill, opt Options) (*reports.Run, error) {
	r, err := newSimRun(d)
	if err != nil {
		return nil, err
	}
	if err := r.run(opt); err != nil {
		return nil, err
	}
	t := r.settle()
	// The report needs only the tally. Collected now, the simulation's
	// queues, deliveries and subscribers leave their memory to the report,
	// which would otherwise grow the heap past the run's own peak (by
	// about a tenth at 2,000 subscribers) while they waited for the next
	// collection.
	r = nil
	runtime.GC()
	return t.Run()
}

func newSimRun(d *drills.Drill) (*simRun, error) {
	pol, err := d.ModelPolicy()
	if err != nil {
		return nil, err
	}
	specs, err := d.PartnerSpecs()
	if err != nil {
		return nil, err
	}
	if len(d.Faults) >= 1<<epochBits {
		return nil, fmt.Errorf("simulation: %d faults, at most %d", len(d.Faults), 1<<epochBits-1)
	}
	r := &simRun{d: d, pol: pol, specs: specs, epoch0: fakepartner.SimEpoch.UnixNano(), wakeAt: math.MaxInt64}
	r.tally = d.NewTally(specs, "sim", 0, tally.Interval(d.SampleInterval.D, d.Duration.D+d.Drain.D))
	r.interval = int64(r.tally.Interval())
	layout := r.tally.Layout()
	r.needID = pol.Backoff.Jitter.Info().NeedsID
	seed.SeedPCG(&r.jitter, d.Seed, "dispatcher") // as seed.NewRand(d.Seed, "dispatcher")
	r.arr = d.NewArrivals()
	pcs := make([]dispatchcore.PartnerConfig, 0, len(layout.Subscribers))
	var global *model.Budget
	if d.BudgetEnabled() && d.Policy.Budget.Global() {
		global = model.NewBudget(d.Policy.Budget.MaxTokens, d.Policy.Budget.TokenRatio)
	}
	// Each subscriber's state lives in one slice in subscriber order, names
	// in one string, rather than in an allocation each: an event fans out in
	// that order, so at tens of thousands of subscribers the walk reads
	// memory in order instead of missing the cache at every step.
	n := len(layout.Subscribers)
	nameLen := 0
	for _, s := range layout.Subscribers {
		nameLen += len(s.Name)
	}
	names := make([]byte, 0, nameLen)
	for _, s := range layout.Subscribers {
		names = append(names, s.Name...)
	}
	allNames := string(names)
	r.subs = newSubscribers(n)
	r.names = make([]string, n)
	r.cohortLo = make([]int32, len(specs)+1)
	r.cohortBad = make([]bool, len(specs))
	r.cohortSeed = make([]uint64, len(specs))
	for c := range specs {
		r.cohortLo[c+1] = r.cohortLo[c] + int32(specs[c].Count)
		r.cohortBad[c] = specs[c].PermanentErrors > 0
		// As each subscriber's partner derives it (Sim.SetSeed below).
		r.cohortSeed[c] = fakepartner.DataSeed(d.Seed, specs[c].Name)
	}
	off := 0
	for i, s := range layout.Subscribers {
		sp := &specs[s.Cohort]
		sub := &r.subs[i]
		seed.SeedPCG(&sub.pcg, d.Seed, "partner/"+s.Name)
		sub.rng = *rand.New(&sub.pcg)
		if i != int(r.cohortLo[s.Cohort])+s.Member {
			return nil, fmt.Errorf("simulation: subscriber %s is not in cohort order", s.Name) // newItem relies on it
		}
		r.names[i] = allNames[off : off+len(s.Name)]
		off += len(s.Name)
		sub.partner.Init(sp, s.Member, &sub.rng)
		sub.partner.SetSeed(d.Seed) // as the live runner's server: the same deliveries carry bad data
		pcs = append(pcs, dispatchcore.PartnerConfig{Name: s.Name, Policy: pol, Concurrency: d.Dispatcher.PerPartnerConcurrency})
	}
	r.prefetch = prefetchPays(n)
	r.coreState = newCoreState(n)
	r.fan = d.NewFanout(specs)
	r.fanout = r.fan.Pick(0, nil)
	r.core, err = dispatchcore.New(dispatchcore.Config{Workers: d.Dispatcher.Workers, QueueCapacity: d.Dispatcher.QueueCapacity, Partners: pcs, State: r.coreState, Fresh: r.freshItem})
	if err != nil {
		return nil, err
	}
	r.freshGuards(global, 0)
	r.endNs = int64(d.Duration.D)
	r.hardEndNs = r.endNs + int64(d.Drain.D)
	for _, p := range d.Pauses() {
		r.pauses = append(r.pauses, [2]int64{int64(p[0]), int64(p[1])})
	}
	for _, i := range d.Replays() {
		a := &d.Actions[i]
		rp := simReplay{action: i, reason: model.Reason(a.Reason), cohort: -1, batch: a.Batch}
		req := a.ReplayRequest()
		rp.gap = req.Gap()
		for ci := range d.Partners {
			if d.Partners[ci].Name == a.Cohort {
				rp.cohort = int32(ci)
			}
		}
		r.replays = append(r.replays, rp)
	}
	r.outageSpread = len(layout.Outages) > 0
	return r, nil
}

// freshGuards gives every partner a new breaker and budget, as a (re)started
// dispatcher process has.
func (r *simRun) freshGuards(global *model.Budget, now int64) {
	d := r.d
	var bs model.BreakerSettings
	if d.BreakerEnabled() {
		bs, _ = d.ModelBreakerSettings()
	}
	if d.BudgetEnabled() && d.Policy.Budget.Global() && global == nil {
		global = model.NewBudget(d.Policy.Budget.MaxTokens, d.Policy.Budget.TokenRatio)
	}
	// One slice each, in subscriber order, for the same reason as the
	// subscribers' own state (see newSimRun).
	var brs []simBreaker
	if d.BreakerEnabled() {
		brs = newBreakers(len(r.subs))
	}
	r.breakers = brs
	var buds []model.Budget
	if d.BudgetEnabled() && global == nil {
		buds = make([]model.Budget, len(r.subs))
	}
	var fresh model.Breaker // what every breaker starts as: copied, not made one by one
	if brs != nil {
		fresh = *model.NewBreaker(bs)
	}
	for i := range r.subs {
		var br *model.Breaker
		if brs != nil {
			brs[i].Breaker = fresh
			br = &brs[i].Breaker
			name := r.names[i]
			br.OnTransition = func(tr model.Transition) {
				r.tally.BreakerTransition(time.Duration(tr.At.UnixNano()-r.epoch0), name, tr.From.String(), tr.To.String())
			}
		}
		bud := global
		if buds != nil {
			buds[i] = *model.NewBudget(d.Policy.Budget.MaxTokens, d.Policy.Budget.TokenRatio)
			bud = &buds[i]
		}
		r.core.SetGuards(i, br, bud, r.unixNs(now))
	}
}

// wall is drill time t on the wall clock; unixNs is the same in Unix
// nanoseconds, as the dispatcher core takes it.
func (r *simRun) wall(t int64) time.Time { return time.Unix(0, r.unixNs(t)) }
func (r *simRun) unixNs(t int64) int64   { return r.epoch0 + t }

func (r *simRun) run(opt Options) error {
	d := r.d
	// Source.
	r.scheduleArrival()
	r.q.Push(r.interval, mkEvent(evSample, 0))
	for i, f := range d.Faults {
		r.q.Push(int64(f.At.D), mkEvent(evDown, int32(i)))
	}
	for i := range d.Actions {
		r.q.Push(int64(d.Actions[i].At.D), mkEvent(evAction, int32(i)))
	}
	var events int64
	lastProgress := int64(0)
	for r.q.Len() > 0 {
		t, ev := r.q.Pop()
		if t > r.hardEndNs {
			break
		}
		if r.prefetch {
			r.prefetchNextEvent()
		}
		events++
		if opt.MaxEvents > 0 && events > opt.MaxEvents {
			r.tally.End(time.Duration(t))
			return nil
		}
		if events > MaxSimEvents {
			return fmt.Errorf("simulation exceeded %d events", int64(MaxSimEvents))
		}
		switch ev.kind() {
		case evArrival:
			r.arrival(t)
		case evComplete:
			r.complete(t, ev)
		case evWake:
			if t == r.wakeAt {
				r.wakeAt = math.MaxInt64
			}
		case evSample:
			r.sample(t)
			if r.finished(t) {
				r.tally.End(time.Duration(t))
				return nil
			}
			r.q.Push(t+r.interval, mkEvent(evSample, 0))
		case evDown:
			r.goDown(t, int(ev.slot))
		case evUp:
			r.down = false
			r.freshGuards(nil, t)
		case evWrite:
			r.landWrite(t, ev.slot)
		case evAction:
			r.act(t, int(ev.slot))
		case evReplay:
			r.replayBatch(t, int(ev.slot))
		case evResume:
			r.feedSource(t)
		}
		r.pump(t)
		if opt.Progress != nil && events-lastProgress >= 1<<16 {
			lastProgress = events
			opt.Progress(drills.Progress{DrillTime: time.Duration(t), Total: time.Duration(r.endNs), Created: r.tally.CreatedTotal(), DLQ: r.tally.DeadLetteredTotal()})
		}
	}
	r.tally.End(time.Duration(min(r.q.Now(), r.hardEndNs)))
	return nil
}

// finished: the source is done, nothing is pending, every late write has
// landed and every outage is over.
func (r *simRun) finished(t int64) bool {
	if !r.sourceDone || r.heldHead < len(r.held) || r.core.Queued()+r.core.InFlight() > 0 || r.down || r.writesLate > 0 {
		return false
	}
	// An action still to come may bring work back (a replay).
	for i := range r.d.Actions {
		if t < int64(r.d.Actions[i].At.D) {
			return false
		}
	}
	for i := range r.replays {
		if !r.replays[i].done {
			return false
		}
	}
	for _, o := range r.tally.Layout().Outages {
		if t < int64(o.End) {
			return false
		}
	}
	for _, f := range r.d.Faults {
		if t < int64(f.At.D+f.Down.D) {
			return false
		}
	}
	return true
}

// scheduleArrival schedules the source's next arrival, or marks the
// source done.
func (r *simRun) scheduleArrival() {
	at, n, ok := r.arr.Next()
	if !ok {
		r.sourceDone = true
		return
	}
	r.arrN = n
	r.q.Push(int64(at), mkEvent(evArrival, 0))
}

func (r *simRun) arrival(t int64) {
	for i := 0; i < r.arrN; i++ {
		if len(r.held)-r.heldHead >= MaxHeldEvents {
			break
		}
		r.held = append(r.held, t)
	}
	r.feedSource(t)
	r.scheduleArrival()
}

// feedSource enqueues held events' deliveries while the queue has room.
func (r *simRun) feedSource(t int64) {
	if r.paused(t) {
		return // held until the pause ends (evResume)
	}
	block := r.d.Dispatcher.OnFull != "reject"
	now := r.unixNs(t)
	for r.heldHead < len(r.held) {
		created := r.held[r.heldHead]
		eventNo := r.events
		if r.heldSub == 0 && !r.fan.All() {
			r.fanout = r.fan.Pick(eventNo, r.fanBuf)
			r.fanBuf = r.fanout
		}
		for r.heldSub < len(r.fanout) {
			if block && r.core.Full() {
				return
			}
			if r.prefetch {
				r.prefetchFanout()
			}
			si := r.fanout[r.heldSub]
			r.tally.Created(int(si), 1)
			if eventNo < freshEvents {
				// The core makes its item when it comes up (freshItem):
				// a backlog holds none.
				if err := r.core.OfferFresh(si, r.epoch0+created, uint32(eventNo), now); err != nil {
					r.deadLetter(t, r.newItem(si, created, eventNo), model.ReasonQueueFull, false)
				}
			} else if it := r.newItem(si, created, eventNo); r.core.Offer(it, now) != nil {
				r.deadLetter(t, it, model.ReasonQueueFull, false)
			}
			r.heldSub++
		}
		held := float64(t-created) / 1e9
		r.heldBackSum += held
		r.heldBackMax = max(r.heldBackMax, held)
		r.events++
		r.heldSub = 0
		r.heldHead++
		if r.heldHead > 4096 && r.heldHead*2 > len(r.held) {
			r.held = append(r.held[:0], r.held[r.heldHead:]...)
			r.heldHead = 0
		}
	}
}

// freshEvents is how many events' deliveries the source offers fresh:
// OfferFresh's token, the event's number, has 32 bits. Past them a
// delivery gets its item when it is created, as every one did before; a
// test sets it to 0 to check that nothing else changes.
var freshEvents int64 = math.MaxUint32 + 1

func (r *simRun) newItem(si int32, created int64, eventNo int64) *dispatchcore.Item {
	it := r.items.get()
	if r.prefetch {
		r.prefetchPool()
	}
	c := r.cohortOf(si)
	it.Partner = si
	it.FirstSeen = r.epoch0 + created
	it.RunAt = it.FirstSeen
	if r.cohortBad[c] {
		// The key only decides bad data; hashing costs about a tenth of an
		// attempt, so cohorts without bad data skip it (their draw stays
		// 0). The id's event part is hashed once per event, not per
		// subscriber.
		draw := fakepartner.DataDraw(r.cohortSeed[c], fakepartner.KeyHashString(r.prefix(eventNo).key(), r.names[si]))
		it.Ref |= draw << refDrawShift
	}
	if r.needID {
		// The id's event part is hashed once per event, and no id is
		// built per delivery.
		it.JitterKey = r.prefix(eventNo).jitterKey().With(r.names[si])
	}
	return it
}

// freshItem makes the item of a fresh delivery the core queued without one
// (dispatchcore.Config.Fresh): tok is its event's number.
func (r *simRun) freshItem(si int32, runAt int64, tok uint32) *dispatchcore.Item {
	return r.newItem(si, runAt-r.epoch0, int64(tok))
}

// prefixCacheLen is how many events' id hashes the simulator keeps: the
// partners draining a backlog are at different events, but seldom at
// more than a few hundred.
const prefixCacheLen = 256

// eventPrefix is what the ids of one event's deliveries start with,
// hashed: as the bad-data key (deliveryKeyPrefix) and as hash jitter's key
// (model.JitterKeyOf of DeliveryID(event, "")), each made when first
// needed.
type eventPrefix struct {
	event          int64
	keyOK, jitOK   bool
	keyHash        uint64
	jitterKeyStart model.JitterKey
}

// prefix is the cache entry for event, emptied if it held another.
func (r *simRun) prefix(event int64) *eventPrefix {
	e := &r.prefixes[uint64(event)%prefixCacheLen]
	if e.event != event {
		*e = eventPrefix{event: event}
	}
	return e
}

func (e *eventPrefix) key() uint64 {
	if !e.keyOK {
		e.keyHash, e.keyOK = deliveryKeyPrefix(e.event), true
	}
	return e.keyHash
}

func (e *eventPrefix) jitterKey() model.JitterKey {
	if !e.jitOK {
		e.jitterKeyStart, e.jitOK = model.JitterKeyOf(drills.DeliveryID(e.event, "")), true
	}
	return e.jitterKeyStart
}

// cohortOf is the cohort of subscriber si: a search of the cohorts' first
// indexes (the last cohort starting at or before si, which skips empty
// ones), which stay in the cache where a table by subscriber
// would not.
func (r *simRun) cohortOf(si int32) int32 {
	lo, hi := 0, len(r.cohortLo)-2 // the answer is in [lo, hi]
	for lo < hi {
		mid := int(uint(lo+hi+1) >> 1)
		if r.cohortLo[mid] <= si {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return int32(lo)
}

// evtPrefixKey is the hash of every delivery id's first bytes.
var evtPrefixKey = fakepartner.KeyHashString(fakepartner.KeyHashInit, "evt-")

// deliveryKey is fakepartner.KeyHash(DeliveryID(event, subscriber)), hashed
// byte by byte without building the id, on the hot path: the simulated
// partner decides bad data from it as the live partner does from the
// Idempotency-Key.
func deliveryKey(event int64, subscriber string) uint64 {
	return fakepartner.KeyHashString(deliveryKeyPrefix(event), subscriber)
}

// deliveryKeyPrefix is the hash of DeliveryID(event, subscriber) up to and
// including the colon: the part every subscriber of the event shares.
func deliveryKeyPrefix(event int64) uint64 {
	h := evtPrefixKey
	u, width := uint64(event), 6
	if event < 0 {
		// %06d pads after the sign, which counts towards the width.
		h = fakepartner.KeyHashByte(h, '-')
		u, width = -u, 5 // -u is |event|, also for math.MinInt64
	}
	var digits [20]byte
	i := len(digits)
	for {
		i--
		digits[i] = byte('0' + u%10)
		u /= 10
		if u == 0 {
			break
		}
	}
	for n := len(digits) - i; n < width; n++ {
		h = fakepartner.KeyHashByte(h, '0')
	}
	for ; i < len(digits); i++ {
		h = fakepartner.KeyHashByte(h, digits[i])
	}
	return fakepartner.KeyHashByte(h, ':')
}

// pump starts everything the dispatcher wants to start at t, then makes
// sure a wake-up is scheduled for the next delayed delivery.
func (r *simRun) pump(t int64) {
	if r.down {
		return
	}
	now := r.unixNs(t)
	for {
		if r.prefetch {
			r.prefetchRing()
		}
		it, verdict, reason := r.core.Next(now)
		if it == nil {
			break
		}
		if verdict == dispatchcore.DeadLetter {
			r.deadLetter(t, it, reason, true)
			continue
		}
		r.start(t, it)
	}
	if r.heldHead < len(r.held) {
		r.feedSource(t)
	}
	if w, ok := r.core.NextWakeNs(); ok {
		wt := w - r.epoch0
		if wt < r.wakeAt {
			r.wakeAt = wt
			r.q.Push(wt, mkEvent(evWake, 0))
		}
	}
}

func (r *simRun) start(t int64, it *dispatchcore.Item) {
	sub := &r.subs[it.Partner]
	var call fakepartner.Call
	sub.partner.BeginDrawTo(&call, time.Duration(t), refDraw(it))
	timeout := int64(r.d.Dispatcher.AttemptTimeout.D)
	slot := takeFree(&r.slots, &r.freeSlots)
	end := t + int64(call.Latency)
	timedOut := call.NoAnswer || int64(call.Latency) > timeout
	if timedOut {
		end = t + timeout
		if call.NeedsFinish() {
			r.lateWrite(t+int64(call.Latency), it, call)
		}
	}
	f := &r.slots[slot]
	*f = inflight{it: it, started: t, status: int32(call.Result.Status), kind: call.Result.Kind, timedOut: timedOut,
		processed: call.Processed, ackLost: call.AckLost, noAnswer: call.NoAnswer, full: -1}
	if call.NeedsFinish() || call.Result.RetryAfter != "" || int(f.status) != call.Result.Status {
		f.full = r.keepCall(&call)
	}
	f.epoch = r.epoch
	r.tally.AttemptStarted(time.Duration(t), int(it.Partner), int(it.Attempts))
	if len(r.replayOf) > 0 {
		if rp, ok := r.replayOf[it]; ok {
			r.tally.ReplayAttempt(int(rp))
		}
	}
	ev := mkEvent(evComplete, slot).withEpoch(r.epoch)
	ev.sub, ev.item = it.Partner, noItemIndex
	if r.prefetch {
		ev.item = r.items.index(it)
	}
	r.q.Push(end, ev)
}

func (r *simRun) complete(t int64, ev simEvent) {
	f := &r.slots[ev.slot]
	it := f.it
	if it == nil || ev.epoch() != f.epoch {
		return // the attempt was lost in a restart
	}
	var o model.Outcome
	processed, ackLost := f.processed, f.ackLost
	if f.full >= 0 {
		call := &r.calls[f.full]
		if f.timedOut {
			o.Err = model.ErrTimeout
		} else if call.NeedsFinish() {
			res := r.subs[it.Partner].partner.Finish(call, time.Duration(t))
			o = outcomeOf(res)
		} else {
			o = outcomeOf(call.Result)
		}
		processed, ackLost = call.Processed, call.AckLost
		r.dropCall(f.full)
	} else if f.timedOut {
		o.Err = model.ErrTimeout
	} else {
		// Finish would return the planned result; skipping it spares a
		// cache miss on the subscriber's state per attempt.
		o = outcomeOf(fakepartner.Result{Status: int(f.status), Kind: f.kind})
	}
	// A success the caller did not see, hidden by the timeout or dropped
	// by the partner (lost-ack): the partner has the delivery, and saw a
	// duplicate if it had it already.
	if hidden := processed && (f.timedOut || ackLost); hidden {
		if accepted(it) {
			r.tally.Duplicates(1)
		}
		setAccepted(it)
		if !f.timedOut {
			r.tally.LostAck()
		}
	}
	f.it = nil
	r.freeSlots = append(r.freeSlots, ev.slot)
	// The tally classifies with the drill's policy, as the core does.
	cl := r.tally.AttemptEnded(time.Duration(t), int(it.Partner), o)
	if cl == model.ClassSuccess {
		if accepted(it) {
			r.tally.Duplicates(1)
		}
		setAccepted(it)
	}
	dec := r.core.CompleteClass(it, o, cl, r.unixNs(t), seed.Float64(&r.jitter))
	if dec.RetryAfterIgnored {
		r.tally.RetryAfterIgnored()
	}
	switch dec.Action {
	case model.ActAck:
		created := time.Duration(it.FirstSeen - r.epoch0)
		var rp int32
		replayed := false
		if len(r.replayOf) > 0 {
			rp, replayed = r.replayOf[it]
		}
		if replayed {
			delete(r.replayOf, it)
			r.tally.ReplayDelivered(int(rp), time.Duration(t), int(it.Partner), created)
		} else {
			r.tally.Delivered(time.Duration(t), int(it.Partner), created)
		}
		r.terminal(it)
	case model.ActDeadLetter:
		r.deadLetter(t, it, dec.Reason, false)
	case model.ActReschedule:
		if r.outageSpread {
			r.tally.RetryScheduled(time.Duration(t), int(it.Partner), int(it.Attempts), time.Duration(it.RunAt-r.unixNs(t)), r.pol.Backoff.Capped(int(it.Attempts)))
		}
	}
}

func outcomeOf(res fakepartner.Result) model.Outcome { return res.Outcome() }

func (r *simRun) deadLetter(t int64, it *dispatchcore.Item, reason model.Reason, noAttempt bool) {
	created := time.Duration(it.FirstSeen - r.epoch0)
	if rp, ok := r.replayOf[it]; ok {
		delete(r.replayOf, it)
		r.tally.ReplayDeadLettered(int(rp), time.Duration(t), int(it.Partner), created, string(reason))
	} else {
		r.tally.DeadLettered(time.Duration(t), int(it.Partner), created, string(reason))
	}
	if r.keepDead(it, reason) {
		return // in the DLQ a replay reads; not pooled
	}
	r.terminal(it)
}

// terminal returns the item of a delivery that reached delivered or
// dead-lettered to the pool.
func (r *simRun) terminal(it *dispatchcore.Item) {
	if len(r.writeRefs) > 0 {
		if ref, ok := r.writeRefs[it]; ok {
			ref.terminal = true // pooled when its last late write lands
			r.writeRefs[it] = ref
			return
		}
	}
	r.release(it)
}

// release returns an item to the arena, for newItem to reuse.
func (r *simRun) release(it *dispatchcore.Item) { r.items.put(it) }

// keepCall keeps a copy of call for a slot (inflight.full) and returns its
// index in r.calls.
func (r *simRun) keepCall(call *fakepartner.Call) int32 {
	c := takeFree(&r.calls, &r.freeCalls)
	r.calls[c] = *call
	return c
}

// takeFree returns the index of a free element of *items: the last one
// freed (its index appended to *free), else a new one at the end.
func takeFree[T any](items *[]T, free *[]int32) int32 {
	if n := len(*free); n > 0 {
		i := (*free)[n-1]
		*free = (*free)[:n-1]
		return i
	}
	var zero T
	*items = append(*items, zero)
	return int32(len(*items) - 1)
}

// dropCall frees r.calls[c].
func (r *simRun) dropCall(c int32) {
	r.calls[c] = fakepartner.Call{}
	r.freeCalls = append(r.freeCalls, c)
}

// lateWrite schedules a contended call's write, at drill time at, for a
// caller that no longer waits for it.
func (r *simRun) lateWrite(at int64, it *dispatchcore.Item, call fakepartner.Call) {
	var w int32
	if n := len(r.freeWrites); n > 0 {
		w = r.freeWrites[n-1]
		r.freeWrites = r.freeWrites[:n-1]
	} else {
		w = int32(len(r.writes))
		r.writes = append(r.writes, lateWrite{})
	}
	r.writes[w] = lateWrite{it: it, call: call}
	if r.writeRefs == nil {
		r.writeRefs = map[*dispatchcore.Item]writeRef{}
	}
	ref := r.writeRefs[it]
	ref.n++
	r.writeRefs[it] = ref
	r.writesLate++
	r.q.Push(at, mkEvent(evWrite, w))
}

// landWrite finishes a late write at t. If it succeeds the partner has
// accepted the delivery: a later success is a duplicate, and so is this one
// if the delivery was accepted before.
func (r *simRun) landWrite(t int64, w int32) {
	lw := &r.writes[w]
	it := lw.it
	r.subs[it.Partner].partner.Finish(&lw.call, time.Duration(t))
	if lw.call.Processed {
		if accepted(it) {
			r.tally.Duplicates(1)
		}
		setAccepted(it)
	}
	*lw = lateWrite{}
	r.freeWrites = append(r.freeWrites, w)
	r.writesLate--
	ref := r.writeRefs[it]
	if ref.n--; ref.n > 0 {
		r.writeRefs[it] = ref
		return
	}
	delete(r.writeRefs, it)
	if ref.terminal {
		r.release(it)
	}
}

// goDown carries out a restart fault: the dispatcher stops; a hard restart
// loses the attempts in flight, whose deliveries come back when their
// leases expire.
func (r *simRun) goDown(t int64, i int) {
	f := r.d.Faults[i]
	graceful := f.Graceful()
	var inFlight int64
	if !graceful {
		r.epoch++ // completions of the lost attempts will be discarded
		lease := int64(r.d.Dispatcher.LeaseTimeout.D)
		back := max(t+lease, t+int64(f.Down.D))
		for s := range r.slots {
			fl := &r.slots[s]
			if fl.it == nil {
				continue
			}
			it := fl.it
			processed, noAnswer := fl.processed, fl.noAnswer
			if fl.full >= 0 {
				call := &r.calls[fl.full]
				processed, noAnswer = call.Processed, call.NoAnswer
				if call.NeedsFinish() && !fl.timedOut { // a timed-out one has its late write already
					r.lateWrite(fl.started+int64(call.Latency), it, *call)
				}
				r.dropCall(fl.full)
				fl.full = -1
			}
			// The partner carries on with the request it already has.
			if processed && !noAnswer {
				setAccepted(it)
			}
			fl.it = nil
			r.freeSlots = append(r.freeSlots, int32(s))
			r.core.Abandon(it, r.unixNs(back), r.unixNs(t))
			inFlight++
		}
	} else {
		inFlight = int64(r.core.InFlight())
	}
	r.tally.Restart(reports.Restart{AtS: float64(t) / 1e9, DownS: f.Down.D.Seconds(), Graceful: graceful, InFlight: inFlight})
	r.down = true
	r.q.Push(t+int64(f.Down.D), mkEvent(evUp, int32(i)))
}

// eachHeld calls fn(subscriber, deliveries) for the deliveries the source
// still holds back (on_full = "block"): the rest of the head event's, and
// every later held event's.
func (r *simRun) eachHeld(fn func(si int32, n int64)) {
	held := len(r.held) - r.heldHead
	if held <= 0 {
		return
	}
	if r.fan.All() {
		for k, si := range r.fanout {
			n := int64(held)
			if k < r.heldSub {
				n-- // the head event already enqueued this one
			}
			if n > 0 {
				fn(si, n)
			}
		}
		return
	}
	first := r.events // the head event's number
	for j := 0; j < held; j++ {
		picks := r.fan.Pick(first+int64(j), r.heldBuf)
		r.heldBuf = picks
		if j == 0 {
			picks = picks[min(r.heldSub, len(picks)):]
		}
		for _, si := range picks {
			fn(si, 1)
		}
	}
}

// heldDeliveries is how many deliveries the source holds back; past the
// head event it takes the mean fan-out for shapes that vary per event,
// since it is sampled often and the exact count costs a pick per event.
func (r *simRun) heldDeliveries() float64 {
	held := len(r.held) - r.heldHead
	if held <= 0 {
		return 0
	}
	if r.fan.All() {
		return float64(held*len(r.fanout) - r.heldSub)
	}
	head := r.fan.Degree(r.events) - r.heldSub
	return float64(max(head, 0)) + float64(held-1)*r.d.FanoutMean()
}
