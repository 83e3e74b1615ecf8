package dispatchcore

import (
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stormdrill/stormdrill/model"
)

type itemState uint8

const (
	stQueued itemState = iota + 1
	stInFlight
	stDone
)

// propWorld drives a Core with random offers, completions, restarts and
// time steps, and keeps its own account of every delivery to check the
// core against.
type propWorld struct {
	t        *testing.T
	rng      *rand.Rand
	c        *Core
	pcs      []PartnerConfig
	guards   func(p int) (*model.Breaker, *model.Budget)
	workers  int
	now      time.Time
	state    map[*Item]itemState
	inFlight []*Item
	next     int
	done     int
}

// pump calls Next until it returns nil, checking each answer.
func (w *propWorld) pump() {
	for {
		it, v, reason := w.c.Next(w.now.UnixNano())
		if it == nil {
			break
		}
		if it.RunAt > w.now.UnixNano() {
			w.t.Fatalf("Next at %v returned delivery %d due at %v", w.now.Sub(t0), it.Ref, time.Unix(0, it.RunAt).Sub(t0))
		}
		if w.state[it] != stQueued {
			w.t.Fatalf("Next returned delivery %d in state %d, want queued", it.Ref, w.state[it])
		}
		switch v {
		case Start:
			w.state[it] = stInFlight
			w.inFlight = append(w.inFlight, it)
		case DeadLetter:
			if reason != model.ReasonCircuitOpen && reason != model.ReasonBudgetExhausted {
				w.t.Fatalf("Next dead-lettered delivery %d with reason %q", it.Ref, reason)
			}
			w.finish(it)
		}
	}
}

func (w *propWorld) finish(it *Item) {
	if w.state[it] == stDone {
		w.t.Fatalf("delivery %d ended twice", it.Ref)
	}
	w.state[it] = stDone
	w.done++
}

func (w *propWorld) offer(runAt time.Time) {
	p := int32(w.rng.IntN(len(w.pcs)))
	it := &Item{Ref: uint64(w.next), Partner: p, FirstSeen: w.now.UnixNano(), RunAt: runAt.UnixNano()}
	w.next++
	if err := w.c.Offer(it, w.now.UnixNano()); err != nil {
		if !errors.Is(err, ErrQueueFull) || !w.c.Full() {
			w.t.Fatalf("Offer: %v (Full %v, Queued %d)", err, w.c.Full(), w.c.Queued())
		}
		return
	}
	w.state[it] = stQueued
}

func (w *propWorld) complete(i int, o model.Outcome) {
	it := w.inFlight[i]
	w.inFlight[i] = w.inFlight[len(w.inFlight)-1]
	w.inFlight = w.inFlight[:len(w.inFlight)-1]
	dec := w.c.Complete(it, o, w.now.UnixNano(), w.rng.Float64())
	switch dec.Action {
	case model.ActReschedule:
		if dec.RunAt.Before(w.now) {
			w.t.Fatalf("delivery %d rescheduled into the past", it.Ref)
		}
		w.state[it] = stQueued
	default:
		w.finish(it)
	}
}

// restart is a dispatcher crash: attempts in flight are abandoned (due
// again after a lease) and the new process starts with fresh guards.
func (w *propWorld) restart() {
	for _, it := range w.inFlight {
		w.c.Abandon(it, w.now.Add(time.Second).UnixNano(), w.now.UnixNano())
		w.state[it] = stQueued
	}
	w.inFlight = w.inFlight[:0]
	for p := range w.pcs {
		b, bud := w.guards(p)
		w.c.SetGuards(p, b, bud, w.now.UnixNano())
	}
}

// check asserts the invariants that hold between steps.
func (w *propWorld) check(full bool) {
	c := w.c
	if c.InFlight() != len(w.inFlight) || c.InFlight() > w.workers {
		w.t.Fatalf("InFlight %d (tracked %d), workers %d", c.InFlight(), len(w.inFlight), w.workers)
	}
	per := map[int32]int{}
	for _, it := range w.inFlight {
		per[it.Partner]++
	}
	for p, n := range per {
		if lim := w.pcs[p].Concurrency; lim > 0 && n > lim {
			w.t.Fatalf("partner %d has %d in flight, limit %d", p, n, lim)
		}
	}
	// Liveness: a partner with queued deliveries and nothing in flight
	// will get no completion, so it must wait on a timer or in the ring;
	// parked as blocked it would wait for ever.
	for i := range c.partners {
		p := &c.partners[i]
		if p.head.it != nil && p.inFlight == 0 && p.park != parkTimer && p.park != parkRing {
			w.t.Fatalf("partner %s is stuck: %d queued, none in flight, park state %d", w.pcs[i].Name, 1+len(p.q), p.park)
		}
	}
	// Work conservation for the partners without guards: a free worker
	// and a due delivery of theirs cannot both remain after pumping.
	if !full {
		return
	}
	queued := 0
	for _, s := range w.state {
		if s == stQueued {
			queued++
		}
	}
	seen := 0
	c.Each(func(partner int32, first int64, it *Item) {
		seen++
		if it == nil || it.Partner != partner || it.FirstSeen != first {
			w.t.Fatalf("Each visits partner %d, first seen %d, item %+v: want the item's own", partner, first, it)
		}
		if w.state[it] != stQueued {
			w.t.Fatalf("Each visits delivery %d in state %d", it.Ref, w.state[it])
		}
		free := c.InFlight() < w.workers
		pc := w.pcs[it.Partner]
		if free && pc.Breaker == nil && pc.Budget == nil && (pc.Concurrency == 0 || per[it.Partner] < pc.Concurrency) && it.RunAt <= w.now.UnixNano() {
			w.t.Fatalf("worker free but delivery %d of unguarded partner %d is due and waiting", it.Ref, it.Partner)
		}
	})
	if seen != queued || c.Queued() != queued {
		w.t.Fatalf("Each saw %d, Queued %d, tracked queued %d", seen, c.Queued(), queued)
	}
	st := c.Snapshot(w.now)
	if st.Ready+st.Delayed != queued || st.InFlight != len(w.inFlight) {
		w.t.Fatalf("snapshot %+v does not add up to %d queued, %d in flight", st, queued, len(w.inFlight))
	}
}

// TestRandomizedInvariants steps the core with random offers, completions,
// restarts and time steps from a fixed seed and checks, after every step,
// the worker and per-partner bounds and that Next never returns a delivery
// before its RunAt; at the end every delivery has ended exactly once or is
// still queued or in flight, and once partners recover everything drains.
func TestRandomizedInvariants(t *testing.T) {
	pol := &model.Policy{MaxAttempts: 4, Backoff: model.Backoff{Base: 50 * time.Millisecond, Cap: time.Second, Jitter: model.JitterEqual}}
	polDL := *pol
	polDL.OnOpenDeadLetter, polDL.OnExhaustedDeadLetter = true, true
	bs := model.BreakerSettings{Trip: model.TripConsecutive, Threshold: 3, Cooldown: 2 * time.Second, Probes: 1}
	pcs := []PartnerConfig{
		{Name: "plain", Policy: pol},
		{Name: "limited", Policy: pol, Concurrency: 2},
		{Name: "breaker-hold", Policy: pol},
		{Name: "breaker-dead-letter", Policy: &polDL},
		{Name: "budget-defer", Policy: pol, Concurrency: 1},
		{Name: "breaker-budget-hold", Policy: pol, Concurrency: 3},
		{Name: "breaker-budget-dead-letter", Policy: &polDL},
	}
	guards := func(p int) (*model.Breaker, *model.Budget) {
		var b *model.Breaker
		var bud *model.Budget
		if p == 2 || p == 3 || p == 5 || p == 6 {
			b = model.NewBreaker(bs)
		}
		switch p {
		case 4, 5:
			bud = model.NewBudget(5, 0.5)
		case 6:
			bud = model.NewBudget(2, 0.5) // refuses retries after one failure
		}
		return b, bud
	}
	for p := range pcs {
		pcs[p].Breaker, pcs[p].Budget = guards(p)
	}
	const workers = 4
	c := mustNew(t, Config{Workers: workers, QueueCapacity: 60, Partners: pcs})
	w := &propWorld{t: t, rng: rand.New(rand.NewPCG(2026, 11)), c: c, pcs: pcs, guards: guards, workers: workers, now: t0, state: map[*Item]itemState{}}

	const steps = 20_000
	for step := range steps {
		sick := step < steps/2 && (step/2000)%2 == 0 // partners fail in phases
		switch r := w.rng.IntN(100); {
		case r < 35:
			w.offer(w.now.Add(time.Duration(w.rng.IntN(1000)-200) * time.Millisecond))
		case r < 70:
			if len(w.inFlight) > 0 {
				o := ok200
				switch u := w.rng.Float64(); {
				case sick && u < 0.7, u < 0.2:
					o = fail
				case u < 0.25:
					o = reject
				}
				w.complete(w.rng.IntN(len(w.inFlight)), o)
			}
		case r < 97:
			if wake, ok := c.NextWake(); ok && w.rng.IntN(2) == 0 {
				if wake.Before(w.now) {
					t.Fatalf("NextWake %v is before now %v", wake.Sub(t0), w.now.Sub(t0))
				}
				w.now = wake
			} else {
				w.now = w.now.Add(time.Duration(w.rng.IntN(300)) * time.Millisecond)
			}
		default:
			w.restart()
		}
		w.pump()
		w.check(step%50 == 0)
	}
	if w.done < steps/10 {
		t.Fatalf("only %d deliveries ended in %d steps: the run did not exercise the core", w.done, steps)
	}

	// Recovery: every attempt succeeds; the budget-deferring partners get
	// fresh first attempts, whose successes refill their buckets.
	for i := 0; i < 100_000 && (c.Queued() > 0 || len(w.inFlight) > 0); i++ {
		for len(w.inFlight) > 0 {
			w.complete(len(w.inFlight)-1, ok200)
		}
		w.now = w.now.Add(100 * time.Millisecond)
		if wake, ok := c.NextWake(); ok && wake.After(w.now) {
			w.now = wake
		}
		if c.Queued() > 0 && i%10 == 0 {
			it := &Item{Ref: 1<<32 | uint64(i), Partner: int32(4 + i/10%2), FirstSeen: w.now.UnixNano(), RunAt: w.now.UnixNano()}
			if c.Offer(it, w.now.UnixNano()) == nil {
				w.state[it] = stQueued
			}
		}
		w.pump()
		w.check(i%50 == 0)
	}
	w.check(true)
	for it, s := range w.state {
		if s != stDone {
			t.Errorf("delivery %d (partner %d, %d attempts) still in state %d after recovery", it.Ref, it.Partner, it.Attempts, s)
		}
	}
	if w.done != len(w.state) {
		t.Errorf("%d of %d deliveries ended", w.done, len(w.state))
	}
}
