package sim

import (
	"time"

	"github.com/stormdrill/stormdrill/model"
	"github.com/stormdrill/stormdrill/model/dispatchcore"
	"github.com/stormdrill/stormdrill/reports"
	"github.com/stormdrill/stormdrill/reports/tally"
)

// sample feeds the tally what the simulated queue looks like at t.
func (r *simRun) sample(t int64) {
	// Per cohort: the age of its oldest waiting delivery, ready or
	// delayed: the faulty cohort's backlog ages while the healthy ones'
	// do not. A cohort's subscribers are consecutive, so the core finds
	// it in the walk that counts the queue.
	n := min(len(r.specs), tally.MaxCohortColumns)
	if len(r.oldestBuf) != n {
		r.oldestBuf = make([]int64, n)
	}
	st := r.core.SnapshotGroups(r.wall(t), r.cohortLo[:n+1], r.oldestBuf)
	g := tally.Gauges{
		Ready: int64(st.Ready), Delayed: int64(st.Delayed), InFlight: int64(st.InFlight),
		OldestReadyAge: st.OldestReadyAge, OldestDelayedAge: st.OldestDelayedAge,
	}
	g.SourceHeldBack = r.heldDeliveries()
	if n > 0 {
		now := r.unixNs(t)
		g.CohortOldestAge = make([]time.Duration, n)
		for c, first := range r.oldestBuf {
			if first != 0 {
				g.CohortOldestAge[c] = time.Duration(max(0, now-first))
			}
		}
	}
	if cols := r.tally.BreakerColumns(); len(cols) > 0 {
		g.Breaker = make([]float64, len(cols))
		for i, sub := range cols {
			if b := r.core.Breaker(sub); b != nil {
				switch b.State(r.wall(t)) {
				case model.StateHalfOpen:
					g.Breaker[i] = 1
				case model.StateOpen:
					g.Breaker[i] = 2
				}
			}
		}
	}
	r.tally.Sample(time.Duration(t), g)
}

// report feeds the tally what is still pending at the end and assembles
// the run.
func (r *simRun) report() (*reports.Run, error) { return r.settle().Run() }

// settle feeds the tally what is still pending at the end and returns it:
// the run's figures are all in it from then on.
func (r *simRun) settle() *tally.Tally {
	pend := func(partner int32, first int64, it *dispatchcore.Item) {
		if rp, ok := r.replayOf[it]; ok { // never for a fresh one (it nil): replays are requeued items
			r.tally.ReplayPending(int(rp), int(partner), time.Duration(first-r.epoch0), 1)
			return
		}
		r.tally.Pending(int(partner), time.Duration(first-r.epoch0), 1)
	}
	r.core.Each(pend)
	for i := range r.slots {
		if it := r.slots[i].it; it != nil {
			pend(it.Partner, it.FirstSeen, it)
		}
	}
	// Deliveries the source created but still holds back (on_full = block)
	// are created and pending, though no queue has seen them yet; they
	// count as old as the oldest held event.
	if r.heldHead < len(r.held) {
		oldest := time.Duration(r.held[r.heldHead])
		r.eachHeld(func(si int32, n int64) {
			r.tally.Created(int(si), n)
			r.tally.Pending(int(si), oldest, n)
		})
	}
	r.tally.SourceHeldBack(r.heldBackSum, r.heldBackMax)
	return r.tally
}
