package live

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stormdrill/stormdrill/drills"
	"github.com/stormdrill/stormdrill/model/runtime/dispatcher"
	"github.com/stormdrill/stormdrill/model/runtime/queue"
)

func parseDrill(t testing.TB, src string) *drills.Drill {
	t.Helper()
	d, err := drills.Parse("test.toml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// logWriter sends the dispatchers' diagnostics to the test log.
type logWriter struct{ t testing.TB }

func (w logWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

const killDrill = `
name = "kill"
mode = "live"
seed = 3
duration = "10s"
[source]
arrival = "constant"
rate = "1/s"
[[partners]]
name = "ok"
count = 4
latency = { dist = "constant", value = "2ms" }
[[partners]]
name = "down"
count = 2
latency = { dist = "constant", value = "2ms" }
  [[partners.outages]]
  start = "0s"
  for = "4s"
  kind = "unavailable"
[policy.retry]
max_attempts = 10
base = "3s"
cap = "3s"
jitter = "none"
[dispatcher]
workers = 8
attempt_timeout = "1s"
lease_timeout = "1s"
claim_batch = 16
`

// startEnv prepares a runner's partner server, store and clock without
// running the drill, so a test can drive the dispatcher processes itself.
func startEnv(t *testing.T, src string) (*runner, *queue.SQLite) {
	t.Helper()
	d := parseDrill(t, src)
	r, err := newRunner(d, t.TempDir(), Options{Executable: testExecutable(t), Log: logWriter{t}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.close)
	r.clock = dispatcher.Clock{Start: time.Now(), Speed: d.Speed}
	r.srv.SetStart(r.clock.Start)
	if r.st, err = queue.Open(r.storeDSN); err != nil {
		t.Fatal(err)
	}
	st, err := queue.OpenSQLite(sqlitePath(t, r))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return r, st
}

// sqlitePath is the file of the runner's SQLite store.
func sqlitePath(t *testing.T, r *runner) string {
	t.Helper()
	path, ok := strings.CutPrefix(r.storeDSN, "sqlite:")
	if !ok {
		t.Fatalf("store %s is not SQLite", r.storeDSN)
	}
	return path
}

func enqueueEvents(t *testing.T, r *runner, st queue.Store, events int) int {
	t.Helper()
	var ds []queue.Delivery
	now := r.clock.Now()
	for e := 0; e < events; e++ {
		for _, si := range r.fanout {
			s := r.subs[si]
			ds = append(ds, queue.Delivery{ID: drills.DeliveryID(int64(e), s.Name), Partner: s.Name, Cohort: r.specs[s.Cohort].Name, Created: now})
		}
	}
	if _, err := st.Enqueue(context.Background(), ds); err != nil {
		t.Fatal(err)
	}
	return len(ds)
}

func waitTerminal(t *testing.T, st queue.Store, timeout time.Duration) queue.Counts {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		c, err := st.Counts(context.Background(), time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if c.Ready+c.Delayed+c.Leased == 0 {
			return c
		}
		if time.Now().After(deadline) {
			t.Fatalf("not drained after %v: %+v", timeout, c)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestSIGKILLAtRandomMomentsLosesNothingAndKeepsRunAt kills the dispatcher
// process four times, each after a pause drawn from a fixed seed (0.1 to
// 0.9 s of a run whose retries come due at 3 s and 6 s, so kills fall
// both between and inside the retry waves), while deliveries to a partner
// that is down wait out their backoff in the store. Across every restart
// the run_at of every delivery delayed at the kill and not yet due stays
// the same; no attempt starts before its backoff has passed (jitter none:
// each retry starts at least 3 s after the previous attempt ended); at the
// end every delivery is delivered, the attempt history has each ordinal
// once, and partners saw duplicates only for attempts in flight at a kill.
func TestSIGKILLAtRandomMomentsLosesNothingAndKeepsRunAt(t *testing.T) {
	// 20ms answers keep attempts in flight at most kills. The bound on the
	// duplicates is every claimed and due row at a kill (inFlightBound).
	r, st := startEnv(t, strings.ReplaceAll(killDrill, `value = "2ms"`, `value = "20ms"`))
	created := enqueueEvents(t, r, st, 50)
	rng := rand.New(rand.NewPCG(42, 1))
	ctx := context.Background()
	var err error
	if r.procs[0], err = r.spawn(1); err != nil {
		t.Fatal(err)
	}
	var inFlight int64
	compared := 0
	const kills = 4
	for round := 0; round < kills; round++ {
		time.Sleep(time.Duration(100+rng.IntN(800)) * time.Millisecond)
		before, err := st.RunAts(ctx)
		if err != nil {
			t.Fatal(err)
		}
		killAt := r.clock.Now()
		if err := r.stop(1, false); err != nil {
			t.Fatal(err)
		}
		inFlight += r.inFlightBound(r.clock.Now())
		if r.procs[0], err = r.spawn(1); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
		after, err := st.RunAts(ctx)
		if err != nil {
			t.Fatal(err)
		}
		now := r.clock.Now()
		for id, ra := range before {
			// Delayed at the kill and still not due: the restart must not
			// have moved it.
			if !ra.After(killAt) || !ra.After(now.Add(50*time.Millisecond)) {
				continue
			}
			got, ok := after[id]
			if !ok {
				t.Fatalf("round %d: delayed delivery %s vanished from the pending set", round, id)
			}
			if !got.Equal(ra) {
				t.Fatalf("round %d: run_at of %s moved across the restart: %v -> %v", round, id, ra, got)
			}
			compared++
		}
	}
	if compared == 0 {
		t.Fatal("no delayed delivery was compared across a restart; the drill does not delay anything")
	}
	c := waitTerminal(t, st, 30*time.Second)
	if err := r.stop(1, true); err != nil {
		t.Fatal(err)
	}
	if c.Total() != int64(created) || c.Delivered != int64(created) || c.Dead != 0 {
		t.Fatalf("created %d, store %+v: want every delivery delivered", created, c)
	}
	var bad int
	if err := st.DB().QueryRow(`SELECT count(*) FROM (SELECT delivery_id FROM attempts GROUP BY delivery_id
		HAVING count(*) != max(ordinal) OR count(DISTINCT ordinal) != count(*))`).Scan(&bad); err != nil {
		t.Fatal(err)
	}
	if bad != 0 {
		t.Fatalf("%d deliveries have an attempt history with a repeated or missing ordinal", bad)
	}
	// No retry ran early, whichever process made it: base = cap = 3s and
	// jitter none, so attempt k+1 starts at least 3s after attempt k ended
	// (a kill can only make it later). 1ms of slack for clock reads.
	var early int
	var retries int
	if err := st.DB().QueryRow(`SELECT count(*), coalesce(sum(b.started < a.ended + ?), 0)
		FROM attempts a JOIN attempts b ON a.delivery_id = b.delivery_id AND b.ordinal = a.ordinal + 1`,
		int64(3*time.Second-time.Millisecond)).Scan(&retries, &early); err != nil {
		t.Fatal(err)
	}
	if early != 0 {
		t.Fatalf("%d of %d retries started before their backoff had passed", early, retries)
	}
	if retries == 0 {
		t.Fatal("no retry recorded: the drill exercised no backoff")
	}
	var dups int64
	for _, s := range r.srv.Stats() {
		dups += s.Duplicates
	}
	if dups > inFlight {
		t.Fatalf("partners saw %d duplicates, more than the %d attempts in flight at the kills", dups, inFlight)
	}
	t.Logf("compared %d delayed run_ats across %d kills; %d retries none early; %d duplicates, at most %d in flight at the kills", compared, kills, retries, dups, inFlight)
}

// TestSIGTERMFinishesInFlightAndReleasesLeases stops a busy dispatcher
// gracefully: it exits 0, and no row is left leased.
func TestSIGTERMFinishesInFlightAndReleasesLeases(t *testing.T) {
	r, st := startEnv(t, strings.Replace(killDrill, `value = "2ms"`, `value = "50ms"`, 1))
	enqueueEvents(t, r, st, 40)
	var err error
	if r.procs[0], err = r.spawn(1); err != nil {
		t.Fatal(err)
	}
	time.Sleep(150 * time.Millisecond)
	if err := r.stop(1, true); err != nil {
		t.Fatal(err) // a non-zero exit is an error here
	}
	c, err := st.Counts(context.Background(), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if c.Leased != 0 {
		t.Fatalf("%d rows still leased after a graceful stop", c.Leased)
	}
	if c.Delivered == 0 {
		t.Fatalf("nothing was delivered before the stop: %+v", c)
	}
	if _, err := os.Stat(filepath.Join(r.dir, "queue.db")); err != nil {
		t.Fatal(err)
	}
}

// TestRunAtWatchFlagsMovedDelayedDeliveries drives the runner's run_at
// watch by hand: of four deliveries delayed at a "kill", one keeps its
// run_at, one has it moved, one ends before it is due, and one comes due;
// the watch must count exactly one kept, two moved.
func TestRunAtWatchFlagsMovedDelayedDeliveries(t *testing.T) {
	r, st := startEnv(t, killDrill)
	ctx := context.Background()
	now := r.clock.Now()
	ids := []string{"evt-1:ok-0", "evt-2:ok-0", "evt-3:ok-0", "evt-4:ok-0"}
	runAt := []time.Time{now.Add(time.Hour), now.Add(time.Hour), now.Add(time.Hour), now.Add(300 * time.Millisecond)}
	var ds []queue.Delivery
	for i, id := range ids {
		ds = append(ds, queue.Delivery{ID: id, Partner: "ok-0", Cohort: "ok", Created: now, RunAt: runAt[i]})
	}
	if _, err := st.Enqueue(ctx, ds); err != nil {
		t.Fatal(err)
	}
	if n, err := r.watchDelayed(); err != nil || n != 4 {
		t.Fatalf("watchDelayed: %d, %v; want 4", n, err)
	}
	db := st.DB()
	if _, err := db.Exec(`UPDATE deliveries SET run_at = run_at - 1000 WHERE id = ?`, ids[1]); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE deliveries SET state = 'delivered' WHERE id = ?`, ids[2]); err != nil {
		t.Fatal(err)
	}
	r.procs[0] = &child{} // checks run only while a dispatcher is up
	defer func() { r.procs[0] = nil }()
	time.Sleep(400 * time.Millisecond) // ids[3] comes due
	if err := r.checkRunAts(); err != nil {
		t.Fatal(err)
	}
	if r.runAtKept != 1 || r.runAtMoved != 2 || len(r.runAtWatch) != 1 {
		t.Fatalf("kept %d moved %d still watched %d: want 1, 2, 1 (%v)", r.runAtKept, r.runAtMoved, len(r.runAtWatch), r.runAtExample)
	}
	if _, ok := r.runAtWatch[ids[0]]; !ok {
		t.Errorf("the untouched delivery left the watch early")
	}
	if len(r.runAtExample) != 2 || !strings.Contains(strings.Join(r.runAtExample, ";"), "moved by -1µs") {
		t.Errorf("examples %q: want both named, one moved by -1µs", r.runAtExample)
	}
}
