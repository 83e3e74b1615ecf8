package queue

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// t0 is the fixed start of every test's timeline.
var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// opener makes a fresh store; reopen (nil where the store is not durable)
// closes it and opens the same data again.
type opener struct {
	name string
	open func(t *testing.T) (s Store, reopen func(Store) Store)
}

var openers = []opener{
	// memory: the test double; no reopen.
	{"memory", func(t *testing.T) (Store, func(Store) Store) {
		return NewMemory(), nil
	}},
	// sqlite: a fresh file per test; reopen closes and opens it again.
	{"sqlite", func(t *testing.T) (Store, func(Store) Store) {
		path := filepath.Join(t.TempDir(), "queue.db")
		s, err := OpenSQLite(path)
		if err != nil {
			t.Fatal(err)
		}
		reopen := func(old Store) Store {
			if err := old.Close(); err != nil {
				t.Fatal(err)
			}
			s, err := OpenSQLite(path)
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
		return s, reopen
	}},
}

// forEach runs fn once per store implementation and closes the store.
func forEach(t *testing.T, fn func(t *testing.T, s Store, reopen func(Store) Store) Store) {
	for _, o := range openers {
		t.Run(o.name, func(t *testing.T) {
			s, reopen := o.open(t)
			s = fn(t, s, reopen)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func delivery(id string, runAt time.Time) Delivery {
	return Delivery{
		ID: id, Event: strings.Split(id, ":")[0], Partner: "acme-0", Cohort: "acme",
		Payload: []byte(`{"id":"` + id + `"}`), Created: runAt, RunAt: runAt,
	}
}

func mustEnqueue(t *testing.T, s Store, ds ...Delivery) {
	t.Helper()
	n, err := s.Enqueue(context.Background(), ds)
	if err != nil {
		t.Fatal(err)
	}
	if n != len(ds) {
		t.Fatalf("enqueue accepted %d of %d", n, len(ds))
	}
}

func mustClaim(t *testing.T, s Store, owner string, now time.Time, lease time.Duration, limit int) []Delivery {
	t.Helper()
	got, err := s.Claim(context.Background(), owner, now, lease, limit)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func mustComplete(t *testing.T, s Store, cs ...Completion) CompleteResult {
	t.Helper()
	r, err := s.Complete(context.Background(), cs)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func mustCounts(t *testing.T, s Store, now time.Time) Counts {
	t.Helper()
	c, err := s.Counts(context.Background(), now)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func mustGet(t *testing.T, s Store, id string) Delivery {
	t.Helper()
	d, err := s.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func ids(ds []Delivery) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.ID
	}
	return out
}

func TestEnqueueClaimAck(t *testing.T) {
	forEach(t, func(t *testing.T, s Store, _ func(Store) Store) Store {
		ctx := context.Background()
		mustEnqueue(t, s,
			delivery("evt-2:acme-0", t0.Add(2*time.Second)),
			delivery("evt-1:acme-0", t0.Add(1*time.Second)),
			delivery("evt-3:acme-0", t0.Add(1*time.Second)),
		)
		// Same id again: the idempotency key makes it a no-op.
		if n, err := s.Enqueue(ctx, []Delivery{delivery("evt-1:acme-0", t0)}); err != nil || n != 0 {
			t.Fatalf("duplicate enqueue: accepted %d, err %v", n, err)
		}
		now := t0.Add(5 * time.Second)
		got := mustClaim(t, s, "w1", now, 30*time.Second, 10)
		want := []string{"evt-1:acme-0", "evt-3:acme-0", "evt-2:acme-0"} // run_at order, id breaks ties
		if fmt.Sprint(ids(got)) != fmt.Sprint(want) {
			t.Fatalf("claim order %v, want %v", ids(got), want)
		}
		for _, d := range got {
			if d.State != StateLeased || d.LeaseOwner != "w1" || !d.LeaseUntil.Equal(now.Add(30*time.Second)) || !d.FirstSeen.Equal(now) {
				t.Fatalf("claimed row %+v", d)
			}
		}
		if string(got[0].Payload) != `{"id":"evt-1:acme-0"}` || got[0].Partner != "acme-0" || got[0].Cohort != "acme" || got[0].Event != "evt-1" {
			t.Fatalf("claimed fields %+v", got[0])
		}
		if c := mustCounts(t, s, now); c != (Counts{Leased: 3}) {
			t.Fatalf("counts after claim %+v", c)
		}
		r := mustComplete(t, s, Completion{ID: "evt-1:acme-0", Owner: "w1", Kind: KindAck, At: now.Add(time.Second),
			Attempt: 1, Started: now, Status: 200, RecordAttempt: true})
		if r != (CompleteResult{Applied: 1}) {
			t.Fatalf("complete %+v", r)
		}
		d := mustGet(t, s, "evt-1:acme-0")
		if d.State != StateDelivered || d.Attempt != 1 || d.LeaseOwner != "" || !d.LeaseUntil.IsZero() {
			t.Fatalf("after ack %+v", d)
		}
		if c := mustCounts(t, s, now); c != (Counts{Leased: 2, Delivered: 1}) {
			t.Fatalf("counts after ack %+v", c)
		}
		hist, err := s.Attempts(ctx, "evt-1:acme-0")
		if err != nil {
			t.Fatal(err)
		}
		wantHist := AttemptRecord{DeliveryID: "evt-1:acme-0", Ordinal: 1, Started: now, Ended: now.Add(time.Second), Status: 200, Owner: "w1"}
		if len(hist) != 1 || hist[0] != wantHist {
			t.Fatalf("history %+v, want %+v", hist, wantHist)
		}
		if _, err := s.Get(ctx, "nope"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("get unknown: %v", err)
		}
		return s
	})
}

func TestClaimOnlyDue(t *testing.T) {
	forEach(t, func(t *testing.T, s Store, _ func(Store) Store) Store {
		now := t0.Add(time.Minute)
		mustEnqueue(t, s,
			delivery("past", now.Add(-time.Second)),
			delivery("now", now),
			delivery("future", now.Add(time.Nanosecond)),
		)
		if c := mustCounts(t, s, now); c != (Counts{Ready: 2, Delayed: 1}) {
			t.Fatalf("counts %+v", c)
		}
		got := mustClaim(t, s, "w1", now, time.Second, 10)
		if fmt.Sprint(ids(got)) != "[past now]" {
			t.Fatalf("claimed %v, want [past now]", ids(got))
		}
		if got := mustClaim(t, s, "w1", now, time.Second, 10); len(got) != 0 {
			t.Fatalf("second claim got %v", ids(got))
		}
		// limit bounds the batch.
		got = mustClaim(t, s, "w2", now.Add(time.Hour), time.Second, 1)
		if len(got) != 1 {
			t.Fatalf("limit 1 claimed %d", len(got))
		}
		return s
	})
}

func TestLeaseExpiryAndStaleCompletion(t *testing.T) {
	forEach(t, func(t *testing.T, s Store, _ func(Store) Store) Store {
		mustEnqueue(t, s, delivery("d1", t0))
		lease := 10 * time.Second
		if got := mustClaim(t, s, "old", t0, lease, 5); len(got) != 1 {
			t.Fatalf("old claimed %d", len(got))
		}
		// Lease still held: nothing for the new owner.
		if got := mustClaim(t, s, "new", t0.Add(lease-time.Nanosecond), lease, 5); len(got) != 0 {
			t.Fatalf("claimed a live lease: %v", ids(got))
		}
		got := mustClaim(t, s, "new", t0.Add(lease), lease, 5)
		if len(got) != 1 || got[0].LeaseOwner != "new" || !got[0].FirstSeen.Equal(t0) {
			t.Fatalf("reclaim %+v", got)
		}
		// The old owner's late result is stale and changes nothing.
		r := mustComplete(t, s, Completion{ID: "d1", Owner: "old", Kind: KindReschedule, At: t0.Add(11 * time.Second),
			Attempt: 1, RunAt: t0.Add(time.Hour), RecordAttempt: true})
		if r != (CompleteResult{Stale: 1}) {
			t.Fatalf("stale complete %+v", r)
		}
		d := mustGet(t, s, "d1")
		if d.State != StateLeased || d.LeaseOwner != "new" || d.Attempt != 0 || !d.RunAt.Equal(t0) {
			t.Fatalf("after stale complete %+v", d)
		}
		if h, _ := s.Attempts(context.Background(), "d1"); len(h) != 0 {
			t.Fatalf("stale completion recorded history %+v", h)
		}
		r = mustComplete(t, s, Completion{ID: "d1", Owner: "new", Kind: KindAck, At: t0.Add(12 * time.Second), Attempt: 1})
		if r != (CompleteResult{Applied: 1}) {
			t.Fatalf("new owner complete %+v", r)
		}
		// A completion for an unknown id is stale too, not an error.
		if r := mustComplete(t, s, Completion{ID: "ghost", Owner: "new", Kind: KindAck}); r != (CompleteResult{Stale: 1}) {
			t.Fatalf("ghost complete %+v", r)
		}
		return s
	})
}

// TestMixedBatchKeepsOrder: one Complete batch mixes acks (fresh, stale,
// an id acked twice) with a hold and a reschedule of the same ids; each
// delivery's completions apply in batch order, the stale ones change
// nothing and record no attempt, and the history lists the applied
// attempts in order.
func TestMixedBatchKeepsOrder(t *testing.T) {
	forEach(t, func(t *testing.T, s Store, _ func(Store) Store) Store {
		mustEnqueue(t, s, delivery("a", t0), delivery("b", t0), delivery("c", t0), delivery("d", t0))
		if got := mustClaim(t, s, "o", t0, time.Minute, 4); len(got) != 4 {
			t.Fatalf("claimed %d", len(got))
		}
		at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
		r := mustComplete(t, s,
			Completion{ID: "a", Owner: "o", Kind: KindAck, At: at(1), Attempt: 1, Status: 200, RecordAttempt: true},
			Completion{ID: "b", Owner: "o", Kind: KindHold, At: at(2), Attempt: 1, RunAt: at(500), LeaseUntil: at(90_000),
				LastError: "HTTP 503", Status: 503, RecordAttempt: true},
			Completion{ID: "c", Owner: "other", Kind: KindAck, At: at(3), Attempt: 1, RecordAttempt: true}, // not its lease
			Completion{ID: "a", Owner: "o", Kind: KindAck, At: at(4), Attempt: 2, RecordAttempt: true},     // already delivered
			Completion{ID: "b", Owner: "o", Kind: KindAck, At: at(5), Attempt: 2, Status: 201, RecordAttempt: true},
			Completion{ID: "d", Owner: "o", Kind: KindReschedule, At: at(6), Attempt: 1, RunAt: at(700), Status: 500,
				LastError: "HTTP 500", RecordAttempt: true},
			Completion{ID: "c", Owner: "o", Kind: KindAck, At: at(7), Attempt: 1, Status: 202, RecordAttempt: true},
		)
		if r != (CompleteResult{Applied: 5, Stale: 2}) {
			t.Fatalf("complete %+v, want 5 applied, 2 stale", r)
		}
		for _, w := range []struct {
			id      string
			state   State
			attempt int
		}{{"a", StateDelivered, 1}, {"b", StateDelivered, 2}, {"c", StateDelivered, 1}, {"d", StateReady, 1}} {
			if d := mustGet(t, s, w.id); d.State != w.state || d.Attempt != w.attempt || d.LeaseOwner != "" {
				t.Errorf("%s: %s attempt %d owner %q; want %s attempt %d, no owner", w.id, d.State, d.Attempt, d.LeaseOwner, w.state, w.attempt)
			}
		}
		for id, want := range map[string][]int{"a": {200}, "b": {503, 201}, "c": {202}, "d": {500}} {
			h, err := s.Attempts(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}
			var got []int
			for _, a := range h {
				got = append(got, a.Status)
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("%s: attempt statuses %v, want %v", id, got, want)
			}
		}
		return s
	})
}

// TestCompleteClaim: given a delivery whose lease has run out, one due
// and one not due, when one call acks the first, reschedules a fourth to
// now and claims, then the transitions are written before the claim (the
// acked delivery is not handed out again, the rescheduled one is), and
// the not-due one stays.
func TestCompleteClaim(t *testing.T) {
	forEach(t, func(t *testing.T, s Store, _ func(Store) Store) Store {
		ctx := context.Background()
		lease := 10 * time.Second
		mustEnqueue(t, s, delivery("a", t0), delivery("d", t0))
		if got := mustClaim(t, s, "o", t0, lease, 5); len(got) != 2 {
			t.Fatalf("claimed %v", ids(got))
		}
		now := t0.Add(lease) // a's and d's leases have run out
		mustEnqueue(t, s, delivery("b", t0.Add(time.Second)), delivery("c", now.Add(time.Second)))
		res, got, err := s.CompleteClaim(ctx, []Completion{
			{ID: "a", Owner: "o", Kind: KindAck, At: now, Attempt: 1, Status: 200, RecordAttempt: true},
			{ID: "d", Owner: "o", Kind: KindReschedule, At: now, Attempt: 1, RunAt: now, Status: 500, RecordAttempt: true},
		}, "n", now, lease, 5)
		if err != nil {
			t.Fatal(err)
		}
		if res != (CompleteResult{Applied: 2}) {
			t.Fatalf("complete %+v, want 2 applied", res)
		}
		if fmt.Sprint(ids(got)) != "[b d]" {
			t.Fatalf("claimed %v, want [b d] (run_at order; a delivered, c not due)", ids(got))
		}
		if d := mustGet(t, s, "a"); d.State != StateDelivered {
			t.Fatalf("a: %s, want delivered", d.State)
		}
		if d := mustGet(t, s, "d"); d.State != StateLeased || d.LeaseOwner != "n" || d.Attempt != 1 {
			t.Fatalf("d: %s by %q attempt %d, want leased by n after attempt 1", d.State, d.LeaseOwner, d.Attempt)
		}
		// Limit 0 only completes; no completions only claims.
		res, got, err = s.CompleteClaim(ctx, []Completion{{ID: "b", Owner: "n", Kind: KindRelease, At: now}}, "n", now, lease, 0)
		if err != nil || res != (CompleteResult{Applied: 1}) || len(got) != 0 {
			t.Fatalf("limit 0: %+v, %v, %v", res, ids(got), err)
		}
		res, got, err = s.CompleteClaim(ctx, nil, "m", now, lease, 5)
		if err != nil || res != (CompleteResult{}) || fmt.Sprint(ids(got)) != "[b]" {
			t.Fatalf("no completions: %+v, %v, %v; want b claimed", res, ids(got), err)
		}
		return s
	})
}

// TestCompleteClaimFailureRollsBack: given two leased deliveries and one
// due, when the store fails on the second completion, an ack (a trigger
// raises an error), then the call fails and nothing of it stays: the
// first completion, a reschedule written by another statement, is rolled
// back and nothing is claimed.
func TestCompleteClaimFailureRollsBack(t *testing.T) {
	forEach(t, func(t *testing.T, s Store, _ func(Store) Store) Store {
		ctx := context.Background()
		var err error
		switch st := s.(type) {
		case *SQLite:
			_, err = st.DB().ExecContext(ctx, `CREATE TRIGGER boom BEFORE UPDATE ON deliveries
				WHEN NEW.id = 'boom' AND NEW.state = 'delivered' BEGIN SELECT RAISE(ABORT, 'boom'); END`)
		case *Postgres:
			_, err = st.Pool().Exec(ctx, `CREATE FUNCTION boom() RETURNS trigger LANGUAGE plpgsql AS
				$$ BEGIN RAISE EXCEPTION 'boom'; END $$`)
			if err == nil {
				_, err = st.Pool().Exec(ctx, `CREATE TRIGGER boom BEFORE UPDATE ON deliveries FOR EACH ROW
					WHEN (NEW.id = 'boom' AND NEW.state = 'delivered') EXECUTE FUNCTION boom()`)
			}
		default:
			t.Skip("no way to make this store fail mid-transaction")
		}
		if err != nil {
			t.Fatal(err)
		}
		mustEnqueue(t, s, delivery("a", t0), delivery("boom", t0.Add(time.Millisecond)), delivery("c", t0.Add(2*time.Millisecond)))
		if got := mustClaim(t, s, "o", t0.Add(time.Millisecond), time.Minute, 5); fmt.Sprint(ids(got)) != "[a boom]" {
			t.Fatalf("claimed %v", ids(got))
		}
		now := t0.Add(time.Second)
		_, got, err := s.CompleteClaim(ctx, []Completion{
			{ID: "a", Owner: "o", Kind: KindReschedule, At: now, Attempt: 1, RunAt: now, Status: 500, RecordAttempt: true},
			{ID: "boom", Owner: "o", Kind: KindAck, At: now, Attempt: 1, RecordAttempt: true},
		}, "n", now, time.Minute, 5)
		if err == nil || !strings.Contains(err.Error(), "boom") {
			t.Fatalf("err %v, want the trigger's", err)
		}
		if len(got) != 0 {
			t.Fatalf("a failed call handed out %v", ids(got))
		}
		if d := mustGet(t, s, "a"); d.State != StateLeased || d.LeaseOwner != "o" {
			t.Fatalf("a: %s by %q, want still leased by o (its reschedule rolled back)", d.State, d.LeaseOwner)
		}
		if d := mustGet(t, s, "c"); d.State != StateReady {
			t.Fatalf("c: %s, want still ready (no claim)", d.State)
		}
		if h, _ := s.Attempts(ctx, "a"); len(h) != 0 {
			t.Fatalf("a's rolled-back reschedule left history %+v", h)
		}
		return s
	})
}

// TestCompleteClaimInvalidChangesNothing: an invalid completion or limit
// fails the whole call before anything is written or claimed.
func TestCompleteClaimInvalidChangesNothing(t *testing.T) {
	forEach(t, func(t *testing.T, s Store, _ func(Store) Store) Store {
		ctx := context.Background()
		mustEnqueue(t, s, delivery("a", t0), delivery("b", t0))
		if got := mustClaim(t, s, "o", t0, time.Minute, 1); len(got) != 1 {
			t.Fatalf("claimed %v", ids(got))
		}
		good := Completion{ID: "a", Owner: "o", Kind: KindAck, At: t0, Attempt: 1}
		for name, call := range map[string]func() error{
			"empty id": func() error {
				_, _, err := s.CompleteClaim(ctx, []Completion{good, {Owner: "o", Kind: KindAck, At: t0}}, "o", t0, time.Minute, 5)
				return err
			},
			"negative limit": func() error {
				_, _, err := s.CompleteClaim(ctx, []Completion{good}, "o", t0, time.Minute, -1)
				return err
			},
			"no owner": func() error {
				_, _, err := s.CompleteClaim(ctx, []Completion{good}, "", t0, time.Minute, 5)
				return err
			},
		} {
			if err := call(); err == nil {
				t.Errorf("%s: no error", name)
			}
		}
		if c := mustCounts(t, s, t0); c.Leased != 1 || c.Ready != 1 || c.Delivered != 0 {
			t.Fatalf("after invalid calls: %+v, want 1 leased, 1 ready", c)
		}
		return s
	})
}

func TestRescheduleSurvivesReopen(t *testing.T) {
	forEach(t, func(t *testing.T, s Store, reopen func(Store) Store) Store {
		ctx := context.Background()
		mustEnqueue(t, s, delivery("d1", t0), delivery("d2", t0.Add(time.Second)))
		mustClaim(t, s, "w1", t0.Add(2*time.Second), time.Minute, 10)
		next := t0.Add(17*time.Second + 123456789)
		mustComplete(t, s,
			Completion{ID: "d1", Owner: "w1", Kind: KindReschedule, At: t0.Add(3 * time.Second), Attempt: 2,
				RunAt: next, PrevDelay: 4*time.Second + 7, LastError: "503 Service Unavailable", Status: 503,
				Started: t0.Add(2 * time.Second), RecordAttempt: true},
		)
		want := mustGet(t, s, "d1")
		if want.State != StateReady || want.Attempt != 2 || !want.RunAt.Equal(next) || want.PrevDelay != 4*time.Second+7 ||
			want.LastError != "503 Service Unavailable" || want.LeaseOwner != "" {
			t.Fatalf("after reschedule %+v", want)
		}
		before, err := s.RunAts(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(before) != 2 || !before["d1"].Equal(next) || !before["d2"].Equal(t0.Add(time.Second)) {
			t.Fatalf("run_ats %v", before)
		}
		if reopen == nil {
			return s // not durable: nothing more to check
		}
		s = reopen(s)
		after, err := s.RunAts(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(after) != len(before) {
			t.Fatalf("run_ats after reopen %v, before %v", after, before)
		}
		for id, at := range before {
			if !after[id].Equal(at) {
				t.Fatalf("%s run_at %v after reopen, was %v", id, after[id], at)
			}
		}
		got := mustGet(t, s, "d1")
		if !got.RunAt.Equal(want.RunAt) || got.Attempt != want.Attempt || got.PrevDelay != want.PrevDelay ||
			got.LastError != want.LastError || got.State != want.State || !got.FirstSeen.Equal(want.FirstSeen) {
			t.Fatalf("after reopen %+v, want %+v", got, want)
		}
		// d2 is still leased by w1 across the restart; its lease, not the restart, decides.
		if d2 := mustGet(t, s, "d2"); d2.State != StateLeased || d2.LeaseOwner != "w1" {
			t.Fatalf("d2 after reopen %+v", d2)
		}
		hist, err := s.Attempts(ctx, "d1")
		if err != nil || len(hist) != 1 || hist[0].Ordinal != 2 || hist[0].Status != 503 {
			t.Fatalf("history after reopen %+v %v", hist, err)
		}
		return s
	})
}

func TestDeadLetter(t *testing.T) {
	forEach(t, func(t *testing.T, s Store, _ func(Store) Store) Store {
		ctx := context.Background()
		mustEnqueue(t, s, delivery("evt-9:acme-0", t0))
		mustClaim(t, s, "w1", t0, time.Minute, 1)
		deadAt := t0.Add(2 * time.Second)
		mustComplete(t, s, Completion{ID: "evt-9:acme-0", Owner: "w1", Kind: KindDeadLetter, At: deadAt, Attempt: 1,
			Reason: "permanent", LastError: "422 Unprocessable Entity", Status: 422, Started: t0, RecordAttempt: true})
		dl, err := s.DeadLetters(ctx, DLQFilter{Reason: "permanent"})
		if err != nil {
			t.Fatal(err)
		}
		want := DeadLetter{ID: "evt-9:acme-0", Event: "evt-9", Partner: "acme-0", Cohort: "acme", Reason: "permanent",
			LastError: "422 Unprocessable Entity", Attempts: 1, Created: t0, FirstSeen: t0, DeadAt: deadAt}
		if len(dl) != 1 || string(dl[0].Payload) != `{"id":"evt-9:acme-0"}` {
			t.Fatalf("dead letters %+v", dl)
		}
		want.Payload = dl[0].Payload
		if !reflect.DeepEqual(dl[0], want) {
			t.Fatalf("dead letter %+v, want %+v", dl[0], want)
		}
		if d := mustGet(t, s, "evt-9:acme-0"); d.State != StateDead {
			t.Fatalf("delivery state %v", d.State)
		}
		if c := mustCounts(t, s, deadAt); c != (Counts{Dead: 1}) {
			t.Fatalf("counts %+v", c)
		}
		// Other reasons and partners do not match; a re-enqueue is a no-op.
		for _, f := range []DLQFilter{{Reason: "max-attempts"}, {Partner: "other"}} {
			if dl, _ := s.DeadLetters(ctx, f); len(dl) != 0 {
				t.Fatalf("filter %+v matched %d", f, len(dl))
			}
		}
		if n, _ := s.Enqueue(ctx, []Delivery{delivery("evt-9:acme-0", t0)}); n != 0 {
			t.Fatalf("re-enqueue of a dead delivery accepted")
		}
		return s
	})
}

// TestReject: deliveries rejected at a full queue go straight to the DLQ
// as never-attempted dead letters, count as dead, replay like any other
// and respect the idempotency key.
func TestReject(t *testing.T) {
	forEach(t, func(t *testing.T, s Store, reopen func(Store) Store) Store {
		ctx := context.Background()
		mustEnqueue(t, s, delivery("live:acme-0", t0))
		at := t0.Add(3 * time.Second)
		seen := delivery("r-2:acme-1", t0.Add(2*time.Second))
		seen.Partner, seen.FirstSeen = "acme-1", t0.Add(2500*time.Millisecond)
		moved := delivery("r-0:acme-0", t0)
		moved.Partner = "elsewhere"
		batch := []Delivery{
			delivery("r-0:acme-0", t0),
			delivery("r-1:acme-0", t0.Add(time.Second)),
			seen,                        // first_seen is carried over
			delivery("live:acme-0", t0), // already queued: ignored
			moved,                       // same id earlier in the batch: ignored
			delivery("r-1:acme-0", t0),  // likewise
		}
		n, err := s.Reject(ctx, batch, "queue-full", at)
		if err != nil || n != 3 {
			t.Fatalf("reject: %d, %v; want 3", n, err)
		}
		if reopen != nil {
			s = reopen(s) // the rejection is durable
		}
		dl, err := s.DeadLetters(ctx, DLQFilter{Reason: "queue-full"})
		if err != nil {
			t.Fatal(err)
		}
		want := []DeadLetter{
			{ID: "r-0:acme-0", Event: "r-0", Partner: "acme-0", Cohort: "acme", Reason: "queue-full", Created: t0, DeadAt: at},
			{ID: "r-1:acme-0", Event: "r-1", Partner: "acme-0", Cohort: "acme", Reason: "queue-full", Created: t0.Add(time.Second), DeadAt: at},
			{ID: "r-2:acme-1", Event: "r-2", Partner: "acme-1", Cohort: "acme", Reason: "queue-full", Created: t0.Add(2 * time.Second),
				FirstSeen: t0.Add(2500 * time.Millisecond), DeadAt: at},
		}
		if len(dl) != len(want) {
			t.Fatalf("dead letters %+v, want %d", dl, len(want))
		}
		for i := range want {
			want[i].Payload = []byte(`{"id":"` + want[i].ID + `"}`)
			if !reflect.DeepEqual(dl[i], want[i]) {
				t.Fatalf("dead letter %d: %+v, want %+v", i, dl[i], want[i])
			}
		}
		for _, w := range want {
			if d := mustGet(t, s, w.ID); d.State != StateDead || d.Attempt != 0 || d.LastError != "" || d.LeaseOwner != "" {
				t.Fatalf("rejected row %+v", d)
			}
		}
		if d := mustGet(t, s, "live:acme-0"); d.State != StateReady {
			t.Fatalf("queued delivery touched by reject: %+v", d)
		}
		if c := mustCounts(t, s, at); c != (Counts{Ready: 1, Dead: 3}) {
			t.Fatalf("counts after reject %+v", c)
		}
		if a, _ := s.Attempts(ctx, "r-0:acme-0"); len(a) != 0 {
			t.Fatalf("a rejected delivery has attempts %+v", a)
		}
		// Rejecting or enqueueing a known id again changes nothing.
		if n, err := s.Reject(ctx, []Delivery{delivery("r-0:acme-0", t0)}, "queue-full", at.Add(time.Hour)); err != nil || n != 0 {
			t.Fatalf("duplicate reject: %d, %v", n, err)
		}
		if n, _ := s.Enqueue(ctx, []Delivery{delivery("r-0:acme-0", t0)}); n != 0 {
			t.Fatal("enqueue of a rejected delivery accepted")
		}
		if dl, _ := s.DeadLetters(ctx, DLQFilter{}); len(dl) != 3 || !dl[0].DeadAt.Equal(at) {
			t.Fatalf("dead letters after duplicates %+v", dl)
		}
		// Replay by reason: back to ready, due now, fresh attempt budget.
		replayAt := t0.Add(time.Hour)
		res, err := s.Replay(ctx, DLQFilter{Reason: "queue-full", Now: replayAt}, ReplayOptions{})
		if err != nil || res != (ReplayResult{Matched: 3, Moved: 3, Batches: 1}) {
			t.Fatalf("replay %+v, %v", res, err)
		}
		for _, w := range want {
			if d := mustGet(t, s, w.ID); d.State != StateReady || d.Attempt != 0 || !d.RunAt.Equal(replayAt) {
				t.Fatalf("replayed %+v", d)
			}
		}
		if c := mustCounts(t, s, replayAt); c != (Counts{Ready: 4}) {
			t.Fatalf("counts after replay %+v", c)
		}
		got := mustClaim(t, s, "w1", replayAt, time.Minute, 10)
		if fmt.Sprint(ids(got)) != "[live:acme-0 r-0:acme-0 r-1:acme-0 r-2:acme-1]" {
			t.Fatalf("claimed after replay %v", ids(got))
		}
		return s
	})
}

// TestRejectInvalidChangesNothing: a bad Reject call is refused whole.
func TestRejectInvalidChangesNothing(t *testing.T) {
	forEach(t, func(t *testing.T, s Store, _ func(Store) Store) Store {
		ctx := context.Background()
		good := delivery("ok:acme-0", t0)
		tooMany := make([]Delivery, MaxRejectBatch+1)
		for i := range tooMany {
			tooMany[i] = delivery(fmt.Sprintf("many-%05d:acme-0", i), t0)
		}
		cases := []struct {
			name   string
			ds     []Delivery
			reason string
			at     time.Time
		}{
			{"no reason", []Delivery{good}, "", t0},                         // reason is required
			{"zero time", []Delivery{good}, "queue-full", time.Time{}},      // dead_at is required
			{"empty id", []Delivery{good, {Created: t0}}, "queue-full", t0}, // one bad row spoils the batch
			{"no times", []Delivery{good, {ID: "x"}}, "queue-full", t0},     // neither created nor run_at
			{"batch too large", tooMany, "queue-full", t0.Add(time.Second)}, // bounded batch
		}
		for _, c := range cases {
			if n, err := s.Reject(ctx, c.ds, c.reason, c.at); err == nil {
				t.Fatalf("%s: accepted (%d)", c.name, n)
			}
		}
		if c := mustCounts(t, s, t0); c != (Counts{}) {
			t.Fatalf("refused rejects wrote rows: %+v", c)
		}
		if n, err := s.Reject(ctx, nil, "queue-full", t0); err != nil || n != 0 {
			t.Fatalf("empty reject: %d, %v", n, err)
		}
		return s
	})
}

func TestDeadLettersOlderThan(t *testing.T) {
	forEach(t, func(t *testing.T, s Store, _ func(Store) Store) Store {
		ctx := context.Background()
		makeDead(t, s, "old", 3, "max-attempts", t0)
		makeDead(t, s, "new", 2, "max-attempts", t0.Add(time.Hour))
		now := t0.Add(90 * time.Minute)
		cases := []struct {
			f    DLQFilter
			want int
		}{
			{DLQFilter{}, 5}, // everything
			{DLQFilter{OlderThan: time.Hour, Now: now}, 3},                      // only the first three died an hour before now
			{DLQFilter{OlderThan: time.Hour, Now: now, Limit: 2}, 2},            // limit bounds the list
			{DLQFilter{Reason: "max-attempts", Partner: "acme-0", Limit: 0}, 5}, // both fields match all
		}
		for _, c := range cases {
			got, err := s.DeadLetters(ctx, c.f)
			if err != nil || len(got) != c.want {
				t.Fatalf("filter %+v: %d rows, %v; want %d", c.f, len(got), err, c.want)
			}
		}
		if _, err := s.DeadLetters(ctx, DLQFilter{OlderThan: time.Hour}); err == nil {
			t.Fatal("older_than without now accepted")
		}
		return s
	})
}

// TestClockRecorded: the drill clock a live run records survives a reopen,
// and turns the store's drill-clock instants back into wall instants.
func TestClockRecorded(t *testing.T) {
	forEach(t, func(t *testing.T, s Store, reopen func(Store) Store) Store {
		ctx := context.Background()
		if c, err := s.Clock(ctx); err != nil || c != (Clock{}) {
			t.Fatalf("fresh store: clock %+v, %v; want none", c, err)
		}
		for _, bad := range []Clock{{}, {Start: t0}, {Start: t0, Speed: -1}} {
			if err := s.SetClock(ctx, bad); err == nil {
				t.Errorf("SetClock(%+v) accepted", bad)
			}
		}
		if err := s.SetClock(ctx, Clock{Start: t0, Speed: 2}); err != nil {
			t.Fatal(err)
		}
		want := Clock{Start: t0.Add(time.Second), Speed: 60}
		if err := s.SetClock(ctx, want); err != nil { // a later run's replaces it
			t.Fatal(err)
		}
		if reopen != nil {
			s = reopen(s)
		}
		c, err := s.Clock(ctx)
		if err != nil || !c.Start.Equal(want.Start) || c.Speed != want.Speed {
			t.Fatalf("clock %+v, %v; want %+v", c, err, want)
		}
		// A minute of drill time after start is one second of wall time.
		drillAt := want.Start.Add(time.Minute)
		if w := c.Wall(drillAt); !w.Equal(want.Start.Add(time.Second)) {
			t.Errorf("Wall(start+1m) = %v, want start+1s", w)
		}
		if at := c.At(c.Wall(drillAt)); !at.Equal(drillAt) {
			t.Errorf("At(Wall(t)) = %v, want %v", at, drillAt)
		}
		if w := c.Wall(time.Time{}); !w.IsZero() {
			t.Errorf("Wall(zero) = %v, want zero (unset stays unset)", w)
		}
		return s
	})
}

func TestRelease(t *testing.T) {
	forEach(t, func(t *testing.T, s Store, _ func(Store) Store) Store {
		ctx := context.Background()
		mustEnqueue(t, s, delivery("a1", t0), delivery("a2", t0.Add(time.Second)), delivery("b1", t0.Add(2*time.Second)), delivery("c1", t0))
		mustClaim(t, s, "A", t0.Add(time.Second), time.Minute, 2) // a1, c1 (run_at t0)
		mustClaim(t, s, "B", t0.Add(5*time.Second), time.Minute, 2)
		before, _ := s.RunAts(ctx)
		n, err := s.Release(ctx, "A")
		if err != nil || n != 2 {
			t.Fatalf("release A: %d, %v", n, err)
		}
		after, _ := s.RunAts(ctx)
		for id, at := range before {
			if !after[id].Equal(at) {
				t.Fatalf("%s run_at moved from %v to %v", id, at, after[id])
			}
		}
		for _, id := range []string{"a1", "c1"} {
			if d := mustGet(t, s, id); d.State != StateReady || d.Attempt != 0 || d.LeaseOwner != "" {
				t.Fatalf("%s after release %+v", id, d)
			}
		}
		if d := mustGet(t, s, "a2"); d.State != StateLeased || d.LeaseOwner != "B" {
			t.Fatalf("B's lease touched: %+v", d)
		}
		// A per-delivery release through Complete keeps run_at and attempt too.
		r := mustComplete(t, s, Completion{ID: "a2", Owner: "B", Kind: KindRelease, At: t0.Add(6 * time.Second), Attempt: 9})
		if d := mustGet(t, s, "a2"); r.Applied != 1 || d.State != StateReady || d.Attempt != 0 || !d.RunAt.Equal(t0.Add(time.Second)) {
			t.Fatalf("release completion %+v -> %+v", r, d)
		}
		return s
	})
}

// makeDead enqueues n deliveries and dead-letters them with reason, dying
// one millisecond apart from deadAt on.
func makeDead(t *testing.T, s Store, prefix string, n int, reason string, deadAt time.Time) []string {
	t.Helper()
	var ds []Delivery
	for i := range n {
		ds = append(ds, delivery(fmt.Sprintf("%s-%03d:acme-0", prefix, i), deadAt.Add(-time.Minute)))
	}
	mustEnqueue(t, s, ds...)
	owner := "dlq-maker-" + prefix
	got := mustClaim(t, s, owner, deadAt, time.Minute, n)
	if len(got) != n {
		t.Fatalf("claimed %d of %d", len(got), n)
	}
	var cs []Completion
	for i, d := range got {
		cs = append(cs, Completion{ID: d.ID, Owner: owner, Kind: KindDeadLetter, At: deadAt.Add(time.Duration(i) * time.Millisecond),
			Attempt: 6, Reason: reason, LastError: "503"})
	}
	if r := mustComplete(t, s, cs...); r.Applied != n {
		t.Fatalf("dead-lettered %d of %d", r.Applied, n)
	}
	return ids(got)
}

func TestReplay(t *testing.T) {
	forEach(t, func(t *testing.T, s Store, _ func(Store) Store) Store {
		ctx := context.Background()
		maxed := makeDead(t, s, "m", 25, "max-attempts", t0)
		makeDead(t, s, "p", 5, "permanent", t0)
		clock := t0.Add(time.Hour)
		var slept []time.Duration
		res, err := s.Replay(ctx, DLQFilter{Reason: "max-attempts"}, ReplayOptions{
			Batch: 10, Rate: 2, Who: "ops@test",
			Now:   func() time.Time { return clock },
			Sleep: func(d time.Duration) { slept = append(slept, d); clock = clock.Add(d) },
		})
		if err != nil {
			t.Fatal(err)
		}
		if res != (ReplayResult{Matched: 25, Moved: 25, Batches: 3}) {
			t.Fatalf("replay %+v", res)
		}
		// Rate 2 batches/s: a 500ms pause between batches, none before the first.
		if fmt.Sprint(slept) != "[500ms 500ms]" {
			t.Fatalf("slept %v", slept)
		}
		audit, err := s.Audit(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(audit) != 3 {
			t.Fatalf("audit %+v", audit)
		}
		for i, want := range []int{10, 10, 5} {
			a := audit[i]
			at := t0.Add(time.Hour + time.Duration(i)*500*time.Millisecond)
			if a.Count != want || a.Batch != i+1 || a.DryRun || a.Who != "ops@test" || !a.At.Equal(at) ||
				a.Filter != `{"reason":"max-attempts"}` {
				t.Fatalf("audit[%d] %+v", i, a)
			}
		}
		left, _ := s.DeadLetters(ctx, DLQFilter{})
		if len(left) != 5 {
			t.Fatalf("%d dead letters left", len(left))
		}
		for _, d := range left {
			if d.Reason != "permanent" {
				t.Fatalf("left %+v", d)
			}
		}
		for i, id := range maxed {
			d := mustGet(t, s, id)
			batchAt := t0.Add(time.Hour + time.Duration(i/10)*500*time.Millisecond)
			if d.State != StateReady || d.Attempt != 0 || !d.RunAt.Equal(batchAt) || d.LeaseOwner != "" {
				t.Fatalf("replayed %s: %+v", id, d)
			}
		}
		if c := mustCounts(t, s, clock); c != (Counts{Ready: 25, Dead: 5}) {
			t.Fatalf("counts after replay %+v", c)
		}
		// Replayed deliveries are claimable again under their old ids.
		got := mustClaim(t, s, "w9", clock, time.Minute, 100)
		if fmt.Sprint(ids(got)) != fmt.Sprint(maxed) {
			t.Fatalf("claimed after replay %v", ids(got))
		}
		return s
	})
}

func TestReplayDryRunAndLimit(t *testing.T) {
	forEach(t, func(t *testing.T, s Store, _ func(Store) Store) Store {
		ctx := context.Background()
		makeDead(t, s, "m", 25, "max-attempts", t0)
		now := func() time.Time { return t0.Add(time.Hour) }
		res, err := s.Replay(ctx, DLQFilter{Reason: "max-attempts"}, ReplayOptions{Batch: 10, DryRun: true, Who: "ops", Now: now})
		if err != nil || res != (ReplayResult{Matched: 25, Batches: 3}) {
			t.Fatalf("dry run %+v, %v", res, err)
		}
		if dl, _ := s.DeadLetters(ctx, DLQFilter{}); len(dl) != 25 {
			t.Fatalf("dry run moved: %d left", len(dl))
		}
		audit, _ := s.Audit(ctx)
		if len(audit) != 1 || !audit[0].DryRun || audit[0].Count != 25 {
			t.Fatalf("dry-run audit %+v", audit)
		}
		// Limit caps the total moved; Now falls back to the filter's.
		res, err = s.Replay(ctx, DLQFilter{Reason: "max-attempts", Limit: 7, Now: t0.Add(time.Hour)}, ReplayOptions{Batch: 5})
		if err != nil || res != (ReplayResult{Matched: 7, Moved: 7, Batches: 2}) {
			t.Fatalf("limited replay %+v, %v", res, err)
		}
		if dl, _ := s.DeadLetters(ctx, DLQFilter{}); len(dl) != 18 {
			t.Fatalf("%d left after limited replay", len(dl))
		}
		bad := []struct {
			f DLQFilter
			o ReplayOptions
		}{
			{DLQFilter{}, ReplayOptions{}},                                 // no clock at all
			{DLQFilter{Now: t0}, ReplayOptions{Batch: MaxReplayBatch + 1}}, // batch too large
			{DLQFilter{Now: t0}, ReplayOptions{Rate: 1e-9}},                // rate too slow to bound
			{DLQFilter{Now: t0, OlderThan: -time.Second}, ReplayOptions{}}, // negative age
		}
		for _, b := range bad {
			if _, err := s.Replay(ctx, b.f, b.o); err == nil {
				t.Fatalf("replay %+v %+v accepted", b.f, b.o)
			}
		}
		return s
	})
}

func TestInvalidInputChangesNothing(t *testing.T) {
	forEach(t, func(t *testing.T, s Store, _ func(Store) Store) Store {
		ctx := context.Background()
		mustEnqueue(t, s, delivery("d1", t0))
		mustClaim(t, s, "w1", t0, time.Minute, 1)
		badCompletions := []Completion{
			{ID: "d1", Owner: "w1"},                                   // no kind
			{ID: "d1", Owner: "w1", Kind: KindReschedule},             // reschedule without run_at
			{ID: "d1", Owner: "w1", Kind: KindDeadLetter},             // dead letter without reason
			{ID: "d1", Kind: KindAck},                                 // no owner
			{ID: "d1", Owner: "w1", Kind: KindAck, Attempt: -1},       // negative attempt
			{ID: "d1", Owner: "w1", Kind: CompletionKind(99), At: t0}, // unknown kind
		}
		for _, c := range badCompletions {
			// A valid ack first in the batch proves the batch is all or nothing.
			ok := Completion{ID: "d1", Owner: "w1", Kind: KindAck, Attempt: 1}
			if _, err := s.Complete(ctx, []Completion{ok, c}); err == nil {
				t.Fatalf("completion %+v accepted", c)
			}
		}
		if d := mustGet(t, s, "d1"); d.State != StateLeased {
			t.Fatalf("invalid batch changed state to %v", d.State)
		}
		badClaims := []struct {
			owner string
			lease time.Duration
			limit int
		}{
			{"", time.Second, 1},  // no owner
			{"w", 0, 1},           // no lease
			{"w", time.Second, 0}, // no limit
		}
		for _, c := range badClaims {
			if _, err := s.Claim(ctx, c.owner, t0, c.lease, c.limit); err == nil {
				t.Fatalf("claim %+v accepted", c)
			}
		}
		if _, err := s.Enqueue(ctx, []Delivery{{ID: "", Created: t0}}); err == nil {
			t.Fatal("empty id accepted")
		}
		if _, err := s.Enqueue(ctx, []Delivery{{ID: "x"}}); err == nil {
			t.Fatal("delivery without times accepted")
		}
		return s
	})
}

func TestOpen(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		dsn     string
		wantErr string // "" means it must open
	}{
		{"memory:", ""}, // the test store
		{"sqlite:" + filepath.Join(dir, "q.db"), ""},       // a file store
		{"bogus:x", "unknown store"},                       // unknown scheme
		{"postgres://u@192.0.2.10/db", "not a loopback"},   // routed to postgres, refused before connecting
		{"sqlite:", "needs a file path"},                   // no path
		{"nocolon", "want sqlite:PATH"},                    // no scheme
		{"memory:extra", "takes no argument"},              // junk after memory:
		{"sqlite:" + filepath.Join(dir, "q?x.db"), "path"}, // a ? would be read as DSN options
	}
	for _, c := range cases {
		s, err := Open(c.dsn)
		if c.wantErr == "" {
			if err != nil {
				t.Fatalf("Open(%q): %v", c.dsn, err)
			}
			s.Close()
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.wantErr) {
			t.Fatalf("Open(%q) error %v, want one containing %q", c.dsn, err, c.wantErr)
		}
	}
}

func TestClosedStoreErrors(t *testing.T) {
	forEach(t, func(t *testing.T, s Store, reopen func(Store) Store) Store {
		s.Close()
		if _, err := s.Counts(context.Background(), t0); err == nil {
			t.Fatal("counts on a closed store succeeded")
		}
		if reopen != nil {
			return reopen(NewMemory()) // fresh handle for forEach to close
		}
		return NewMemory()
	})
}
