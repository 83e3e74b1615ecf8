package dispatchcore

import (
	"errors"
	"math"
	"strconv"
	"time"

	"github.com/stormdrill/stormdrill/model"
)

// Item is one delivery inside the dispatcher. The caller allocates it and
// gets the same pointer back from Next and passes it to Complete.
//
// It is 48 bytes: a simulation holds millions of them pending, and what it
// spends on each is most of its memory (and, past the caches, of its
// time). What only the caller needs of a delivery (its id, its payload,
// where its attempt runs) lives with the caller, not here; Ref is the one
// word the caller keeps on it.
type Item struct {
	RunAt     int64           // unix ns: not before this
	FirstSeen int64           // unix ns: when the event was created (scheduled)
	PrevDelay time.Duration   // the last backoff delay; read when an attempt fails
	Ref       uint64          // caller-owned: the core neither reads nor writes it
	Partner   int32           // index into Config.Partners
	Attempts  int32           // attempts made so far, including one in flight
	gen       uint32          // low bits of the breaker generation that admitted the attempt in flight (see widenGen)
	JitterKey model.JitterKey // the delivery id as hash jitter reads it (model.JitterKeyOf)
}

// widenGen is the breaker generation whose low 32 bits are low, at most
// cur: the generation that admitted an attempt, from the bits the item
// keeps, while fewer than 2^32 transitions happen during the attempt.
func widenGen(cur uint64, low uint32) uint64 { return cur - uint64(uint32(cur)-low) }

// Delivery returns the policy's view of the item.
func (it *Item) Delivery() model.Delivery {
	return model.Delivery{JitterKey: it.JitterKey, Attempts: int(it.Attempts), FirstSeen: time.Unix(0, it.FirstSeen), PrevDelay: it.PrevDelay}
}

// PartnerConfig is one partner endpoint (a subscriber).
type PartnerConfig struct {
	Name    string
	Policy  *model.Policy
	Breaker *model.Breaker // nil: no breaker
	Budget  *model.Budget  // nil: no budget; may be shared between partners (global scope)
	// Concurrency limits attempts in flight to this partner; 0: no limit.
	Concurrency int
}

// Config is the dispatcher's shape.
type Config struct {
	Workers       int // global worker slots; must be ≥ 1
	QueueCapacity int // queued deliveries (not in flight) Offer accepts; 0: no limit
	Partners      []PartnerConfig
	// Fresh makes the item of a delivery queued with OfferFresh, once it
	// is the partner's next: runAt (when it is due, and was first seen)
	// and tok as OfferFresh was given them. It must return a new item
	// with Partner partner, RunAt and FirstSeen runAt, no attempt made;
	// what else it sets is the caller's. nil: OfferFresh refuses.
	Fresh func(partner int32, runAt int64, tok uint32) *Item
	// State, if not nil, is where the core keeps the partners' state,
	// State[i] for Partners[i]; it must be as long as Partners and
	// zero. A caller that places the state in memory of its choosing
	// passes it; nil: New allocates it.
	State []PartnerState
}

// ErrQueueFull is returned by Offer when the queue is at capacity.
var ErrQueueFull = errors.New("queue full")

// errNoFresh is OfferFresh's error for a core without Config.Fresh.
var errNoFresh = errors.New("dispatch: OfferFresh needs Config.Fresh")

// where a partner is parked.
const (
	parkNone    uint8 = iota // no queued items
	parkRing                 // head is due: in the round-robin ring
	parkTimer                // waiting for a time: in the timer heap
	parkBlocked              // due, but waits for one of its own attempts to end
)

// PartnerState is one partner's state inside the core (see Config.State);
// its fields are the core's own. The name lives only in the Config.
//
// Its earliest queued delivery is kept here, in head, and only the others
// in fifo and q: at thousands of partners most have one delivery queued at
// a time, if any, so an attempt reads and writes no queue of theirs.
type PartnerState struct {
	head        heapEntry // the earliest queued delivery; head.it nil: none
	fifo        fifo      // other fresh deliveries (OfferFresh), in due order, with no item yet
	q           itemHeap  // the other queued deliveries
	wakeAt      int64     // parkTimer: when
	breaker     *model.Breaker
	budget      *model.Budget
	policy      *model.Policy
	inFlight    int32
	concurrency int32 // 0: no limit
	timerIdx    int32
	park        uint8
}

// partner is the core's own name for a PartnerState.
type partner = PartnerState

// pushItem queues it on p; seq orders it after the items of the same
// RunAt queued before it.
func (c *Core) pushItem(p *partner, it *Item, seq uint64) {
	e := heapEntry{runAt: it.RunAt, seq: seq, it: it}
	switch {
	case p.head.it == nil:
		p.head = e
	case e.less(&p.head):
		p.q.push(p.head)
		p.head = e
	default:
		p.q.push(e)
	}
}

// pushFresh queues fresh delivery tok of partner i, due at runAt, with
// seq, larger than any queued one's. It joins i's fifo, with no item, if
// it is not i's next and i has a backlog (fifoFrom in q, or a fifo
// already): a partner with a few queued keeps them in q, whose entries sit
// in the partner's own array, where a fifo would take a chunk from the
// spare list, a cache miss more an attempt at tens of thousands of
// partners. Otherwise its item is made now.
func (c *Core) pushFresh(i int, runAt int64, seq uint64, tok uint32) {
	p := &c.partners[i]
	if p.head.it != nil && runAt >= p.head.runAt && (p.fifo.n > 0 || len(p.q) >= fifoFrom) && p.fifo.fits(runAt, seq) {
		p.fifo.push(runAt, seq, tok, &c.spare)
		return
	}
	c.pushItem(p, c.fresh(int32(i), runAt, tok), seq)
}

// popItem takes partner i's head item off its queue: the next head is the
// earlier of its fifo's front, whose item is made now, and its heap's top.
func (c *Core) popItem(i int) {
	p := &c.partners[i]
	if p.fifo.n > 0 {
		runAt, seq, tok := p.fifo.front()
		e := heapEntry{runAt: runAt, seq: seq}
		if len(p.q) == 0 || e.less(&p.q[0]) {
			p.fifo.pop(&c.spare)
			e.it = c.fresh(int32(i), runAt, tok)
			p.head = e
			return
		}
	}
	if len(p.q) > 0 {
		p.head = p.q.pop()
		if len(p.q) == 0 && cap(p.q) > 64 {
			p.q = nil // a backlog's array, empty now: let it go
		}
		return
	}
	p.head = heapEntry{}
}

// eachQueued calls fn for every delivery queued on p, with the time it is
// due and the time it was first seen; it is nil for a fresh delivery whose
// item is not made yet.
func (p *partner) eachQueued(fn func(runAt, firstSeen int64, it *Item)) {
	if p.head.it == nil {
		return
	}
	fn(p.head.runAt, p.head.it.FirstSeen, p.head.it)
	for k := range p.q {
		fn(p.q[k].runAt, p.q[k].it.FirstSeen, p.q[k].it)
	}
	p.fifo.each(func(runAt int64) { fn(runAt, runAt, nil) })
}

// fifoFrom is how many deliveries a partner's heap holds before fresh
// ones go to its fifo: fewer leaves more of a backlog without items,
// more spares a partner with a few queued the fifo chunk's cache miss.
const fifoFrom = 4

// Core is the sans-I/O dispatcher. It is not safe for concurrent use.
//
// The calls that step it (Offer, OfferFresh, Requeue, Next, Complete,
// CompleteClass, Abandon, SetGuards) take the time as Unix nanoseconds,
// as the core keeps it: a simulation makes several of them an attempt, and
// building a time.Time for each and taking it apart again (with the
// policy's call for every success, see CompleteClass) cost 166 of the
// 2,510 instructions of an attempt at 2,000 subscribers. The core builds
// one only for the breaker and the policy, when they need it.
type Core struct {
	workers  int
	capacity int
	busy     int
	queued   int
	seq      uint64
	partners []partner
	fresh    func(partner int32, runAt int64, tok uint32) *Item // Config.Fresh

	spare     *fifoChunk // free fifo chunks
	ring      []int32    // round-robin ring of partners with due work (FIFO)
	ringHead  int
	timers    timerHeap
	Deferrals int64 // retries held back because the budget refused them
}

// New returns a dispatcher core.
func New(cfg Config) (*Core, error) {
	if cfg.Workers < 1 {
		return nil, errors.New("dispatch: workers must be at least 1")
	}
	c := &Core{workers: cfg.Workers, capacity: cfg.QueueCapacity, partners: cfg.State, fresh: cfg.Fresh}
	if c.partners == nil {
		c.partners = make([]PartnerState, len(cfg.Partners))
	} else if len(c.partners) != len(cfg.Partners) {
		return nil, errors.New("dispatch: state for " + strconv.Itoa(len(c.partners)) + " partners, want " + strconv.Itoa(len(cfg.Partners)))
	}
	for i, pc := range cfg.Partners {
		if pc.Policy == nil {
			return nil, errors.New("dispatch: partner " + pc.Name + " has no policy")
		}
		if pc.Concurrency < 0 || pc.Concurrency > math.MaxInt32 {
			return nil, errors.New("dispatch: partner " + pc.Name + ": concurrency out of range")
		}
		c.partners[i] = partner{breaker: pc.Breaker, budget: pc.Budget, policy: pc.Policy, concurrency: int32(pc.Concurrency), timerIdx: -1}
	}
	c.timers.c = c
	return c, nil
}

// Queued is the number of deliveries waiting (due or delayed).
func (c *Core) Queued() int { return c.queued }

// InFlight is the number of attempts in flight.
func (c *Core) InFlight() int { return c.busy }

// Full reports whether Offer would refuse a delivery now.
func (c *Core) Full() bool { return c.capacity > 0 && c.queued >= c.capacity }

// Breaker returns partner p's breaker (nil if none).
func (c *Core) Breaker(p int) *model.Breaker { return c.partners[p].breaker }

// Budget returns partner p's retry budget (nil if none).
func (c *Core) Budget(p int) *model.Budget { return c.partners[p].budget }

// SetGuards replaces partner p's breaker and budget, as a restarted
// dispatcher process would start with fresh ones.
func (c *Core) SetGuards(p int, b *model.Breaker, bud *model.Budget, now int64) {
	c.partners[p].breaker = b
	c.partners[p].budget = bud
	c.unpark(p)
	c.place(p, now)
}

// Head is the delivery partner p would start next (its earliest queued
// one), or nil.
func (c *Core) Head(p int32) *Item { return c.partners[p].head.it }

// Offer queues a new delivery, due at it.RunAt. It refuses with ErrQueueFull
// at capacity; the caller decides between back-pressure and dead-lettering.
func (c *Core) Offer(it *Item, now int64) error {
	if c.Full() {
		return ErrQueueFull
	}
	c.push(it, now)
	return nil
}

// OfferFresh is Offer for a new delivery of partner due at runAt, first
// seen then, whose item Config.Fresh makes (from partner, runAt and tok)
// only once it is the partner's next: until then it takes 16 bytes of its
// partner's fifo, and a backlog of fresh deliveries costs no item each.
// The order of the deliveries is the one Offer gives.
func (c *Core) OfferFresh(partner int32, runAt int64, tok uint32, now int64) error {
	if c.fresh == nil {
		return errNoFresh
	}
	if c.Full() {
		return ErrQueueFull
	}
	c.seq++
	c.pushFresh(int(partner), runAt, c.seq, tok)
	c.enqueued(int(partner), now)
	return nil
}

// Requeue puts back a delivery that is already inside the pipeline (a lost
// attempt, a replay) regardless of capacity.
func (c *Core) Requeue(it *Item, now int64) { c.push(it, now) }

func (c *Core) push(it *Item, now int64) {
	c.seq++
	c.pushItem(&c.partners[it.Partner], it, c.seq)
	c.enqueued(int(it.Partner), now)
}

// enqueued counts the delivery just queued on partner i with seq c.seq,
// and places i if that delivery is its next or i is parked nowhere.
func (c *Core) enqueued(i int, now int64) {
	c.queued++
	if p := &c.partners[i]; p.head.seq == c.seq || p.park == parkNone {
		c.place(i, now)
	}
}

// place parks partner i where its head item says it belongs.
func (c *Core) place(i int, now int64) {
	p := &c.partners[i]
	if p.head.it == nil {
		c.unpark(i)
		return
	}
	if p.concurrency > 0 && p.inFlight >= p.concurrency {
		c.unpark(i)
		p.park = parkBlocked
		return
	}
	wake := p.head.runAt
	if b := p.breaker; b != nil && !b.Closed() { // a closed breaker stays closed whatever the time
		switch b.State(time.Unix(0, now)) {
		case model.StateOpen:
			if !p.policy.OnOpenDeadLetter {
				wake = max(wake, b.OpenUntil().UnixNano())
			}
		case model.StateHalfOpen:
			if p.inFlight > 0 && !p.policy.OnOpenDeadLetter {
				// Probes are out; wait for their results.
				c.unpark(i)
				p.park = parkBlocked
				return
			}
		}
	}
	if wake <= now {
		if p.park != parkRing {
			c.unpark(i)
			p.park = parkRing
			c.ring = append(c.ring, int32(i))
		}
		return
	}
	if p.park == parkTimer {
		p.wakeAt = wake
		c.timers.fix(int(p.timerIdx))
		return
	}
	c.unpark(i)
	p.park, p.wakeAt = parkTimer, wake
	c.timers.push(i)
}

func (c *Core) unpark(i int) {
	p := &c.partners[i]
	switch p.park {
	case parkTimer:
		c.timers.remove(int(p.timerIdx))
	case parkRing:
		// Left in the ring; Next skips entries whose partner is no longer
		// parked there.
	}
	p.park = parkNone
}

// Verdict says what Next wants done with the item it returns.
type Verdict uint8

const (
	Start      Verdict = iota // make an attempt now
	DeadLetter                // dead-letter without an attempt (Reason says why)
)

// Next returns the next delivery to act on at now, or nil when nothing can
// start: no free worker, or nothing due. Call it until it returns nil after
// every arrival, completion and wake-up.
func (c *Core) Next(now int64) (*Item, Verdict, model.Reason) {
	for c.timers.Len() > 0 && c.partners[c.timers.h[0]].wakeAt <= now {
		i := c.timers.h[0]
		c.timers.remove(0)
		c.partners[i].park = parkNone
		c.place(i, now)
	}
	for c.busy < c.workers && c.ringHead < len(c.ring) {
		i := int(c.ring[c.ringHead])
		c.ringHead++
		if c.ringHead > 1024 && c.ringHead*2 > len(c.ring) {
			c.ring = append(c.ring[:0], c.ring[c.ringHead:]...)
			c.ringHead = 0
		}
		p := &c.partners[i]
		if p.park != parkRing {
			continue // stale entry
		}
		p.park = parkNone
		if p.head.runAt > now {
			c.place(i, now)
			continue
		}
		if p.concurrency > 0 && p.inFlight >= p.concurrency {
			p.park = parkBlocked
			continue
		}
		it := p.head.it
		var gen uint64
		bud := p.budget
		refused := bud != nil && it.Attempts > 0 && !bud.AllowRetry()
		// A retry the budget refuses makes no attempt, so it must not take
		// a half-open probe: the probe would never be recorded and the
		// partner would stay parked for good. An open breaker still decides.
		if b := p.breaker; b != nil && b.Closed() {
			// What Admit says of a closed breaker, at any time, without
			// building the time.
			gen = b.Generation()
		} else if b != nil {
			wall := time.Unix(0, now) // a breaker that is not closed reads the time
			if !refused || b.State(wall) == model.StateOpen {
				g, ok := b.Admit(wall)
				if !ok {
					if p.policy.OnOpenDeadLetter && b.State(wall) == model.StateOpen {
						c.popItem(i)
						c.queued--
						c.place(i, now)
						return it, DeadLetter, model.ReasonCircuitOpen
					}
					if b.State(wall) == model.StateHalfOpen {
						// Every probe is out: wait for a result.
						p.park = parkBlocked
						continue
					}
					c.place(i, now)
					continue
				}
				gen = g
			}
		}
		if refused {
			if p.policy.OnExhaustedDeadLetter {
				c.popItem(i)
				c.queued--
				c.place(i, now)
				return it, DeadLetter, model.ReasonBudgetExhausted
			}
			// Defer: spend no attempt, look again after the backoff delay.
			// It keeps its place among deliveries due at the same time.
			seq := p.head.seq
			c.popItem(i)
			d := it.PrevDelay
			if d <= 0 {
				d = max(p.policy.Backoff.Base, time.Millisecond)
			}
			it.RunAt = now + int64(d)
			c.pushItem(p, it, seq)
			c.Deferrals++
			c.place(i, now)
			continue
		}
		c.popItem(i)
		c.queued--
		it.gen = uint32(gen)
		it.Attempts++
		p.inFlight++
		c.busy++
		c.place(i, now)
		return it, Start, model.ReasonNone
	}
	return nil, Start, model.ReasonNone
}

// RingPos is where the round-robin ring stands: the index of its next
// entry and its length. Upcoming and UpcomingAt answer the same as long as
// RingPos does, so a caller that prefetches for the upcoming entries asks
// them again only when it has moved.
func (c *Core) RingPos() (head, n int) { return c.ringHead, len(c.ring) }

// Upcoming is the partner of the round-robin ring's entry after the next,
// which Next may act on after the delivery it returns now, or -1: a caller
// that keeps state of its own by partner can get it ready. The entry may
// turn out stale or blocked; it is only a hint.
func (c *Core) Upcoming() int32 { return c.UpcomingAt(1) }

// UpcomingAt is the partner of the ring's entry k after the one Next looks
// at first (UpcomingAt(1) is Upcoming), or -1; a hint as Upcoming is.
func (c *Core) UpcomingAt(k int) int32 {
	if h := c.ringHead + k; h < len(c.ring) {
		return c.ring[h]
	}
	return -1
}

// NextWake is the earliest time at which Next may have something new to do
// without an arrival or a completion; ok is false when there is none.
func (c *Core) NextWake() (t time.Time, ok bool) {
	ns, ok := c.NextWakeNs()
	if !ok {
		return time.Time{}, false
	}
	return time.Unix(0, ns), true
}

// NextWakeNs is NextWake in Unix nanoseconds.
func (c *Core) NextWakeNs() (ns int64, ok bool) {
	if c.timers.Len() == 0 {
		return 0, false
	}
	return c.partners[c.timers.h[0]].wakeAt, true
}

// Complete reports that it's attempt ended with o at now, records it on the
// partner's breaker and budget, and returns the policy's decision. For
// ActReschedule the item is queued again; for ActAck and ActDeadLetter it
// has left the dispatcher. u is the caller's uniform number for jitter.
func (c *Core) Complete(it *Item, o model.Outcome, now int64, u float64) model.Decision {
	return c.CompleteClass(it, o, c.partners[it.Partner].policy.Classifier.Classify(o), now, u)
}

// CompleteClass is Complete for a caller that has classified o already:
// cl must be what the partner's policy's classifier says of o. It builds
// a time.Time only for what needs one (the breaker's record, the policy's
// decision), and once: a success on a closed breaker needs none.
func (c *Core) CompleteClass(it *Item, o model.Outcome, cl model.Class, now int64, u float64) model.Decision {
	i := int(it.Partner)
	p := &c.partners[i]
	p.inFlight--
	c.busy--
	pol := p.policy
	success := cl == model.ClassSuccess
	// A success on a closed breaker takes its shortcut; anything else
	// needs Record. wall is built once, when the breaker or the policy
	// first needs it.
	var wall time.Time
	if b := p.breaker; b != nil {
		gen := widenGen(b.Generation(), it.gen)
		if !(success && b.RecordClosedSuccess(gen)) {
			wall = time.Unix(0, now)
			if success || b.Counts(o) {
				b.Record(gen, success, wall)
			} else {
				b.Ignore(gen, wall)
			}
		}
	}
	if bud := p.budget; bud != nil {
		if success {
			bud.RecordSuccess()
		} else {
			bud.RecordFailure()
		}
	}
	var dec model.Decision
	if success {
		dec = model.Acked() // DecideClass's for any success: spare building its arguments
	} else {
		if wall.IsZero() {
			wall = time.Unix(0, now)
		}
		dec = pol.DecideClass(cl, it.Delivery(), o, wall, u, model.Guards{Breaker: p.breaker, Budget: p.budget})
	}
	if dec.Action == model.ActReschedule {
		it.RunAt = dec.RunAt.UnixNano()
		it.PrevDelay = dec.Delay
		c.seq++
		c.pushItem(p, it, c.seq)
		c.queued++
	}
	c.place(i, now)
	return dec
}

// Abandon takes back an attempt whose result will never be known (the
// dispatcher died): the attempt slot is freed, nothing is recorded on the
// breaker or budget, and the delivery is due again at runAt (when its lease
// expires). The lost attempt still counts: the partner may have processed
// it, and the next attempt carries the next ordinal.
func (c *Core) Abandon(it *Item, runAt, now int64) {
	p := &c.partners[it.Partner]
	p.inFlight--
	c.busy--
	it.RunAt = runAt
	c.seq++
	c.pushItem(p, it, c.seq)
	c.queued++
	c.place(int(it.Partner), now)
}

// Stats is a snapshot of what is waiting.
type Stats struct {
	Ready, Delayed, InFlight int
	// Oldest ages (now − first seen) of a due delivery waiting for a worker
	// and of a delivery waiting out a delay or an open breaker; 0 if none.
	OldestReadyAge, OldestDelayedAge time.Duration
}

// Snapshot walks the queue. It costs O(queued); call it at the sampling
// interval, not per event.
func (c *Core) Snapshot(now time.Time) Stats { return c.SnapshotGroups(now, nil, nil) }

// SnapshotGroups is Snapshot that also finds, in the same walk, each
// partner group's oldest queued delivery: groups are runs of consecutive
// partners, group g from partner groupLo[g] up to groupLo[g+1], and
// oldest[g] (len(groupLo)-1 of them) gets the least FirstSeen of its
// queued deliveries, or 0 when it has none. Partners past the last group
// count in the Stats only. One walk reads each queued delivery once: at a
// backlog of many thousands, each read is a cache miss.
func (c *Core) SnapshotGroups(now time.Time, groupLo []int32, oldest []int64) Stats {
	n := now.UnixNano()
	s := Stats{InFlight: c.busy}
	var oldReady, oldDelayed int64 = n, n
	for g := range oldest {
		oldest[g] = 0
	}
	g := 0 // the group of partner i, while i is in one
	for i := range c.partners {
		p := &c.partners[i]
		if p.head.it == nil {
			continue
		}
		for g < len(oldest) && int32(i) >= groupLo[g+1] {
			g++
		}
		grouped := g < len(oldest) && int32(i) >= groupLo[g]
		// A breaker that is not closed holds the partner's deliveries: they
		// wait out the breaker, not a worker.
		held := false
		if b := p.breaker; b != nil && b.State(now) != model.StateClosed {
			held = true
		}
		groupOldest := int64(0)
		if grouped {
			groupOldest = oldest[g]
		}
		p.eachQueued(func(runAt, first int64, _ *Item) {
			if !held && runAt <= n {
				s.Ready++
				oldReady = min(oldReady, first)
			} else {
				s.Delayed++
				oldDelayed = min(oldDelayed, first)
			}
			if groupOldest == 0 || first < groupOldest {
				groupOldest = first
			}
		})
		if grouped {
			oldest[g] = groupOldest
		}
	}
	s.OldestReadyAge = time.Duration(n - oldReady)
	s.OldestDelayedAge = time.Duration(n - oldDelayed)
	return s
}

// Each calls f for every queued delivery (not those in flight): its
// partner, the time it was first seen, and its item, nil for a fresh
// delivery whose item is not made yet (OfferFresh).
func (c *Core) Each(f func(partner int32, firstSeen int64, it *Item)) {
	for i := range c.partners {
		c.partners[i].eachQueued(func(_, first int64, it *Item) { f(int32(i), first, it) })
	}
}
