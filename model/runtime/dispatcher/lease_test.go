package dispatcher

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stormdrill/stormdrill/model/runtime/queue"
)

// holding returns a dispatcher (not running) that holds n claimed
// deliveries: due of them with a lease that ends at t0+lease, the rest
// waiting out a delay, their lease one lease past a run_at an hour on.
func holding(t *testing.T, n, due int, t0 time.Time) *dispatcher {
	t.Helper()
	ds, err := newDispatcher(ingestConfig(queue.NewMemory()))
	if err != nil {
		t.Fatal(err)
	}
	lease := ds.cfg.LeaseTimeout
	rows := make([]queue.Delivery, n)
	for i := range rows {
		r := &rows[i]
		r.ID, r.Partner, r.Created, r.RunAt = fmt.Sprintf("d-%06d", i), "acme-0", t0, t0
		r.LeaseUntil = t0.Add(lease)
		if i >= due {
			r.RunAt = t0.Add(time.Hour)
			r.LeaseUntil = r.RunAt.Add(lease)
		}
	}
	// Claimed in two batches, the delayed ones first: a renewal must find
	// the due rows wherever they arrived.
	ds.claimed(rows[due:], t0)
	ds.claimed(rows[:due], t0)
	return ds
}

// TestRenewalLooksOnlyAtWhatIsDue counts work, not time: a renewal pass
// looks at the rows it renews and one more, however many deliveries the
// dispatcher holds, and it renews exactly the rows with less than two
// thirds of a lease left.
func TestRenewalLooksOnlyAtWhatIsDue(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	const due = 100
	for _, n := range []int{due, 1_000, 100_000} {
		ds := holding(t, n, due, t0)
		lease := ds.cfg.LeaseTimeout
		now := t0.Add(lease / 2) // half the lease left: due for renewal
		if more := ds.renew(now); more {
			t.Errorf("held %d: renew reports more to do", n)
		}
		if ds.renewLooked != due+1 {
			t.Errorf("held %d: renew looked at %d rows to renew %d; want %d", n, ds.renewLooked, due, due+1)
		}
		renewed := map[string]bool{}
		for _, c := range ds.pending {
			if c.Kind != queue.KindHold || !c.LeaseUntil.Equal(now.Add(lease)) {
				t.Fatalf("held %d: queued %+v, want a hold to now+lease", n, c)
			}
			renewed[c.ID] = true
		}
		for i := 0; i < due; i++ {
			if id := fmt.Sprintf("d-%06d", i); !renewed[id] {
				t.Errorf("held %d: %s (lease ends in half a lease) was not renewed", n, id)
			}
		}
		if len(renewed) != due || len(ds.pending) != due {
			t.Errorf("held %d: %d renewals queued for %d rows, want %d", n, len(ds.pending), len(renewed), due)
		}
		// Renewed, nothing is due: the next pass looks at the top only.
		ds.renewLooked = 0
		ds.renew(now)
		if ds.renewLooked != 1 || len(ds.pending) != due {
			t.Errorf("held %d: a second pass looked at %d rows and queued %d renewals in all; want 1 and %d", n, ds.renewLooked, len(ds.pending), due)
		}
	}
}

// TestLeaseHeapOrder: after claims, lease changes and deliveries leaving
// in any order, the heap is a heap, holds exactly the held rows, and each
// row knows its place.
func TestLeaseHeapOrder(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	ds := holding(t, 500, 200, t0)
	rng := rand.New(rand.NewPCG(1, 2))
	check := func(step int) {
		t.Helper()
		if len(ds.leases) != len(ds.held) {
			t.Fatalf("step %d: %d rows in the heap, %d held", step, len(ds.leases), len(ds.held))
		}
		for i, h := range ds.leases {
			if h.idx != i || ds.held[h.id] != h {
				t.Fatalf("step %d: heap[%d] is %s with idx %d", step, i, h.id, h.idx)
			}
			if i > 0 && ds.leases.less(i, (i-1)/2) {
				t.Fatalf("step %d: heap[%d] expires before its parent", step, i)
			}
		}
	}
	check(0)
	for step := 1; step <= 2000; step++ {
		var h *heldRow
		for _, h = range ds.held {
			break
		}
		if h == nil {
			break
		}
		switch rng.IntN(3) {
		case 0:
			ds.unhold(h)
		case 1:
			h.leaseUntil = t0.Add(time.Duration(rng.IntN(3600)) * time.Second)
			ds.leases.fix(h.idx)
		default:
			ds.renew(t0.Add(time.Duration(rng.IntN(60)) * time.Second))
		}
		check(step)
	}
}
