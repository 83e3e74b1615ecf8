package queue

import (
	"context"
	"testing"
	"time"
)

// TestObserve checks Sample, LeasedDue and Outcomes on every engine
// against one small queue with a delivery in each state.
func TestObserve(t *testing.T) {
	forEach(t, func(t *testing.T, s Store, _ func(Store) Store) Store {
		ctx := context.Background()
		sec := time.Second
		at := func(d time.Duration) time.Time { return t0.Add(d) }
		ds := []Delivery{
			delivery("e1:acme-0", at(0)),        // acked
			delivery("e2:acme-0", at(0)),        // dead-lettered
			delivery("e3:acme-0", at(0)),        // rescheduled: delayed
			delivery("e4:acme-0", at(0)),        // leased, due
			delivery("e5:acme-0", at(2*sec)),    // ready, due
			delivery("e6:acme-0", at(1000*sec)), // created later than now
		}
		held := delivery("e7:held-0", at(1*sec)) // due, but its partner is held
		held.Partner = "held-0"
		mustEnqueue(t, s, append(ds, held)...)
		claimed := mustClaim(t, s, "w", at(3*sec), time.Minute, 4) // e1..e4 (run_at 0)
		if len(claimed) != 4 {
			t.Fatalf("claimed %v", ids(claimed))
		}
		mustComplete(t, s,
			Completion{ID: "e1:acme-0", Owner: "w", Kind: KindAck, At: at(5 * sec), Attempt: 1},
			Completion{ID: "e2:acme-0", Owner: "w", Kind: KindDeadLetter, At: at(6 * sec), Attempt: 3, Reason: "max-attempts"},
			Completion{ID: "e3:acme-0", Owner: "w", Kind: KindReschedule, At: at(7 * sec), Attempt: 1, RunAt: at(100 * sec)},
		)
		// Known ids enqueued again are ignored and move no count (SQLite
		// reads the number of rows off the largest rowid).
		if n, err := s.Enqueue(ctx, []Delivery{ds[0], ds[1], ds[5]}); err != nil || n != 0 {
			t.Fatalf("enqueue of known ids: accepted %d, err %v; want 0, nil", n, err)
		}
		now := at(10 * sec)
		sm, err := s.Sample(ctx, now, []string{"held-0"})
		if err != nil {
			t.Fatal(err)
		}
		want := Sample{Ready: 1, InFlight: 1, Delayed: 2, Delivered: 1, Dead: 1,
			OldestReady: at(0).UTC(), OldestDelayed: at(0).UTC()}
		if sm != want {
			t.Errorf("Sample = %+v\nwant     %+v", sm, want)
		}
		// Without a held partner, e7 is ready and the oldest delayed is e3.
		sm, err = s.Sample(ctx, now, nil)
		if err != nil {
			t.Fatal(err)
		}
		want = Sample{Ready: 2, InFlight: 1, Delayed: 1, Delivered: 1, Dead: 1,
			OldestReady: at(0).UTC(), OldestDelayed: at(0).UTC()}
		if sm != want {
			t.Errorf("Sample without held = %+v\nwant                 %+v", sm, want)
		}
		// Before anything is due or created: all zero but the totals.
		sm, err = s.Sample(ctx, at(-sec), nil)
		if err != nil {
			t.Fatal(err)
		}
		if want := (Sample{Delivered: 1, Dead: 1}); sm != want {
			t.Errorf("Sample before anything = %+v", sm)
		}
		lds, err := s.LeasedDue(ctx, now)
		if err != nil {
			t.Fatal(err)
		}
		if len(lds) != 1 || lds["acme-0"] != 1 {
			t.Errorf("LeasedDue = %v, want acme-0: 1", lds)
		}
		// Outcomes in pages of 3: every row once, in id order.
		var got []Outcome
		after := ""
		for {
			page, err := s.Outcomes(ctx, after, 3)
			if err != nil {
				t.Fatal(err)
			}
			if len(page) == 0 {
				break
			}
			got = append(got, page...)
			after = page[len(page)-1].ID
		}
		if len(got) != 7 {
			t.Fatalf("%d outcomes, want 7: %+v", len(got), got)
		}
		byID := map[string]Outcome{}
		for i, o := range got {
			if i > 0 && got[i-1].ID >= o.ID {
				t.Errorf("outcomes out of order: %s then %s", got[i-1].ID, o.ID)
			}
			byID[o.ID] = o
		}
		if o := byID["e1:acme-0"]; o.State != StateDelivered || !o.At.Equal(at(5*sec)) || !o.Created.Equal(at(0)) || o.Reason != "" || o.Partner != "acme-0" {
			t.Errorf("delivered outcome %+v", o)
		}
		if o := byID["e2:acme-0"]; o.State != StateDead || !o.At.Equal(at(6*sec)) || o.Reason != "max-attempts" || o.Attempt != 3 {
			t.Errorf("dead outcome %+v", o)
		}
		if o := byID["e3:acme-0"]; o.State != StateReady || o.Reason != "" {
			t.Errorf("pending outcome %+v", o)
		}
		if _, err := s.Outcomes(ctx, "", 0); err == nil {
			t.Error("Outcomes with limit 0: no error")
		}
		return s
	})
}
