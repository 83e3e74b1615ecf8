package sim

import (
	"time"

	"github.com/stormdrill/stormdrill/drills"
	"github.com/stormdrill/stormdrill/model"
	"github.com/stormdrill/stormdrill/model/dispatchcore"
)

// Operator actions in the simulation. An outage-end needs nothing here: it
// shortens its outage in the partner specs (PartnerSpecs), which every
// runner reads.

// act carries out action i at drill time t.
func (r *simRun) act(t int64, i int) {
	a := &r.d.Actions[i]
	switch a.Kind {
	case drills.ActionPauseSource:
		// The pause itself is in r.pauses; wake the source when it ends.
		r.q.Push(t+int64(a.For.D), mkEvent(evResume, 0))
	case drills.ActionDLQReplay:
		for k := range r.replays {
			if r.replays[k].action == i {
				rp := &r.replays[k]
				rp.started = true
				for j := r.dlqHead; j < len(r.dlq); j++ {
					if rp.selects(&r.dlq[j]) {
						rp.matched++
					}
				}
				rp.cursor = r.dlqHead
				r.tally.ReplayStarted(k, rp.matched)
				r.replayBatch(t, k)
			}
		}
	}
}

// paused reports whether the source is paused at t.
func (r *simRun) paused(t int64) bool {
	for _, p := range r.pauses {
		if t >= p[0] && t < p[1] {
			return true
		}
	}
	return false
}

// keepDead reports whether a dead letter must stay in the DLQ a replay
// reads (a replay to come or under way selects it), and keeps it there.
func (r *simRun) keepDead(it *dispatchcore.Item, reason model.Reason) bool {
	e := dlqEntry{it: it, reason: reason, cohort: r.cohortOf(it.Partner)}
	for k := range r.replays {
		if rp := &r.replays[k]; !rp.done && rp.selects(&e) {
			r.dlq = append(r.dlq, e)
			return true
		}
	}
	return false
}

// replayBatch moves replay k's next batch back to the queue at t, oldest
// dead letter first, as the stores' Replay does: each keeps its id, gets a
// fresh attempt budget and is due now.
func (r *simRun) replayBatch(t int64, k int) {
	rp := &r.replays[k]
	var moved int64
	now := r.unixNs(t)
	for j := rp.cursor; j < len(r.dlq) && moved < int64(rp.batch) && rp.moved+moved < rp.matched; j++ {
		e := &r.dlq[j]
		if !rp.selects(e) {
			if j == rp.cursor {
				rp.cursor++
			}
			continue
		}
		it := e.it
		e.it = nil
		if j == rp.cursor {
			rp.cursor++
		}
		r.tally.Replayed(k, int(it.Partner), string(e.reason))
		if r.replayOf == nil {
			r.replayOf = map[*dispatchcore.Item]int32{}
		}
		r.replayOf[it] = int32(k)
		it.Attempts, it.PrevDelay, it.RunAt = 0, 0, now
		r.core.Requeue(it, now)
		moved++
	}
	for r.dlqHead < len(r.dlq) && r.dlq[r.dlqHead].it == nil {
		r.dlqHead++
	}
	if moved == 0 {
		rp.done = true
		return
	}
	rp.moved += moved
	r.tally.ReplayBatch(k, time.Duration(t), moved, r.actionWho(rp.action))
	if rp.moved >= rp.matched {
		rp.done = true
		return
	}
	r.q.Push(t+rp.gap, mkEvent(evReplay, int32(k)))
}

// actionWho is who a replay's audit records name: the drill action.
func (r *simRun) actionWho(i int) string { return drills.ActionWho(i) }
