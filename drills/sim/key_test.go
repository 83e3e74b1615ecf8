package sim

import (
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stormdrill/stormdrill/drills"
	"github.com/stormdrill/stormdrill/fakepartner"
	"github.com/stormdrill/stormdrill/model"
)

// deliveryKey hashes exactly the bytes of DeliveryID, without allocating.
func TestDeliveryKeyMatchesDeliveryID(t *testing.T) {
	tests := []struct {
		event      int64
		subscriber string
	}{
		{0, "acme-0"},                    // all padding
		{123, "acme-0"},                  // the design's example, evt-000123:acme-0
		{999_999, "healthy-199"},         // exactly six digits
		{1_000_000, "healthy-199"},       // seven: no padding, no truncation
		{-5, "x-1"},                      // the sign counts towards the width: -00005
		{-123_456, "x-1"},                // wider than the width with the sign
		{math.MaxInt64, "x-1"},           // the longest number
		{math.MinInt64, "x-1"},           // |MinInt64| does not fit an int64
		{42, ""},                         // empty subscriber
		{7, "ünïcode-3"},                 // bytes, not runes
		{1, "name:with:colons-and-more"}, // the subscriber is hashed as is
	}
	for _, tt := range tests {
		id := drills.DeliveryID(tt.event, tt.subscriber)
		if got, want := deliveryKey(tt.event, tt.subscriber), fakepartner.KeyHash(id); got != want {
			t.Errorf("deliveryKey(%d, %q) = %#x, want KeyHash(%q) = %#x", tt.event, tt.subscriber, got, id, want)
		}
	}
	var sink uint64
	if allocs := testing.AllocsPerRun(1000, func() { sink += deliveryKey(123456, "healthy-199") }); allocs != 0 {
		t.Errorf("deliveryKey allocates %v times, want 0", allocs)
	}
	_ = sink
}

// Bad data is a property of the delivery: in demo-bad-data, with or without
// transient errors and under several seeds, the permanent dead letters are
// exactly the deliveries whose key the partner's spec calls bad, each after
// one attempt; a good delivery is never dead-lettered as permanent.
func TestBadDataIsPerDelivery(t *testing.T) {
	tests := []struct {
		name      string
		seed      string
		transient string
	}{
		{"bundled", "1", "0"},                 // the drill as shipped
		{"another seed", "7", "0"},            // another bad set, same rule
		{"with transient errors", "1", "0.3"}, // retries of good deliveries do not turn bad
		{"another seed with transients", "11", "0.3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := loadDrill(t, "demo-bad-data.toml", map[string]string{"seed": tt.seed, "partners[0].transient_errors": tt.transient})
			r, run := runInternal(t, d)
			spec := &r.specs[0]
			var bad int64
			for e := int64(0); e < r.events; e++ {
				for _, si := range r.fanout {
					if spec.BadData(d.Seed, fakepartner.KeyHash(drills.DeliveryID(e, r.names[si]))) {
						bad++
					}
				}
			}
			s := run.Summary
			if got := s.DeadLetterReasons["permanent"]; got != bad || bad == 0 {
				t.Errorf("%d permanent dead letters, want %d (the deliveries with bad data)", got, bad)
			}
			if frac := float64(bad) / float64(s.Deliveries.Created); math.Abs(frac-0.15) > 0.04 {
				t.Errorf("bad fraction %.3f of %d deliveries, want about 0.15", frac, s.Deliveries.Created)
			}
			if tt.transient == "0" && (s.Attempts.Total != s.Deliveries.Created || s.Deliveries.Delivered != s.Deliveries.Created-bad) {
				t.Errorf("attempts %d, delivered %d of %d: want one attempt each and every good delivery delivered",
					s.Attempts.Total, s.Deliveries.Delivered, s.Deliveries.Created)
			}
		})
	}
}

// contendedLateWriteDrill: one contended subscriber, one hop 1s, service
// 1s, so an answer takes 3s, inside the 4s timeout; but for the first
// second the partner is slow (×3), so a call begun then takes 5s and times
// out at 4s while its write lands at 5s. Events at 0s (A) and 3s (B).
const contendedLateWriteDrill = `
name     = "contended-late-write"
seed     = 1
duration = "4s"
drain    = "1m"

[source]
arrival = "constant"
rate    = "20/m"

[[partners]]
name          = "row"
count         = 1
contended     = true
latency       = { dist = "constant", value = "1s" }
network_delay = { dist = "constant", value = "1s" }
  [[partners.outages]]
  start  = "0s"
  for    = "1s"
  kind   = "slow"
  factor = 3

[policy.retry]
max_attempts     = 3
base             = "2s"
jitter           = "none"
retryable_status = [409]

[dispatcher]
workers         = 4
attempt_timeout = "4s"
`

// A contended call whose caller timed out still writes at its time, and
// later calls conflict with that write:
//
//	0s  A1 begins (slow): reads at 1s, write lands at 5s
//	3s  B1 begins: reads at 4s, writes at 6s
//	4s  A1 times out; retry at 6s
//	5s  A1's late write lands: the partner accepts A
//	6s  B1's write: A's write came after B1 read: 409; retry at 8s
//	6s  A2 begins: reads at 7s, writes at 9s: succeeds, a duplicate of A1's
//	8s  B2 begins: reads at 9s, writes at 11s: succeeds
func TestContendedTimeoutStillWrites(t *testing.T) {
	path := filepath.Join(t.TempDir(), "contended.toml")
	if err := os.WriteFile(path, []byte(contendedLateWriteDrill), 0o600); err != nil {
		t.Fatal(err)
	}
	d := loadDrill(t, path, nil)
	r, run := runInternal(t, d)
	s := run.Summary
	st := r.subs[0].partner.Stats()
	checks := []struct {
		what      string
		got, want int64
	}{
		{"deliveries created", s.Deliveries.Created, 2},
		{"delivered", s.Deliveries.Delivered, 2},
		{"attempts (A1, B1, A2, B2)", s.Attempts.Total, 4},
		{"duplicates (A2 after A1's late write)", *s.Duplicates, 1},
		{"partner conflicts (B1)", st.Conflicts, 1},
		{"partner accepted writes (A1 late, A2, B2)", st.Accepted, 3},
		{"late writes still to land", int64(r.writesLate), 0},
		{"items held for late writes", int64(len(r.writeRefs)), 0},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s: %d, want %d", c.what, c.got, c.want)
		}
	}
}

// A late write that lands after its delivery has ended still reaches the
// partner, keeps the item out of the pool until then, and counts as a
// duplicate if the delivery had been accepted: every call times out (the
// partner is slow throughout), each attempt's write succeeds a second after
// the timeout, and the delivery is dead-lettered after its last attempt,
// before that attempt's write lands.
func TestContendedLateWriteAfterTerminal(t *testing.T) {
	path := filepath.Join(t.TempDir(), "contended.toml")
	if err := os.WriteFile(path, []byte(contendedLateWriteDrill), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name        string
		maxAttempts int
		wantDupes   int64 // every write after the first is a duplicate
	}{
		{"one attempt", 1, 0},
		{"two attempts", 2, 1},
		{"three attempts", 3, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := loadDrill(t, path, map[string]string{
				"source.arrival":             `"burst"`,
				"source.events":              "1",
				"partners[0].outages[0].for": `"30s"`,
				"policy.retry.max_attempts":  strconv.Itoa(tt.maxAttempts),
			})
			r, run := runInternal(t, d)
			s := run.Summary
			st := r.subs[0].partner.Stats()
			if s.DeadLetterReasons["max-attempts"] != 1 || s.Attempts.Total != int64(tt.maxAttempts) {
				t.Errorf("dead letters %v after %d attempts, want one max-attempts after %d", s.DeadLetterReasons, s.Attempts.Total, tt.maxAttempts)
			}
			if st.Accepted != int64(tt.maxAttempts) || st.Conflicts != 0 {
				t.Errorf("partner accepted %d writes with %d conflicts, want %d and 0", st.Accepted, st.Conflicts, tt.maxAttempts)
			}
			if *s.Duplicates != tt.wantDupes {
				t.Errorf("duplicates %d, want %d", *s.Duplicates, tt.wantDupes)
			}
			if r.writesLate != 0 || len(r.writeRefs) != 0 || r.items.nfree != 1 {
				t.Errorf("after the run: %d late writes, %d held items, %d pooled; want 0, 0, 1", r.writesLate, len(r.writeRefs), r.items.nfree)
			}
		})
	}
}

// Every contended call the partner served is finished, also when a restart
// loses the attempt in flight: its write lands while the dispatcher is
// down. In the drill every call does the work (no errors, no faults), so
// the partner's calls are exactly its accepted writes and its conflicts.
func TestContendedRestartStillWrites(t *testing.T) {
	tests := []struct {
		name, kind string
	}{
		{"hard restart loses B1 in flight", "restart"},          // B1's write is late
		{"graceful restart lets B1 finish", "graceful-restart"}, // B1 completes as usual
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The restart at 3.5s finds A1 (timed out at 4s) and B1 (begun at 3s) in flight.
			text := strings.Replace(contendedLateWriteDrill, `drain    = "1m"`,
				`drain    = "1m"`+"\nfaults   = [{ kind = \""+tt.kind+"\", at = \"3500ms\", down = \"10s\" }]", 1)
			path := filepath.Join(t.TempDir(), "contended.toml")
			if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
				t.Fatal(err)
			}
			r, run := runInternal(t, loadDrill(t, path, nil))
			s := run.Summary
			st := r.subs[0].partner.Stats()
			if len(s.Restarts) != 1 || s.Deliveries.Delivered != 2 || s.Deliveries.Lost != 0 {
				t.Fatalf("restarts %+v, deliveries %+v: want one restart and both delivered", s.Restarts, s.Deliveries)
			}
			if st.Calls != st.Accepted+st.Conflicts || st.Calls < 4 {
				t.Errorf("partner stats %+v: want every one of at least 4 calls finished (calls = accepted + conflicts)", st)
			}
		})
	}
}

// TestItemCohortAndMember: the simulation finds a subscriber's cohort
// from the cohorts' first indexes (cohortOf), not from the item; every
// subscriber of every bundled drill (edi-partner has four cohorts of
// different sizes) must get the layout's cohort and member, and an item
// its own data draw exactly when its cohort has bad data (else 0).
func TestItemCohortAndMember(t *testing.T) {
	for _, path := range bundledDrills(t) {
		d := loadDrill(t, path, nil)
		r, err := newSimRun(d)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		for i, s := range r.tally.Layout().Subscribers {
			c := r.cohortOf(int32(i))
			if int(c) != s.Cohort || i-int(r.cohortLo[c]) != s.Member {
				t.Fatalf("%s: subscriber %d (%s): cohort %d member %d, want %d and %d", path, i, s.Name, c, i-int(r.cohortLo[c]), s.Cohort, s.Member)
			}
			it := r.newItem(int32(i), 0, 0)
			dataSeed := fakepartner.DataSeed(d.Seed, d.Partners[s.Cohort].Name)
			want := uint64(0)
			if d.Partners[s.Cohort].PermanentErrors > 0 {
				want = fakepartner.DataDraw(dataSeed, fakepartner.KeyHash(drills.DeliveryID(0, s.Name)))
			}
			if refDraw(it) != want {
				t.Fatalf("%s: subscriber %s: data draw %#x, want %#x (permanent errors %v)", path, s.Name, refDraw(it), want, d.Partners[s.Cohort].PermanentErrors)
			}
		}
	}
}

// TestItemJitterKeyIsTheIDs: with hash jitter an item's JitterKey is that
// of its delivery id, made from the event's part hashed once per event and
// the subscriber's name, without building the id: for consecutive events,
// events that share an entry of the prefix cache (1 and 257, then 1
// again) and every subscriber of each.
func TestItemJitterKeyIsTheIDs(t *testing.T) {
	d := loadDrill(t, "fanout-outage.toml", map[string]string{"policy.retry.jitter": `"hash"`})
	r, err := newSimRun(d)
	if err != nil {
		t.Fatal(err)
	}
	if !r.needID {
		t.Fatal("hash jitter: the simulation does not make jitter keys")
	}
	for _, e := range []int64{0, 1, 2, 257, 1, 999_999, 1_000_000, 1} {
		for si := range r.names {
			it := r.newItem(int32(si), 0, e)
			if want := model.JitterKeyOf(drills.DeliveryID(e, r.names[si])); it.JitterKey != want {
				t.Fatalf("event %d, subscriber %s: JitterKey %#x, want %#x", e, r.names[si], it.JitterKey, want)
			}
			r.release(it)
		}
	}
	var sink model.JitterKey
	if allocs := testing.AllocsPerRun(1000, func() {
		it := r.newItem(3, 0, 1)
		sink ^= it.JitterKey
		r.release(it)
	}); allocs != 0 {
		t.Errorf("newItem allocates %v times per delivery of the same event, want 0", allocs)
	}
	_ = sink
}
