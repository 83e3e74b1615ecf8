package queue

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// crashChildEnv names the database a re-executed test binary hammers until
// its parent kills it.
const crashChildEnv = "STORMDRILL_QUEUE_CRASH_CHILD_DB"

func TestMain(m *testing.M) {
	if path := os.Getenv(crashChildEnv); path != "" {
		if err := crashChild(path); err != nil {
			fmt.Fprintln(os.Stderr, "crash child:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func openTemp(t testing.TB) (*SQLite, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "queue.db")
	s, err := OpenSQLite(path)
	if err != nil {
		t.Fatal(err)
	}
	return s, path
}

func pragma(t *testing.T, s *SQLite, name string) string {
	t.Helper()
	var v string
	if err := s.DB().QueryRow("PRAGMA " + name).Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestSQLiteSettingsAndMigrationsIdempotent(t *testing.T) {
	s, path := openTemp(t)
	ms, err := loadMigrations()
	if err != nil || len(ms) == 0 || ms[0].version != 1 {
		t.Fatalf("embedded migrations %v, %v", ms, err)
	}
	mustEnqueue(t, s, delivery("d1", t0))
	for range 2 { // reopening applies nothing twice and keeps the data
		s.Close()
		if s, err = OpenSQLite(path); err != nil {
			t.Fatal(err)
		}
		var n int
		if err := s.DB().QueryRow("SELECT count(*) FROM schema_migrations").Scan(&n); err != nil || n != len(ms) {
			t.Fatalf("schema_migrations rows %d, %v; want %d", n, err, len(ms))
		}
		mustGet(t, s, "d1")
	}
	settings := []struct{ pragma, want string }{
		{"journal_mode", "wal"},  // readers never block the writer
		{"synchronous", "1"},     // NORMAL: safe against process crashes in WAL
		{"busy_timeout", "5000"}, // DefaultBusyTimeout in ms
	}
	for _, c := range settings {
		if got := pragma(t, s, c.pragma); got != c.want {
			t.Fatalf("PRAGMA %s = %s, want %s", c.pragma, got, c.want)
		}
	}
	s.Close()
	if s, err = OpenSQLite(path, WithBusyTimeout(250*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if got := pragma(t, s, "busy_timeout"); got != "250" {
		t.Fatalf("busy_timeout %s, want 250", got)
	}
	s.Close()
}

// Two handles on one file stand in for two dispatcher processes: their
// concurrent claims never hand the same delivery out twice.
func TestSQLiteTwoHandlesNeverDoubleLease(t *testing.T) {
	a, path := openTemp(t)
	defer a.Close()
	b, err := OpenSQLite(path)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	const n = 400
	var ds []Delivery
	for i := range n {
		ds = append(ds, delivery(fmt.Sprintf("d%04d", i), t0))
	}
	mustEnqueue(t, a, ds...)
	var mu sync.Mutex
	seen := map[string]string{}
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for _, h := range []struct {
		s     *SQLite
		owner string
	}{{a, "A"}, {b, "B"}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range n { // bounded: each round claims at least one or stops
				got, err := h.s.Claim(context.Background(), h.owner, t0, time.Minute, 7)
				if err != nil {
					errs <- err
					return
				}
				if len(got) == 0 {
					return
				}
				mu.Lock()
				for _, d := range got {
					if prev, dup := seen[d.ID]; dup {
						errs <- fmt.Errorf("%s leased by %s and %s", d.ID, prev, h.owner)
					}
					seen[d.ID] = h.owner
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if len(seen) != n {
		t.Fatalf("leased %d of %d", len(seen), n)
	}
}

// crashChild enqueues, claims and completes in a loop on a virtual clock,
// printing the number of committed deliveries after each enqueue commit,
// until it is killed or hits its bound.
func crashChild(path string) error {
	s, err := OpenSQLite(path)
	if err != nil {
		return err
	}
	ctx := context.Background()
	const perRound, maxRounds = 40, 20000
	enqueued := 0
	for round := range maxRounds {
		now := t0.Add(time.Duration(round) * 10 * time.Millisecond)
		ds := make([]Delivery, perRound)
		for j := range ds {
			ds[j] = delivery(fmt.Sprintf("evt-%06d:p-%02d", round, j), now)
		}
		n, err := s.Enqueue(ctx, ds)
		if err != nil {
			return err
		}
		enqueued += n
		fmt.Printf("E %d\n", enqueued)
		got, err := s.Claim(ctx, "child", now, 50*time.Millisecond, 64)
		if err != nil {
			return err
		}
		cs := make([]Completion, 0, len(got))
		for j, d := range got {
			c := Completion{ID: d.ID, Owner: "child", At: now, Attempt: d.Attempt + 1, Started: now, RecordAttempt: true}
			switch j % 5 {
			case 0, 1:
				c.Kind, c.Status = KindAck, 200
			case 2:
				c.Kind, c.Status, c.RunAt, c.LastError = KindReschedule, 503, now.Add(30*time.Millisecond), "503"
			case 3:
				c.Kind, c.Status, c.Reason, c.LastError = KindDeadLetter, 422, "permanent", "422"
			case 4:
				continue // left leased: its lease expires and it is claimed again
			}
			cs = append(cs, c)
		}
		if _, err := s.Complete(ctx, cs); err != nil {
			return err
		}
	}
	return s.Close()
}

func TestSQLiteCrashSafety(t *testing.T) {
	if testing.Short() {
		t.Skip("re-executes the test binary")
	}
	path := filepath.Join(t.TempDir(), "crash.db")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+path)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	progress := make(chan int, 1024)
	lastCommitted := 0
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if n, err := strconv.Atoi(strings.TrimPrefix(sc.Text(), "E ")); err == nil {
				lastCommitted = n
				select {
				case progress <- n:
				default:
				}
			}
		}
	}()
	// Let it get well into the loop, then kill it mid-flight: it never
	// pauses between transactions, so the moment it is killed at is
	// whatever it was doing when its 2000th delivery was read.
	deadline := time.After(60 * time.Second)
wait:
	for {
		select {
		case n := <-progress:
			if n >= 2000 {
				break wait
			}
		case <-deadline:
			cmd.Process.Kill()
			t.Fatalf("child made no progress; stderr: %s", stderr.String())
		}
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-done
	if err := cmd.Wait(); err == nil {
		t.Fatalf("child finished before it was killed; stderr: %s", stderr.String())
	}

	s, err := OpenSQLite(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := pragma(t, s, "integrity_check"); got != "ok" {
		t.Fatalf("integrity_check: %s", got)
	}
	db := s.DB()
	var total, badState, deadMismatch, orphanDLQ, terminalNoAttempt int64
	checks := []struct {
		what string
		dst  *int64
		sql  string
	}{
		{"rows", &total, `SELECT count(*) FROM deliveries`},
		{"rows in no known state", &badState, `SELECT count(*) FROM deliveries WHERE state NOT IN ('ready','leased','delivered','dead')`},
		{"dead rows without a DLQ entry", &deadMismatch, `SELECT count(*) FROM deliveries d WHERE d.state = 'dead' AND NOT EXISTS (SELECT 1 FROM dead_letters l WHERE l.id = d.id)`},
		{"DLQ entries whose delivery is not dead", &orphanDLQ, `SELECT count(*) FROM dead_letters l LEFT JOIN deliveries d ON d.id = l.id WHERE d.state IS NOT 'dead'`},
		{"terminal rows without an attempt", &terminalNoAttempt, `SELECT count(*) FROM deliveries WHERE state IN ('delivered','dead') AND (attempt < 1 OR NOT EXISTS (SELECT 1 FROM attempts a WHERE a.delivery_id = deliveries.id))`},
	}
	for _, c := range checks {
		if err := db.QueryRow(c.sql).Scan(c.dst); err != nil {
			t.Fatalf("%s: %v", c.what, err)
		}
	}
	if badState+deadMismatch+orphanDLQ+terminalNoAttempt != 0 {
		t.Fatalf("bad state %d, dead without DLQ %d, DLQ without dead %d, terminal without attempt %d",
			badState, deadMismatch, orphanDLQ, terminalNoAttempt)
	}
	// Every enqueue the child reported as committed survived the kill.
	if total < int64(lastCommitted) {
		t.Fatalf("%d rows after the crash, child had committed %d", total, lastCommitted)
	}
	c := mustCounts(t, s, t0.Add(time.Hour*24))
	if c.Total() != total || c.Delivered == 0 || c.Dead == 0 {
		t.Fatalf("counts %+v do not add up to %d rows or show no progress", c, total)
	}
	t.Logf("after SIGKILL: %d rows (child reported %d), counts %+v", total, lastCommitted, c)
	// The store keeps working: everything still pending can be claimed and acked.
	for range 1000 {
		got := mustClaim(t, s, "after", t0.Add(24*time.Hour), time.Minute, 500)
		if len(got) == 0 {
			break
		}
		cs := make([]Completion, len(got))
		for i, d := range got {
			cs[i] = Completion{ID: d.ID, Owner: "after", Kind: KindAck, At: t0.Add(24 * time.Hour), Attempt: d.Attempt + 1}
		}
		mustComplete(t, s, cs...)
	}
	if c := mustCounts(t, s, t0.Add(48*time.Hour)); c.Ready+c.Delayed+c.Leased != 0 || c.Total() != total {
		t.Fatalf("after draining: %+v", c)
	}
}

// BenchmarkSQLiteCycle runs every delivery through enqueue (batches of 256),
// claim (batches of 64) and ack with attempt history, each batch one
// transaction, and reports deliveries per second (3 transitions each).
func BenchmarkSQLiteCycle(b *testing.B) {
	s, _ := openTemp(b)
	defer s.Close()
	benchCycle(b, s)
}

// benchCycle is the store benchmark every engine runs: enqueue, claim and
// ack b.N deliveries, reporting deliveries per second.
func benchCycle(b *testing.B, s Store) { benchCycleWith(b, s, false) }

// BenchmarkSQLiteDispatchCycle is BenchmarkSQLiteCycle with the
// dispatcher's round trip: each CompleteClaim acks the batch the previous
// one claimed and claims the next, in one transaction.
func BenchmarkSQLiteDispatchCycle(b *testing.B) {
	s, _ := openTemp(b)
	defer s.Close()
	benchDispatchCycle(b, s)
}

// benchDispatchCycle is benchCycle with CompleteClaim in place of Claim
// then Complete: each round acks the last claim's batch and claims the
// next in one call.
func benchDispatchCycle(b *testing.B, s Store) { benchCycleWith(b, s, true) }

// benchCycleWith enqueues in batches of 256 and then, in rounds of 64,
// claims and acks with attempt history: Claim then Complete, or (dispatch)
// one CompleteClaim acking the previous round's claim.
func benchCycleWith(b *testing.B, s Store, dispatch bool) {
	// With a deadline, as the dispatcher and the injector call the store.
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	const enqueueBatch, claimBatch = 256, 64
	payload := []byte(`{"shipment":"SH-000000","status":"in_transit","eta":"2026-01-02T00:00:00Z"}`)
	b.ResetTimer()
	done := 0
	var cs []Completion
	for next := 0; done < b.N; {
		now := t0.Add(time.Duration(next) * time.Millisecond)
		if next < b.N {
			ds := make([]Delivery, 0, enqueueBatch)
			for ; next < b.N && len(ds) < enqueueBatch; next++ {
				ds = append(ds, Delivery{ID: fmt.Sprintf("evt-%09d:acme-0", next), Event: "evt", Partner: "acme-0",
					Cohort: "acme", Payload: payload, Created: now})
			}
			if _, err := s.Enqueue(ctx, ds); err != nil {
				b.Fatal(err)
			}
		}
		for range enqueueBatch / claimBatch {
			var got []Delivery
			var err error
			if dispatch {
				var r CompleteResult
				r, got, err = s.CompleteClaim(ctx, cs, "bench", now, time.Minute, claimBatch)
				if err != nil || r.Applied != len(cs) {
					b.Fatalf("complete and claim %+v, %v", r, err)
				}
				done += len(cs)
			} else if got, err = s.Claim(ctx, "bench", now, time.Minute, claimBatch); err != nil {
				b.Fatal(err)
			}
			cs = cs[:0]
			for _, d := range got {
				cs = append(cs, Completion{ID: d.ID, Owner: "bench", Kind: KindAck, At: now, Started: now, Attempt: 1, Status: 200, RecordAttempt: true})
			}
			if !dispatch {
				r, err := s.Complete(ctx, cs)
				if err != nil || r.Applied != len(cs) {
					b.Fatalf("complete %+v, %v", r, err)
				}
				done += len(cs)
			}
			if len(got) == 0 {
				break
			}
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "deliveries/s")
}

// BenchmarkSQLiteClaimBacklog claims and acks batches of 64 from a backlog of
// 100,000 due deliveries, to show a claim reads its batch, not the backlog.
func BenchmarkSQLiteClaimBacklog(b *testing.B) {
	s, _ := openTemp(b)
	defer s.Close()
	ctx := context.Background()
	const backlog, claimBatch = 100000, 64
	for start := 0; start < backlog; start += 1000 {
		ds := make([]Delivery, 1000)
		for i := range ds {
			ds[i] = delivery(fmt.Sprintf("evt-%07d:acme-0", start+i), t0.Add(time.Duration(start+i)*time.Microsecond))
		}
		if _, err := s.Enqueue(ctx, ds); err != nil {
			b.Fatal(err)
		}
	}
	now := t0.Add(time.Hour)
	b.ResetTimer()
	claimed := 0
	for i := range b.N {
		got, err := s.Claim(ctx, "bench", now, time.Minute, claimBatch)
		if err != nil || len(got) == 0 {
			b.Fatalf("claim %d: %d rows, %v", i, len(got), err)
		}
		cs := make([]Completion, len(got))
		for j, d := range got {
			// Reschedule to now, behind the rest, so the due backlog never shrinks.
			cs[j] = Completion{ID: d.ID, Owner: "bench", Kind: KindReschedule, At: now, Attempt: d.Attempt + 1, RunAt: now}
		}
		if _, err := s.Complete(ctx, cs); err != nil {
			b.Fatal(err)
		}
		claimed += len(got)
	}
	b.ReportMetric(float64(claimed)/b.Elapsed().Seconds(), "deliveries/s")
}

// BenchmarkSQLiteSample reads a Sample of a store holding 50,000 due
// deliveries and 50,000 delivered ones while another connection (the
// dispatcher, in a live run) writes between two samples, as the live
// recorder does every sample interval.
func BenchmarkSQLiteSample(b *testing.B) {
	s, path := openTemp(b)
	defer s.Close()
	other, err := OpenSQLite(path)
	if err != nil {
		b.Fatal(err)
	}
	defer other.Close()
	ctx := context.Background()
	const backlog = 50000
	for start := 0; start < 2*backlog; start += 1000 {
		ds := make([]Delivery, 1000)
		for i := range ds {
			ds[i] = delivery(fmt.Sprintf("evt-%07d:acme-0", start+i), t0.Add(time.Duration(start+i)*time.Microsecond))
		}
		if _, err := s.Enqueue(ctx, ds); err != nil {
			b.Fatal(err)
		}
	}
	for done := 0; done < backlog; {
		got, err := s.Claim(ctx, "bench", t0.Add(time.Hour), time.Minute, 1000)
		if err != nil {
			b.Fatal(err)
		}
		cs := make([]Completion, len(got))
		for i, d := range got {
			cs[i] = Completion{ID: d.ID, Owner: "bench", Kind: KindAck, At: t0, Attempt: 1}
		}
		if _, err := s.Complete(ctx, cs); err != nil {
			b.Fatal(err)
		}
		done += len(got)
	}
	now := t0.Add(time.Hour)
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		if _, err := other.Enqueue(ctx, []Delivery{delivery(fmt.Sprintf("late-%07d:acme-0", i), now.Add(time.Hour))}); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		sm, err := s.Sample(ctx, now, nil)
		if err != nil || sm.Ready != backlog || sm.Delivered != backlog {
			b.Fatalf("sample %+v, %v", sm, err)
		}
	}
}

// TestSQLiteBatchesAcrossChunkSizes: batches whose sizes straddle the
// chunks of the batch statements (1, 255, 256, 257, 600) keep every row,
// in order: an enqueue counts what it added (an id twice in one batch, or
// already stored, is ignored), a claim leases exactly what it returns,
// and the attempt history of a batch of completions is whole, each row
// with its own values.
func TestSQLiteBatchesAcrossChunkSizes(t *testing.T) {
	ctx := context.Background()
	for _, n := range []int{1, 255, 256, 257, 600} {
		s, _ := openTemp(t)
		ds := make([]Delivery, 0, n+2)
		for i := 0; i < n; i++ {
			d := delivery(fmt.Sprintf("evt-%04d:acme-0", i), t0.Add(time.Duration(i)*time.Millisecond))
			d.Payload = []byte(strconv.Itoa(i))
			ds = append(ds, d)
		}
		dup := ds[n/2]
		dup.Payload = []byte("second")
		ds = append(ds, dup)
		got, err := s.Enqueue(ctx, ds)
		if err != nil || got != n {
			t.Fatalf("n=%d: enqueue added %d, %v; want %d", n, got, err, n)
		}
		if p := mustGet(t, s, dup.ID).Payload; string(p) != strconv.Itoa(n/2) {
			t.Errorf("n=%d: %s has payload %q; the first of two rows with its id should stay", n, dup.ID, p)
		}
		if got, err := s.Enqueue(ctx, ds[:n/3+1]); err != nil || got != 0 {
			t.Errorf("n=%d: enqueueing known ids added %d, %v", n, got, err)
		}
		now := t0.Add(time.Hour)
		want := max(n-1, 1) // all but one, or the one
		claimed := mustClaim(t, s, "o", now, time.Minute, want)
		if len(claimed) != want {
			t.Fatalf("n=%d: claimed %d, want %d", n, len(claimed), want)
		}
		if c := mustCounts(t, s, now); c.Leased != int64(want) || c.Ready != int64(n-want) {
			t.Errorf("n=%d: after the claim %+v; want %d leased, %d ready", n, c, want, n-want)
		}
		cs := make([]Completion, len(claimed))
		for i, d := range claimed {
			if i > 0 && claimed[i-1].ID >= d.ID {
				t.Fatalf("n=%d: claim out of order at %d", n, i)
			}
			cs[i] = Completion{ID: d.ID, Owner: "o", Kind: KindAck, At: now.Add(time.Duration(i)), Started: now,
				Attempt: 1, Status: 200 + i%3, LastError: "e" + d.ID, RecordAttempt: true}
		}
		if r := mustComplete(t, s, cs...); r.Applied != len(cs) || r.Stale != 0 {
			t.Fatalf("n=%d: complete %+v", n, r)
		}
		var rows int
		if err := s.DB().QueryRow(`SELECT count(*) FROM attempts`).Scan(&rows); err != nil || rows != len(cs) {
			t.Fatalf("n=%d: %d attempt rows, %v; want %d", n, rows, err, len(cs))
		}
		for _, i := range []int{0, len(cs) / 2, len(cs) - 1} {
			as, err := s.Attempts(ctx, cs[i].ID)
			if err != nil || len(as) != 1 {
				t.Fatalf("n=%d: attempts of %s: %+v, %v", n, cs[i].ID, as, err)
			}
			if a := as[0]; a.Status != cs[i].Status || a.Error != cs[i].LastError || !a.Ended.Equal(cs[i].At) || a.Owner != "o" {
				t.Errorf("n=%d: attempt of %s is %+v; want status %d, error %q, ended %v", n, cs[i].ID, a, cs[i].Status, cs[i].LastError, cs[i].At)
			}
		}
		s.Close()
	}
}
