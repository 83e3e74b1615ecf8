package dispatchcore

import (
	"errors"
	"math/rand/v2"
	"testing"
	"time"
	"unsafe"

	"github.com/stormdrill/stormdrill/model"
)

func TestNewRejectsImpossibleConfigs(t *testing.T) {
	pol := flatPolicy(time.Second, 3)
	cases := []struct {
		name string
		cfg  Config
	}{
		// No worker can never start anything.
		{"zero workers", Config{Workers: 0, Partners: partners(1, 0, pol)}},
		// Negative workers are as impossible as zero.
		{"negative workers", Config{Workers: -3, Partners: partners(1, 0, pol)}},
		// A partner without a policy cannot decide what a failure means.
		{"partner without policy", Config{Workers: 1, Partners: []PartnerConfig{{Name: "x"}}}},
	}
	for _, tc := range cases {
		if _, err := New(tc.cfg); err == nil {
			t.Errorf("%s: New accepted it", tc.name)
		}
	}
}

// TestStartsBounded checks that Next never starts more attempts than there
// are worker slots, nor more for one partner than its concurrency limit, and
// that a completion frees exactly one slot.
func TestStartsBounded(t *testing.T) {
	cases := []struct {
		name                string
		workers, partners   int
		itemsPer, partnerCC int
		wantStarts          int
		wantMaxPerPartner   int
	}{
		// Worker slots are the bound: 3 of 10 due items start.
		{"workers bound", 3, 2, 5, 0, 3, 2},
		// Per-partner limit is the bound: 2 per partner although 10 workers are free.
		{"partner limit bound", 10, 2, 5, 2, 4, 2},
		// One partner, limit 3 below 10 workers.
		{"single partner limit", 10, 1, 20, 3, 3, 3},
		// Neither binds: everything due starts.
		{"nothing binds", 10, 2, 3, 0, 6, 3},
		// One worker: one start, whatever is due.
		{"one worker", 1, 4, 4, 4, 1, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := mustNew(t, Config{Workers: tc.workers, Partners: partners(tc.partners, tc.partnerCC, flatPolicy(time.Second, 3))})
			for p := 0; p < tc.partners; p++ {
				offerN(t, c, int32(p), tc.itemsPer, t0)
			}
			started := startAll(t, c, t0)
			if len(started) != tc.wantStarts || c.InFlight() != tc.wantStarts {
				t.Fatalf("started %d (InFlight %d), want %d", len(started), c.InFlight(), tc.wantStarts)
			}
			if got, want := c.Queued(), tc.partners*tc.itemsPer-tc.wantStarts; got != want {
				t.Errorf("Queued %d, want %d", got, want)
			}
			for p, n := range perPartner(started) {
				if n > tc.wantMaxPerPartner {
					t.Errorf("partner %d has %d in flight, want at most %d", p, n, tc.wantMaxPerPartner)
				}
			}
			// Completing one attempt frees exactly one slot; with a partner
			// limit binding, the slot is that partner's.
			done := started[0]
			c.Complete(done, ok200, at(time.Second).UnixNano(), 0)
			more := startAll(t, c, at(time.Second))
			wantMore := min(1, tc.partners*tc.itemsPer-tc.wantStarts)
			if len(more) != wantMore {
				t.Fatalf("after one completion %d started, want %d", len(more), wantMore)
			}
			if wantMore == 1 && tc.partnerCC > 0 && tc.workers > tc.partners*tc.partnerCC && more[0].Partner != done.Partner {
				t.Errorf("freed slot of partner %d went to partner %d", done.Partner, more[0].Partner)
			}
		})
	}
}

// TestSickPartnerCannotStarveOthers is the fairness scenario of the issue.
func TestSickPartnerCannotStarveOthers(t *testing.T) {
	// Given one worker, a sick partner 0 with 1000 due deliveries (offered
	// first, and every failure retried at once) and nine partners with 10
	// due deliveries each,
	c := mustNew(t, Config{Workers: 1, Partners: partners(10, 0, flatPolicy(0, 0))})
	offerN(t, c, 0, 1000, t0)
	for p := int32(1); p < 10; p++ {
		offerN(t, c, p, 10, t0)
	}
	// When the worker serves 100 attempts one at a time, the sick partner's
	// failing,
	now := t0
	var order []int32
	for range 100 {
		started := startAll(t, c, now)
		if len(started) != 1 {
			t.Fatalf("with 1 worker %d started at once", len(started))
		}
		it := started[0]
		order = append(order, it.Partner)
		now = now.Add(time.Millisecond)
		o := ok200
		if it.Partner == 0 {
			o = fail
		}
		c.Complete(it, o, now.UnixNano(), 0)
	}
	// Then the first 10 starts cover all ten partners, and over 100 starts
	// every partner got exactly its round-robin share of 10.
	seen := map[int32]bool{}
	for _, p := range order[:10] {
		seen[p] = true
	}
	if len(seen) != 10 {
		t.Errorf("first 10 starts %v cover %d partners, want all 10", order[:10], len(seen))
	}
	counts := map[int32]int{}
	for _, p := range order {
		counts[p]++
	}
	for p := int32(0); p < 10; p++ {
		if counts[p] != 10 {
			t.Errorf("partner %d got %d of 100 starts, want 10 (order %v)", p, counts[p], order)
		}
	}
}

// TestDelayedItemsHoldNoWorker: a delivery waiting out a delay takes no
// worker slot and becomes due exactly at RunAt, which NextWake reports.
func TestDelayedItemsHoldNoWorker(t *testing.T) {
	// Given one worker, partner 0's delivery due in 10s and partner 1's due now,
	c := mustNew(t, Config{Workers: 1, Partners: partners(2, 0, flatPolicy(2*time.Second, 5))})
	delayed := offerN(t, c, 0, 1, at(10*time.Second))[0]
	offerN(t, c, 1, 1, t0)
	// When the dispatcher is stepped at t0,
	started := startAll(t, c, t0)
	// Then the due delivery has the only worker, the delayed one waits,
	if len(started) != 1 || started[0].Partner != 1 {
		t.Fatalf("started %v, want partner 1's due delivery", started)
	}
	if w, ok := c.NextWake(); !ok || !w.Equal(at(10*time.Second)) {
		t.Fatalf("NextWake = %v, %v; want t0+10s", w, ok)
	}
	c.Complete(started[0], ok200, at(time.Second).UnixNano(), 0)
	if got := startAll(t, c, at(10*time.Second-time.Nanosecond)); len(got) != 0 {
		t.Fatalf("a delivery started 1ns before its RunAt")
	}
	// and it starts at RunAt.
	if got := startAll(t, c, at(10*time.Second)); len(got) != 1 || got[0] != delayed {
		t.Fatalf("at RunAt started %v, want the delayed delivery", got)
	}
	// A failure reschedules it after the backoff; it holds no worker while
	// it waits.
	dec := c.Complete(delayed, fail, at(11*time.Second).UnixNano(), 0)
	if dec.Action != model.ActReschedule || !dec.RunAt.Equal(at(13*time.Second)) {
		t.Fatalf("decision %+v, want reschedule at t0+13s", dec)
	}
	if c.InFlight() != 0 || c.Queued() != 1 {
		t.Fatalf("InFlight %d Queued %d, want 0 and 1", c.InFlight(), c.Queued())
	}
	if w, ok := c.NextWake(); !ok || !w.Equal(at(13*time.Second)) {
		t.Fatalf("NextWake = %v, %v; want t0+13s", w, ok)
	}
	started = startAll(t, c, at(13*time.Second))
	if len(started) != 1 || started[0].Attempts != 2 {
		t.Fatalf("retry: started %v, want the delivery's 2nd attempt", started)
	}
	c.Complete(started[0], ok200, at(14*time.Second).UnixNano(), 0)
	if _, ok := c.NextWake(); ok {
		t.Errorf("NextWake reports a time with nothing queued")
	}
}

func newBreaker(threshold int, cooldown time.Duration) *model.Breaker {
	return model.NewBreaker(model.BreakerSettings{Trip: model.TripConsecutive, Threshold: threshold, Cooldown: cooldown, Probes: 1})
}

// TestBreakerHoldParksPartner: an open breaker (on_open = hold) parks its
// partner until the cooldown, then lets exactly one probe through.
func TestBreakerHoldParksPartner(t *testing.T) {
	cases := []struct {
		name      string
		probe     model.Outcome
		wantState model.BreakerState
		wantAfter int // deliveries of partner 0 that start right after the probe ends
	}{
		// A successful probe closes the breaker; the other three held deliveries start.
		{"probe succeeds", ok200, model.StateClosed, 3},
		// A failed probe opens it again; nothing starts until the next cooldown.
		{"probe fails", fail, model.StateOpen, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pol := flatPolicy(time.Second, 0)
			pcs := partners(2, 0, pol)
			br := newBreaker(2, 10*time.Second)
			pcs[0].Breaker = br
			c := mustNew(t, Config{Workers: 10, Partners: pcs})

			// Given partner 0's breaker opened by two failures at +1ms,
			first := startAll(t, c, t0)
			if len(first) != 0 {
				t.Fatalf("started %d with nothing offered", len(first))
			}
			offerN(t, c, 0, 2, t0)
			for _, it := range startAll(t, c, t0) {
				c.Complete(it, fail, at(time.Millisecond).UnixNano(), 0)
			}
			if br.State(at(time.Millisecond)) != model.StateOpen {
				t.Fatalf("breaker %v after 2 failures, want open", br.State(at(time.Millisecond)))
			}
			// and two more deliveries due now (four held in all),
			offerN(t, c, 0, 2, at(time.Millisecond))
			// When the dispatcher is stepped during the cooldown,
			openUntil := at(10*time.Second + time.Millisecond)
			for _, now := range []time.Time{at(time.Millisecond), at(2 * time.Second), openUntil.Add(-time.Nanosecond)} {
				if got := startAll(t, c, now); len(got) != 0 {
					t.Fatalf("at %v (breaker open) %d deliveries started", now.Sub(t0), len(got))
				}
			}
			// Then nothing of partner 0 starts, the held deliveries count as
			// delayed, the wake-up is the end of the cooldown,
			if st := c.Snapshot(at(2 * time.Second)); st.Delayed != 4 || st.Ready != 0 {
				t.Errorf("snapshot while open %+v, want 4 delayed, 0 ready", st)
			}
			if w, ok := c.NextWake(); !ok || !w.Equal(openUntil) {
				t.Fatalf("NextWake = %v, %v; want the end of the cooldown %v", w, ok, openUntil.Sub(t0))
			}
			// while another partner is served as usual;
			other := offerN(t, c, 1, 1, at(3*time.Second))
			if got := startAll(t, c, at(3*time.Second)); len(got) != 1 || got[0] != other[0] {
				t.Fatalf("healthy partner: started %v, want its delivery", got)
			}
			c.Complete(other[0], ok200, at(4*time.Second).UnixNano(), 0)

			// After the cooldown exactly one probe starts although four are due,
			probe := startAll(t, c, openUntil)
			if len(probe) != 1 {
				t.Fatalf("after the cooldown %d started, want 1 probe", len(probe))
			}
			if br.State(openUntil) != model.StateHalfOpen {
				t.Fatalf("breaker %v during the probe, want half-open", br.State(openUntil))
			}
			// and no other delivery of that partner starts until it ends.
			for _, now := range []time.Time{openUntil, openUntil.Add(time.Second), openUntil.Add(time.Hour)} {
				if got := startAll(t, c, now); len(got) != 0 {
					t.Fatalf("%d started while the probe was out (at +%v)", len(got), now.Sub(openUntil))
				}
			}
			end := openUntil.Add(time.Hour)
			c.Complete(probe[0], tc.probe, end.UnixNano(), 0)
			if s := br.State(end); s != tc.wantState {
				t.Fatalf("breaker %v after the probe, want %v", s, tc.wantState)
			}
			if got := startAll(t, c, end); len(got) != tc.wantAfter {
				t.Fatalf("%d started after the probe, want %d", len(got), tc.wantAfter)
			}
			if tc.wantState == model.StateOpen {
				if w, ok := c.NextWake(); !ok || !w.Equal(end.Add(10*time.Second)) {
					t.Errorf("NextWake = %v, %v; want the end of the new cooldown", w, ok)
				}
			}
		})
	}
}

// TestOnOpenDeadLetter: with on_open = dead-letter, Next dead-letters an
// open partner's due deliveries with reason circuit-open instead of holding
// them; other partners are unaffected and a probe goes out after cooldown.
func TestOnOpenDeadLetter(t *testing.T) {
	pol := flatPolicy(time.Second, 0)
	pol.OnOpenDeadLetter = true
	pcs := partners(2, 0, pol)
	br := newBreaker(1, 10*time.Second)
	pcs[0].Breaker = br
	c := mustNew(t, Config{Workers: 4, Partners: pcs})

	// Given partner 0's breaker opened by a failure whose delivery is
	// dead-lettered by the decision itself,
	offerN(t, c, 0, 1, t0)
	first := startAll(t, c, t0)
	dec := c.Complete(first[0], fail, at(time.Second).UnixNano(), 0)
	if dec.Action != model.ActDeadLetter || dec.Reason != model.ReasonCircuitOpen {
		t.Fatalf("decision %+v, want dead-letter circuit-open", dec)
	}
	// When three more of its deliveries and one of partner 1 are due,
	held := offerN(t, c, 0, 3, at(2*time.Second))
	ok := offerN(t, c, 1, 1, at(2*time.Second))
	// Then Next dead-letters the three (circuit-open) and starts the other.
	dead, starts := 0, 0
	for range 10 {
		it, v, reason := c.Next(at(2 * time.Second).UnixNano())
		if it == nil {
			break
		}
		switch {
		case v == DeadLetter && reason == model.ReasonCircuitOpen && it.Partner == 0:
			dead++
			if it.Attempts != 0 {
				t.Errorf("delivery %d dead-lettered with %d attempts, want 0 (no attempt made)", it.Ref, it.Attempts)
			}
		case v == Start && it == ok[0]:
			starts++
		default:
			t.Fatalf("Next returned delivery %d verdict %v reason %q", it.Ref, v, reason)
		}
	}
	if dead != len(held) || starts != 1 {
		t.Fatalf("dead-lettered %d, started %d; want %d and 1", dead, starts, len(held))
	}
	if c.Queued() != 0 {
		t.Errorf("Queued %d after dead-lettering, want 0", c.Queued())
	}
	// After the cooldown a new delivery goes out as the probe.
	probe := offerN(t, c, 0, 1, at(11*time.Second))
	if got := startAll(t, c, at(11*time.Second)); len(got) != 1 || got[0] != probe[0] {
		t.Fatalf("after cooldown started %v, want the probe", got)
	}
}

// TestBudgetAtDispatch: a retry the budget refuses is deferred (no attempt
// spent) or dead-lettered, as the policy says; first attempts always start.
func TestBudgetAtDispatch(t *testing.T) {
	cases := []struct {
		name       string
		deadLetter bool          // policy.OnExhaustedDeadLetter
		exhausted  bool          // the bucket is drained first
		attempts   int           // attempts the delivery already made
		prevDelay  time.Duration // its previous backoff delay
		want       string        // start | defer | dead-letter
		wantWake   time.Duration // defer: when it is looked at again
	}{
		// A retry with tokens left starts.
		{"retry with tokens", false, false, 1, time.Second, "start", 0},
		// A first attempt is never refused, even with an empty bucket.
		{"first attempt, empty bucket", false, true, 0, 0, "start", 0},
		// An empty bucket defers a retry by its previous delay.
		{"retry deferred by prev delay", false, true, 2, 3 * time.Second, "defer", 3 * time.Second},
		// Without a previous delay the deferral is the policy's base.
		{"retry deferred by base", false, true, 1, 0, "defer", 2 * time.Second},
		// on_exhausted = dead-letter dead-letters the retry instead.
		{"retry dead-lettered", true, true, 1, time.Second, "dead-letter", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pol := flatPolicy(2*time.Second, 0)
			pol.OnExhaustedDeadLetter = tc.deadLetter
			pcs := partners(1, 0, pol)
			bud := model.NewBudget(2, 0.1)
			if tc.exhausted {
				bud.RecordFailure()
				bud.RecordFailure()
			}
			pcs[0].Budget = bud
			c := mustNew(t, Config{Workers: 2, Partners: pcs})
			it := &Item{Ref: 1, Attempts: int32(tc.attempts), PrevDelay: tc.prevDelay, RunAt: t0.UnixNano(), FirstSeen: t0.UnixNano()}
			if err := c.Offer(it, t0.UnixNano()); err != nil {
				t.Fatal(err)
			}
			got, v, reason := c.Next(t0.UnixNano())
			switch tc.want {
			case "start":
				if got != it || v != Start || int(it.Attempts) != tc.attempts+1 {
					t.Fatalf("got %v verdict %v attempts %d, want a start", got, v, it.Attempts)
				}
			case "dead-letter":
				if got != it || v != DeadLetter || reason != model.ReasonBudgetExhausted || int(it.Attempts) != tc.attempts {
					t.Fatalf("got %v verdict %v reason %q attempts %d, want dead-letter budget-exhausted", got, v, reason, it.Attempts)
				}
			case "defer":
				if got != nil {
					t.Fatalf("got delivery %v verdict %v, want nothing (deferred)", got.Ref, v)
				}
				if c.Deferrals != 1 || c.Queued() != 1 || c.InFlight() != 0 || int(it.Attempts) != tc.attempts {
					t.Fatalf("Deferrals %d Queued %d InFlight %d attempts %d; want 1 1 0 %d", c.Deferrals, c.Queued(), c.InFlight(), it.Attempts, tc.attempts)
				}
				if w, ok := c.NextWake(); !ok || !w.Equal(at(tc.wantWake)) {
					t.Fatalf("NextWake %v, %v; want t0+%v", w, ok, tc.wantWake)
				}
			}
		})
	}
}

func TestOfferAtCapacity(t *testing.T) {
	c := mustNew(t, Config{Workers: 1, QueueCapacity: 3, Partners: partners(1, 0, flatPolicy(time.Second, 3))})
	offerN(t, c, 0, 3, t0)
	// At capacity Offer refuses and leaves the queue as it was.
	extra := &Item{Ref: 2, RunAt: t0.UnixNano()}
	if err := c.Offer(extra, t0.UnixNano()); !errors.Is(err, ErrQueueFull) || !c.Full() || c.Queued() != 3 {
		t.Fatalf("Offer at capacity: err %v Full %v Queued %d; want ErrQueueFull, true, 3", err, c.Full(), c.Queued())
	}
	// An attempt in flight is not queued: starting one makes room.
	startAll(t, c, t0)
	if err := c.Offer(extra, t0.UnixNano()); err != nil {
		t.Fatalf("Offer after a start: %v", err)
	}
	// Requeue (a lost attempt coming back) is taken even when full.
	c.Requeue(&Item{Ref: 3, RunAt: t0.UnixNano()}, t0.UnixNano())
	if c.Queued() != 4 {
		t.Errorf("Queued %d after Requeue at capacity, want 4", c.Queued())
	}
	// Capacity 0 means no limit.
	unbounded := mustNew(t, Config{Workers: 1, Partners: partners(1, 0, flatPolicy(time.Second, 3))})
	offerN(t, unbounded, 0, 10_000, t0)
	if unbounded.Full() {
		t.Errorf("capacity 0 reports full")
	}
}

// TestAbandon: an attempt whose result is lost frees its slot, records
// nothing on the breaker, and is due again at runAt with its ordinal kept.
func TestAbandon(t *testing.T) {
	pcs := partners(2, 0, flatPolicy(time.Second, 5))
	br := newBreaker(1, time.Minute) // one recorded failure would open it
	pcs[0].Breaker = br
	c := mustNew(t, Config{Workers: 1, Partners: pcs})
	lost := offerN(t, c, 0, 1, t0)[0]
	startAll(t, c, t0)
	other := offerN(t, c, 1, 1, t0)[0]

	c.Abandon(lost, at(30*time.Second).UnixNano(), at(time.Second).UnixNano())
	if c.InFlight() != 0 || c.Queued() != 2 || lost.Attempts != 1 {
		t.Fatalf("after Abandon InFlight %d Queued %d attempts %d; want 0, 2, 1", c.InFlight(), c.Queued(), lost.Attempts)
	}
	if br.State(at(time.Second)) != model.StateClosed {
		t.Errorf("Abandon changed the breaker to %v", br.State(at(time.Second)))
	}
	// The freed worker serves the other partner at once.
	if got := startAll(t, c, at(time.Second)); len(got) != 1 || got[0] != other {
		t.Fatalf("after Abandon started %v, want the other partner's delivery", got)
	}
	c.Complete(other, ok200, at(2*time.Second).UnixNano(), 0)
	if w, ok := c.NextWake(); !ok || !w.Equal(at(30*time.Second)) {
		t.Fatalf("NextWake %v, %v; want the lease expiry t0+30s", w, ok)
	}
	if got := startAll(t, c, at(30*time.Second-time.Nanosecond)); len(got) != 0 {
		t.Fatalf("abandoned delivery started before its lease expired")
	}
	got := startAll(t, c, at(30*time.Second))
	if len(got) != 1 || got[0] != lost || lost.Attempts != 2 {
		t.Fatalf("at lease expiry started %v (attempts %d), want the lost delivery's 2nd attempt", got, lost.Attempts)
	}
}

func TestSnapshot(t *testing.T) {
	c := mustNew(t, Config{Workers: 1, Partners: partners(3, 0, flatPolicy(time.Second, 5))})
	if st := c.Snapshot(t0); st != (Stats{}) {
		t.Fatalf("empty core snapshot %+v, want zeros", st)
	}
	add := func(p int32, created, runAt time.Duration) {
		it := &Item{Partner: p, FirstSeen: at(created).UnixNano(), RunAt: at(runAt).UnixNano()}
		if err := c.Offer(it, t0.UnixNano()); err != nil {
			t.Fatal(err)
		}
	}
	add(2, -time.Hour, 0) // starts: in flight, so not in any age
	startAll(t, c, t0)
	add(0, -5*time.Second, 0)               // ready, 5s old
	add(0, -3*time.Second, 0)               // ready, 3s old
	add(1, -20*time.Second, 10*time.Second) // delayed, 20s old
	add(1, -time.Second, 5*time.Second)     // delayed, 1s old
	st := c.Snapshot(t0)
	want := Stats{Ready: 2, Delayed: 2, InFlight: 1, OldestReadyAge: 5 * time.Second, OldestDelayedAge: 20 * time.Second}
	if st != want {
		t.Fatalf("snapshot %+v, want %+v", st, want)
	}
	// Ten seconds later everything queued is due and the ages have grown.
	st = c.Snapshot(at(10 * time.Second))
	want = Stats{Ready: 4, Delayed: 0, InFlight: 1, OldestReadyAge: 30 * time.Second}
	if st != want {
		t.Fatalf("snapshot at +10s %+v, want %+v", st, want)
	}
}

// TestUpcomingIsTheEntryAfterNext: with partners 0, 1, 2 due in that order,
// Upcoming names the partner Next acts on after the one it returns now, and
// -1 once no entry follows.
func TestUpcomingIsTheEntryAfterNext(t *testing.T) {
	c := mustNew(t, Config{Workers: 10, Partners: partners(3, 0, flatPolicy(time.Second, 3))})
	for p := int32(0); p < 3; p++ {
		offerN(t, c, p, 1, t0)
	}
	for _, want := range []struct{ upcoming, next int32 }{{1, 0}, {2, 1}, {-1, 2}} {
		up := c.Upcoming()
		it, _, _ := c.Next(t0.UnixNano())
		if it == nil || up != want.upcoming || it.Partner != want.next {
			t.Fatalf("Upcoming %d then Next %v; want %d then partner %d", up, it, want.upcoming, want.next)
		}
	}
}

// TestRingPosUnmovedMeansSameUpcoming: a caller that prefetches for the
// upcoming entries skips asking again while RingPos has not moved, so the
// entries UpcomingAt names must then be the same; with offers, starts and
// completions in a random order, and the ring compacted on the way (more
// than 1,024 entries taken).
func TestRingPosUnmovedMeansSameUpcoming(t *testing.T) {
	const n = 40
	c := mustNew(t, Config{Workers: 8, Partners: partners(n, 2, flatPolicy(time.Second, 3))})
	r := rand.New(rand.NewPCG(3, 4))
	var inFlight []*Item
	upcoming := func() [3]int32 { return [3]int32{c.UpcomingAt(1), c.UpcomingAt(2), c.UpcomingAt(3)} }
	head, length := c.RingPos()
	seen := upcoming()
	compacted := false
	for step := range 20_000 {
		now := t0.Add(time.Duration(step) * time.Millisecond)
		switch k := r.IntN(3); {
		case k == 0:
			offerN(t, c, int32(r.IntN(n)), 1, now)
		case k == 1:
			if it, _, _ := c.Next(now.UnixNano()); it != nil {
				inFlight = append(inFlight, it)
			}
		case len(inFlight) > 0:
			j := r.IntN(len(inFlight))
			c.Complete(inFlight[j], ok200, now.UnixNano(), 0)
			inFlight = append(inFlight[:j], inFlight[j+1:]...)
		}
		h, l := c.RingPos()
		compacted = compacted || h < head
		if got := upcoming(); h == head && l == length && got != seen {
			t.Fatalf("step %d: RingPos (%d, %d) unmoved, but UpcomingAt(1..3) went from %v to %v", step, h, l, seen, got)
		} else {
			seen = got
		}
		head, length = h, l
	}
	if !compacted {
		t.Fatal("the ring was never compacted: the test does not cover it")
	}
}

// TestItemIs48Bytes: a simulation keeps millions of items pending, and
// each byte of Item is a byte per pending delivery; a field added to Item
// must fit in its 48 bytes or say why it cannot.
func TestItemIs48Bytes(t *testing.T) {
	if got := unsafe.Sizeof(Item{}); got != 48 {
		t.Errorf("Item is %d bytes, want 48", got)
	}
}

func TestWidenGen(t *testing.T) {
	for _, tc := range []struct {
		name      string
		admitted  uint64 // the generation that admitted the attempt
		cur       uint64 // the breaker's generation when it ends
		wantWider uint64
	}{
		{"same generation", 7, 7, 7},
		{"transitions during the attempt", 7, 9, 7},
		{"zero", 0, 0, 0},
		{"admitted just below a 2^32 boundary, ended above it", 1<<32 - 1, 1<<32 + 2, 1<<32 - 1},
		{"far past 2^32", 5<<32 + 3, 5<<32 + 40, 5<<32 + 3},
		{"2^32 - 1 transitions later: still exact", 10, 10 + 1<<32 - 1, 10},
	} {
		if got := widenGen(tc.cur, uint32(tc.admitted)); got != tc.wantWider {
			t.Errorf("%s: widenGen(%d, %d) = %d, want %d", tc.name, tc.cur, uint32(tc.admitted), got, tc.wantWider)
		}
	}
}

// TestSharedAndReplacedBreaker: a breaker shared by two partners and one
// replaced by SetGuards must still be one breaker whoever reads it.
func TestSharedAndReplacedBreaker(t *testing.T) {
	pol := flatPolicy(time.Second, 0)
	pcs := partners(3, 0, pol)
	br := newBreaker(3, time.Minute)
	pcs[0].Breaker, pcs[1].Breaker = br, br
	c := mustNew(t, Config{Workers: 10, Partners: pcs})
	now := t0
	// attempt makes one attempt on partner p ending with o, and reports
	// whether it started.
	attempt := func(p int32, o model.Outcome) bool {
		now = now.Add(time.Millisecond)
		offerN(t, c, p, 1, now)
		got := startAll(t, c, now)
		for _, it := range got {
			c.Complete(it, o, now.UnixNano(), 0)
		}
		return len(got) == 1
	}
	// Failures through either partner count in one run; a success through
	// either ends it for both.
	for i, s := range []struct {
		p int32
		o model.Outcome
	}{{0, fail}, {1, fail}, {0, ok200}, {1, fail}, {0, fail}} {
		if !attempt(s.p, s.o) {
			t.Fatalf("step %d: partner %d did not start", i, s.p)
		}
	}
	if st := br.State(now); st != model.StateClosed {
		t.Fatalf("breaker %v after a success and two failures, want closed", st)
	}
	if !attempt(1, fail) || br.State(now) != model.StateOpen {
		t.Fatalf("breaker %v after three failures in a row, want open", br.State(now))
	}
	// A restart gives partner 0 a fresh breaker: the old one stays open for
	// partner 1, which still holds it, and for whoever reads it.
	fresh := newBreaker(3, time.Minute)
	c.SetGuards(0, fresh, nil, now.UnixNano())
	if br.State(now) != model.StateOpen || c.Breaker(1).State(now) != model.StateOpen {
		t.Fatalf("old breaker %v after the restart, want open", br.State(now))
	}
	if !attempt(0, ok200) {
		t.Fatal("partner 0 held by its old breaker after the restart")
	}
	if attempt(1, ok200) {
		t.Fatal("partner 1 started through an open breaker")
	}
	if fresh.State(now) != model.StateClosed || fresh.Generation() != 0 {
		t.Fatalf("fresh breaker %v gen %d, want closed, 0", fresh.State(now), fresh.Generation())
	}
}

// TestCallerState: the core keeps its partners' state where Config.State
// says, which must be one record a partner.
func TestCallerState(t *testing.T) {
	pcs := partners(3, 0, flatPolicy(time.Second, 0))
	if _, err := New(Config{Workers: 1, Partners: pcs, State: make([]PartnerState, 2)}); err == nil {
		t.Fatal("state for 2 partners accepted for 3")
	}
	state := make([]PartnerState, 3)
	c := mustNew(t, Config{Workers: 1, Partners: pcs, State: state})
	offerN(t, c, 2, 1, t0)
	if state[2].head.it == nil || state[0].head.it != nil {
		t.Fatal("the delivery for partner 2 is not in its record of the caller's state")
	}
	if got := startAll(t, c, t0); len(got) != 1 || got[0].Partner != 2 {
		t.Fatalf("started %v, want the delivery for partner 2", got)
	}
}
