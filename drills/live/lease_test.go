package live

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stormdrill/stormdrill/internal/testsuite"
	"github.com/stormdrill/stormdrill/model/runtime/dispatcher"
	"github.com/stormdrill/stormdrill/model/runtime/queue"
)

// leaseDrill has one subscriber and a 2s lease (1s of wall time at speed
// 2), shorter than the time its deliveries wait in a dispatcher's memory;
// PARTNER, GUARD and DISPATCHER say what they wait for. A renewal goes out
// when a third of the lease has passed, so the test process may stall for
// two thirds of it (667ms of wall time) before the other dispatcher can
// claim; with a 1s lease that was 333ms, and a stall at load 12 let it
// claim twice. The attempt timeout is far above the partner's answers: an
// attempt that timed out (a 300ms answer was late by 100ms of wall time
// under the race detector, at a 500ms timeout) is retried, and the partner
// counts the retry as a duplicate, which is not what the test looks for.
const leaseDrill = `
name = "lease"
mode = "live"
seed = 13
speed = 2
duration = "5s"
[source]
arrival = "constant"
rate = "1/s"
[[partners]]
name = "p"
count = 1
PARTNER
[policy.retry]
max_attempts = 20
base = "100ms"
cap = "100ms"
jitter = "none"
GUARD
[dispatcher]
workers = 4
attempt_timeout = "5s"
lease_timeout = "2s"
claim_batch = 32
DISPATCHER
`

// TestLeaseRenewalKeepsHeldDeliveriesFromASecondDispatcher runs two
// dispatchers (two owners, each with its own store handle) on one SQLite
// queue. One claims the deliveries and keeps them in memory, due, for
// longer than the lease: waiting for the partner's single slot, or for
// its open breaker. Its lease renewals keep the other from claiming and
// sending them as well: every delivery is attempted by one owner only,
// no completion is stale, no ordinal repeats and the partner sees no
// duplicate.
func TestLeaseRenewalKeepsHeldDeliveriesFromASecondDispatcher(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two dispatchers")
	}
	cases := []struct {
		name, partner, guard, dispatcher string
		deliveries                       int
	}{
		// one slot, 500ms answers: the 10th waits about 4.5s for the slot
		{"partner slot", `latency = { dist = "constant", value = "500ms" }`, "", "per_partner_concurrency = 1", 10},
		// down for 6s; the breaker opens at the first call and holds
		// everything until a probe after the outage, each probe 2.5s
		// after the last. 6s is longer than the dispatcher's start-up
		// under the race detector (its first call came up to 2.4s of
		// drill time in, at load 11; with a 2s outage the breaker never
		// opened)
		{"open breaker", `latency = { dist = "constant", value = "5ms" }
  [[partners.outages]]
  start = "0s"
  for = "6s"
  kind = "unavailable"`, `[policy.breaker]
trip = "consecutive"
threshold = 1
cooldown = "2500ms"
on_open = "hold"`, "", 10},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src := strings.NewReplacer("PARTNER", tc.partner, "GUARD", tc.guard, "DISPATCHER", tc.dispatcher).Replace(leaseDrill)
			r, st := startEnv(t, src)
			if n := enqueueEvents(t, r, st, tc.deliveries); n != tc.deliveries {
				t.Fatalf("enqueued %d", n)
			}
			// Drill time 0 (the outage's start) is now, when the
			// dispatchers start, not when the stores began to open.
			r.clock.Start = time.Now()
			r.srv.SetStart(r.clock.Start)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var wg sync.WaitGroup
			stats := make([]dispatcher.Stats, 2)
			errs := make([]error, 2)
			for i, owner := range []string{"owner-a", "owner-b"} {
				ost, err := queue.OpenSQLite(sqlitePath(t, r))
				if err != nil {
					t.Fatal(err)
				}
				defer ost.Close()
				wg.Add(1)
				go func() {
					defer wg.Done()
					cfg, err := r.d.DispatcherConfig(r.baseURL)
					if err != nil {
						errs[i] = err
						return
					}
					cfg.Store, cfg.Owner, cfg.Clock, cfg.Log = ost, owner, r.clock, logWriter{t}
					stats[i], errs[i] = dispatcher.Run(ctx, cfg)
				}()
				if i == 0 {
					// The first claims everything; the second comes up
					// while the first holds it all.
					testsuite.WaitFor(t, "the first dispatcher's claim", time.Minute, func() bool {
						c, err := st.Counts(ctx, r.clock.Now())
						return err == nil && c.Ready+c.Delayed == 0
					})
				}
			}
			c := waitTerminal(t, st, 30*time.Second)
			cancel()
			wg.Wait()
			for i, err := range errs {
				if err != nil {
					t.Fatalf("dispatcher %d: %v", i, err)
				}
			}
			if c.Delivered != int64(tc.deliveries) {
				t.Fatalf("store %+v: want all %d delivered", c, tc.deliveries)
			}
			var shared, repeated int
			if err := st.DB().QueryRow(`SELECT count(*) FROM (SELECT delivery_id FROM attempts
				GROUP BY delivery_id HAVING count(DISTINCT owner) > 1)`).Scan(&shared); err != nil {
				t.Fatal(err)
			}
			if err := st.DB().QueryRow(`SELECT count(*) FROM (SELECT delivery_id, ordinal FROM attempts
				GROUP BY delivery_id, ordinal HAVING count(*) > 1)`).Scan(&repeated); err != nil {
				t.Fatal(err)
			}
			var dups int64
			for _, s := range r.srv.Stats() {
				dups += s.Duplicates
			}
			stale, renewed := stats[0].Stale+stats[1].Stale, stats[0].Renewed+stats[1].Renewed
			if shared != 0 || repeated != 0 || dups != 0 || stale != 0 {
				t.Errorf("%d deliveries attempted by both owners, %d ordinals repeated, %d partner duplicates, %d stale completions: a lease ran out while its owner held the delivery",
					shared, repeated, dups, stale)
			}
			if renewed == 0 {
				t.Errorf("no lease was renewed: the drill exercised nothing")
			}
			t.Logf("stats a %+v, b %+v", stats[0], stats[1])
		})
	}
}
