package dispatchcore

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stormdrill/stormdrill/model"
)

// TestOfferFreshIsOffer drives two cores with the same random offers,
// completions, restarts and time steps: one is offered each new delivery
// as an item (Offer), the other as a fresh delivery whose item it makes
// when the delivery is its partner's next (OfferFresh). Every Next must
// return the same delivery, in the same state, with the same verdict, and
// the queues must look the same (Queued, NextWake, Snapshot, Each) after
// every step: a fresh backlog costs no item, and changes no order.
func TestOfferFreshIsOffer(t *testing.T) {
	pol := &model.Policy{MaxAttempts: 4, Backoff: model.Backoff{Base: 50 * time.Millisecond, Cap: time.Second, Jitter: model.JitterEqual}}
	polDL := *pol
	polDL.OnOpenDeadLetter, polDL.OnExhaustedDeadLetter = true, true
	bs := model.BreakerSettings{Trip: model.TripConsecutive, Threshold: 3, Cooldown: 2 * time.Second, Probes: 1}
	pcs := func() []PartnerConfig {
		return []PartnerConfig{
			{Name: "plain", Policy: pol},
			{Name: "limited", Policy: pol, Concurrency: 2},
			{Name: "breaker-hold", Policy: pol, Breaker: model.NewBreaker(bs)},
			{Name: "breaker-dead-letter", Policy: &polDL, Breaker: model.NewBreaker(bs)},
			{Name: "budget-defer", Policy: pol, Concurrency: 1, Budget: model.NewBudget(5, 0.5)},
			{Name: "breaker-budget-dead-letter", Policy: &polDL, Breaker: model.NewBreaker(bs), Budget: model.NewBudget(2, 0.5)},
		}
	}
	for seed := uint64(1); seed <= 8; seed++ {
		rng := rand.New(rand.NewPCG(seed, 29))
		items := mustNew(t, Config{Workers: 3, QueueCapacity: 400, Partners: pcs()})
		made := 0
		fresh := mustNew(t, Config{Workers: 3, QueueCapacity: 400, Partners: pcs(), Fresh: func(p int32, runAt int64, tok uint32) *Item {
			made++
			return &Item{Ref: uint64(tok), Partner: p, RunAt: runAt, FirstSeen: runAt}
		}})
		cores := [2]*Core{items, fresh}
		var inFlight [2][]*Item
		now := t0
		next := uint32(0)
		mostUnmade := 0 // the most fresh deliveries queued without an item
		for step := range 6000 {
			sick := (step/500)%2 == 0 // partners fail in phases: backlogs build and drain
			switch r := rng.IntN(100); {
			case r < 45: // a burst of new deliveries, due now
				for range 1 + rng.IntN(8) {
					p := int32(rng.IntN(6))
					n := now.UnixNano()
					errA := items.Offer(&Item{Ref: uint64(next), Partner: p, RunAt: n, FirstSeen: n}, now.UnixNano())
					errB := fresh.OfferFresh(p, n, next, now.UnixNano())
					if errA != errB {
						t.Fatalf("seed %d step %d: Offer %v, OfferFresh %v", seed, step, errA, errB)
					}
					next++
				}
			case r < 75:
				if len(inFlight[0]) > 0 {
					k := rng.IntN(len(inFlight[0]))
					o := ok200
					if u := rng.Float64(); sick && u < 0.8 || u < 0.1 {
						o = fail
					}
					u := rng.Float64()
					for c := range cores {
						it := inFlight[c][k]
						inFlight[c] = append(inFlight[c][:k], inFlight[c][k+1:]...)
						cores[c].Complete(it, o, now.UnixNano(), u)
					}
				}
			case r < 98:
				now = now.Add(time.Duration(rng.IntN(400)) * time.Millisecond)
			default: // a restart: attempts in flight are lost, guards fresh
				for c := range cores {
					for _, it := range inFlight[c] {
						cores[c].Abandon(it, now.Add(time.Second).UnixNano(), now.UnixNano())
					}
					inFlight[c] = inFlight[c][:0]
				}
				ga, gb := pcs(), pcs() // each core gets guards of its own, made alike
				for i := range ga {
					items.SetGuards(i, ga[i].Breaker, ga[i].Budget, now.UnixNano())
					fresh.SetGuards(i, gb[i].Breaker, gb[i].Budget, now.UnixNano())
				}
			}
			for {
				a, va, ra := items.Next(now.UnixNano())
				b, vb, rb := fresh.Next(now.UnixNano())
				if (a == nil) != (b == nil) || va != vb || ra != rb || a != nil && *a != *b {
					t.Fatalf("seed %d step %d: Next gives %+v %v %q with Offer, %+v %v %q with OfferFresh", seed, step, a, va, ra, b, vb, rb)
				}
				if a == nil {
					break
				}
				if va == Start {
					inFlight[0] = append(inFlight[0], a)
					inFlight[1] = append(inFlight[1], b)
				}
			}
			wa, oka := items.NextWake()
			wb, okb := fresh.NextWake()
			if items.Queued() != fresh.Queued() || wa != wb || oka != okb || items.Snapshot(now) != fresh.Snapshot(now) {
				t.Fatalf("seed %d step %d: queues differ: queued %d/%d, wake %v/%v, snapshot %+v/%+v",
					seed, step, items.Queued(), fresh.Queued(), wa, wb, items.Snapshot(now), fresh.Snapshot(now))
			}
			if step%100 == 0 {
				type entry struct {
					partner int32
					first   int64
				}
				var each [2]map[entry]int
				unmade := 0
				for c := range cores {
					each[c] = map[entry]int{}
					cores[c].Each(func(p int32, first int64, it *Item) {
						each[c][entry{p, first}]++
						if it == nil {
							unmade++
						}
					})
				}
				if len(each[0]) != len(each[1]) {
					t.Fatalf("seed %d step %d: Each sees %d and %d (partner, first seen) pairs", seed, step, len(each[0]), len(each[1]))
				}
				for e, n := range each[0] {
					if each[1][e] != n {
						t.Fatalf("seed %d step %d: Each sees %d deliveries of partner %d first seen %d with Offer, %d with OfferFresh", seed, step, n, e.partner, e.first, each[1][e])
					}
				}
				if made+unmade > int(next) {
					t.Fatalf("seed %d step %d: %d items made and %d fresh deliveries without one, of %d offered", seed, step, made, unmade, next)
				}
				mostUnmade = max(mostUnmade, unmade)
			}
		}
		if mostUnmade < 100 {
			t.Fatalf("seed %d: at most %d fresh deliveries queued without an item: the fifo never held a backlog", seed, mostUnmade)
		}
	}
}

// TestOfferFreshWithoutFreshRefuses: a core that cannot make items refuses
// a fresh delivery rather than queue one it could never start.
func TestOfferFreshWithoutFreshRefuses(t *testing.T) {
	c := mustNew(t, Config{Workers: 1, Partners: partners(1, 0, flatPolicy(time.Second, 0))})
	if err := c.OfferFresh(0, t0.UnixNano(), 1, t0.UnixNano()); err == nil || c.Queued() != 0 {
		t.Fatalf("OfferFresh without Config.Fresh: err %v, queued %d; want an error and nothing queued", err, c.Queued())
	}
}
