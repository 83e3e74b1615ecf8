package dispatcher

import (
	"time"

	"github.com/stormdrill/stormdrill/model"
	"github.com/stormdrill/stormdrill/model/dispatchcore"
	"github.com/stormdrill/stormdrill/model/runtime/queue"
)

// heldRow is a delivery this dispatcher has claimed and keeps in memory,
// with what its row holds once the queued transitions are stored: a lease
// renewal rewrites exactly these values (KindHold), so it changes nothing
// but lease_until, even while an attempt is in flight whose outcome is
// not stored yet.
type heldRow struct {
	id         string
	it         *dispatchcore.Item // the delivery in the core
	attempt    int
	runAt      time.Time
	prevDelay  time.Duration
	lastErr    string
	updated    time.Time
	leaseUntil time.Time
	// idx is the row's place in the dispatcher's leases heap.
	idx int
	// payload is the body every attempt sends (the core's item keeps only
	// what the core reads); unstarted: claimed and not yet handed out by
	// the core (see dispatcher.unstarted).
	payload   []byte
	unstarted bool
}

// leaseHeap orders the held rows by lease expiry (a binary min-heap), so
// a renewal pass looks only at the rows whose lease is due for renewal,
// not at every row held: its cost does not grow with what is held.
type leaseHeap []*heldRow

func (h leaseHeap) less(i, j int) bool { return h[i].leaseUntil.Before(h[j].leaseUntil) }

func (h leaseHeap) swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].idx, h[j].idx = i, j
}

func (h leaseHeap) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !h.less(i, p) {
			return
		}
		h.swap(i, p)
		i = p
	}
}

func (h leaseHeap) down(i int) {
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		m := l
		if r := l + 1; r < len(h) && h.less(r, l) {
			m = r
		}
		if !h.less(m, i) {
			return
		}
		h.swap(i, m)
		i = m
	}
}

func (h *leaseHeap) push(r *heldRow) {
	r.idx = len(*h)
	*h = append(*h, r)
	h.up(r.idx)
}

func (h *leaseHeap) remove(r *heldRow) {
	s := *h
	i, last := r.idx, len(s)-1
	if i != last {
		s.swap(i, last)
	}
	s[last] = nil
	*h = s[:last]
	if i != last {
		h.fix(i)
	}
	r.idx = -1
}

// fix restores the order after the lease of the row at i changed.
func (h leaseHeap) fix(i int) {
	r := h[i]
	h.up(i)
	h.down(r.idx)
}

// unhold drops held row h, whose delivery's turn ended, and its item
// (see leftHeld).
func (ds *dispatcher) unhold(h *heldRow) {
	ds.leases.remove(h)
	delete(ds.held, h.id)
	delete(ds.rowOf, h.it)
	if ds.storeBusy {
		ds.leftHeld[h.id] = struct{}{}
	}
}

// enoughClaimed reports whether the dispatcher holds enough for now: as
// many deliveries as HeldLimit allows, or, while every worker is busy, a
// claim batch of claimed deliveries not started yet. Under overload it
// claims what it can start, not the whole backlog, so what it holds (and
// renews, and the store keeps leased) stays about one batch beyond its
// workers; the rest waits in the store, where another dispatcher may
// take it. With a worker idle it claims on, so deliveries that wait in
// memory for a breaker or a partner slot do not hold the others back.
func (ds *dispatcher) enoughClaimed() bool {
	if len(ds.held) >= ds.cfg.HeldLimit {
		return true
	}
	return ds.unstarted >= ds.cfg.ClaimBatch && ds.core.InFlight() >= ds.cfg.Workers
}

// claimed hands the newly claimed rows to the core; now is when they
// arrived.
func (ds *dispatcher) claimed(rows []queue.Delivery, now time.Time) {
	fresh := 0
	for i := range rows {
		r := &rows[i]
		if h, ok := ds.held[r.ID]; ok {
			// Already ours (its lease had run out while we kept it): the
			// claim renewed the lease and nothing else changes.
			h.leaseUntil, h.updated = r.LeaseUntil, now
			ds.leases.fix(h.idx)
			continue
		}
		if _, ok := ds.leftHeld[r.ID]; ok {
			// Ours, and ended while the claim ran: the transition queued
			// for it is stored with the next batch (the lease is ours).
			continue
		}
		si, ok := ds.byName[r.Partner]
		if !ok {
			ds.pending = append(ds.pending, queue.Completion{ID: r.ID, Owner: ds.cfg.Owner, Kind: queue.KindDeadLetter,
				At: now, Attempt: r.Attempt, Reason: string(model.ReasonPermanent), LastError: "no partner " + clip(r.Partner) + " in the configuration"})
			continue
		}
		it := &dispatchcore.Item{
			JitterKey: model.JitterKeyOf(r.ID), Partner: si, Attempts: int32(r.Attempt), FirstSeen: r.Created.UnixNano(), RunAt: r.RunAt.UnixNano(),
			PrevDelay: r.PrevDelay,
		}
		if r.Created.IsZero() {
			it.FirstSeen = r.RunAt.UnixNano()
		}
		h := &heldRow{id: r.ID, attempt: r.Attempt, runAt: r.RunAt, prevDelay: r.PrevDelay,
			lastErr: r.LastError, updated: now, leaseUntil: r.LeaseUntil, payload: r.Payload, unstarted: true}
		h.it = it
		ds.held[r.ID] = h
		ds.rowOf[it] = h
		ds.leases.push(h)
		ds.unstarted++
		ds.core.Requeue(it, now.UnixNano())
		fresh++
	}
	ds.stats.Claimed += int64(fresh)
}

// renew queues a lease renewal (KindHold with the row's stored values and
// a lease from now) for every held delivery with less than two thirds of
// a lease left, soonest expiry first, at most MaxRenewBatch; more reports
// that some were left for the next batch. The renewals go to the store
// with the next flush, after the transitions queued before them. It takes
// them off the top of the lease heap: the rows it looks at are the ones it
// renews (and one more), however many are held.
func (ds *dispatcher) renew(now time.Time) (more bool) {
	if len(ds.pending) > MaxPendingCompletions/2 {
		return false // the store is not taking writes; renewals would only pile up
	}
	lease := ds.cfg.LeaseTimeout
	horizon := now.Add(lease - lease/3)
	until := now.Add(lease)
	n := 0
	for len(ds.leases) > 0 {
		h := ds.leases[0]
		ds.renewLooked++
		if h.leaseUntil.After(horizon) {
			break
		}
		if n >= MaxRenewBatch {
			more = true
			break
		}
		ds.pending = append(ds.pending, queue.Completion{ID: h.id, Owner: ds.cfg.Owner, Kind: queue.KindHold, At: h.updated,
			Attempt: h.attempt, RunAt: h.runAt, PrevDelay: h.prevDelay, LastError: h.lastErr, LeaseUntil: until})
		h.leaseUntil = until
		ds.leases.down(0)
		n++
	}
	ds.stats.Renewed += int64(n)
	return more
}
