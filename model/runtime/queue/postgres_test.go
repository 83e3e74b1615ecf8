package queue

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stormdrill/stormdrill/model/runtime/queue/queuetest"
)

// The conformance suite runs against PostgreSQL too: each test gets a
// fresh schema; reopen closes the pool and connects again.
func init() {
	openers = append(openers, opener{"postgres", func(t *testing.T) (Store, func(Store) Store) {
		dsn := pgTestSchema(t)
		s := mustOpenPostgres(t, dsn)
		reopen := func(old Store) Store {
			if err := old.Close(); err != nil {
				t.Fatal(err)
			}
			return mustOpenPostgres(t, dsn)
		}
		return s, reopen
	}})
}

// pgTestSchema is a fresh schema on the test server (see queuetest).
func pgTestSchema(t testing.TB) string { return queuetest.PostgresSchema(t, "t") }

func mustOpenPostgres(t testing.TB, dsn string) *Postgres {
	t.Helper()
	s, err := OpenPostgres(dsn)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestPostgresDSN checks what OpenPostgres refuses before it connects:
// none of these rows sends a packet.
func TestPostgresDSN(t *testing.T) {
	cases := []struct {
		dsn, wantErr string
	}{
		{"postgres://u:secretpw@192.0.2.10:5432/db", "not a loopback"},              // another machine
		{"postgresql://u:secretpw@10.1.2.3/db?sslmode=disable", "not a loopback"},   // private range is not loopback either
		{"postgres://u:secretpw@127.0.0.1,192.0.2.10/db", "not a loopback"},         // a fallback host counts too
		{"postgres://u:secretpw@/db?host=/var/run/postgresql", "unix socket"},       // socket directory
		{"host=127.0.0.1 user=u password=secretpw dbname=db", "postgres://"},        // keyword form is not a URL DSN
		{"mysql://u:secretpw@127.0.0.1/db", "want postgres://"},                     // wrong scheme
		{"postgres://u:secretpw@127.0.0.1:notaport/db", "dsn"},                      // unparsable port
		{"postgres://u:secretpw@127.0.0.1/db?sslmode=bogus", "dsn"},                 // pgx refuses the option
		{"postgres:u:secretpw@127.0.0.1/db", "want postgres://user:pass@127.0.0.1"}, // opaque, no //
	}
	for _, c := range cases {
		_, err := OpenPostgres(c.dsn)
		if err == nil || !strings.Contains(err.Error(), c.wantErr) {
			t.Errorf("OpenPostgres(%q): %v; want an error containing %q", c.dsn, err, c.wantErr)
			continue
		}
		if strings.Contains(err.Error(), "secretpw") {
			t.Errorf("OpenPostgres(%q) error shows the password: %v", c.dsn, err)
		}
	}
	// Loopback forms pass the host check (parsed only, not connected).
	for _, dsn := range []string{
		"postgres://u@127.0.0.1:5432/db",        // IPv4 loopback
		"postgres://u@127.0.0.2/db",             // anywhere in 127.0.0.0/8
		"postgresql://u@[::1]:5432/db",          // IPv6 loopback
		"postgres://u@localhost/db",             // the name
		"postgres://u@127.0.0.1,localhost:6/db", // several loopback hosts
	} {
		cfg, err := pgxpool.ParseConfig(dsn)
		if err != nil {
			t.Fatalf("%s: %v", dsn, err)
		}
		if err := checkPostgresHosts(cfg); err != nil {
			t.Errorf("%s refused: %v", dsn, err)
		}
	}
	// Open routes both schemes here: the refusal is the postgres store's.
	for _, dsn := range []string{"postgres://u@192.0.2.10/db", "postgresql://u@192.0.2.10/db"} {
		if _, err := Open(dsn); err == nil || !strings.Contains(err.Error(), "not a loopback") {
			t.Errorf("Open(%q): %v", dsn, err)
		}
	}
}

// TestPostgresOpenAndMigrationsConcurrent opens one new schema from four
// handles at once: the advisory lock lets each migration apply once, and
// reopening applies nothing again.
func TestPostgresOpenAndMigrationsConcurrent(t *testing.T) {
	dsn := pgTestSchema(t)
	ms, err := loadPGMigrations()
	if err != nil || len(ms) == 0 || ms[0].version != 1 {
		t.Fatalf("embedded migrations %v, %v", ms, err)
	}
	const handles = 4
	stores := make([]*Postgres, handles)
	errs := make([]error, handles)
	var wg sync.WaitGroup
	for i := range stores {
		wg.Go(func() { stores[i], errs[i] = OpenPostgres(dsn) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("handle %d: %v", i, err)
		}
		defer stores[i].Close()
	}
	mustEnqueue(t, stores[0], delivery("d1", t0))
	s, err := Open(dsn) // through the DSN router
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, ok := s.(*Postgres); !ok {
		t.Fatalf("Open(postgres dsn) gave a %T", s)
	}
	var n int
	if err := stores[1].Pool().QueryRow(context.Background(), `SELECT count(*) FROM schema_migrations`).Scan(&n); err != nil || n != len(ms) {
		t.Fatalf("schema_migrations rows %d, %v; want %d", n, err, len(ms))
	}
	mustGet(t, s, "d1")
}

// TestPostgresWrongServerFails: a loopback port with no server answers
// with a connection error, not a hang.
func TestPostgresWrongServerFails(t *testing.T) {
	// Port 1 on loopback: nothing listens there in a test sandbox.
	start := time.Now()
	_, err := OpenPostgres("postgres://u:secretpw@127.0.0.1:1/db?sslmode=disable&connect_timeout=2")
	if err == nil {
		t.Fatal("opened a store on a port with no server")
	}
	if strings.Contains(err.Error(), "secretpw") {
		t.Fatalf("error shows the password: %v", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("failing took %v", d)
	}
}

// TestHoldKeepsLease runs on every store: a hold keeps the row leased by its
// owner with the new attempt, run_at and lease expiry, records the attempt,
// and the row is claimable by another owner only once that lease expires.
func TestHoldKeepsLease(t *testing.T) {
	forEach(t, func(t *testing.T, s Store, _ func(Store) Store) Store {
		ctx := context.Background()
		mustEnqueue(t, s, delivery("d1", t0))
		mustClaim(t, s, "w1", t0, time.Second, 1)
		next, until := t0.Add(10*time.Second), t0.Add(11*time.Second)
		hold := Completion{ID: "d1", Owner: "w1", Kind: KindHold, At: t0.Add(time.Millisecond), Attempt: 1,
			RunAt: next, PrevDelay: 10 * time.Second, LastError: "503", Status: 503, Started: t0,
			RecordAttempt: true, LeaseUntil: until}
		if r := mustComplete(t, s, hold); r != (CompleteResult{Applied: 1}) {
			t.Fatalf("hold %+v", r)
		}
		d := mustGet(t, s, "d1")
		if d.State != StateLeased || d.LeaseOwner != "w1" || !d.LeaseUntil.Equal(until) || !d.RunAt.Equal(next) ||
			d.Attempt != 1 || d.PrevDelay != 10*time.Second || d.LastError != "503" {
			t.Fatalf("after hold %+v", d)
		}
		if h, err := s.Attempts(ctx, "d1"); err != nil || len(h) != 1 || h[0].Status != 503 || h[0].Ordinal != 1 {
			t.Fatalf("history %+v, %v", h, err)
		}
		// Another owner's hold is stale; the lease blocks claims until it expires.
		if r := mustComplete(t, s, Completion{ID: "d1", Owner: "w2", Kind: KindHold, RunAt: next}); r != (CompleteResult{Stale: 1}) {
			t.Fatalf("foreign hold %+v", r)
		}
		if got := mustClaim(t, s, "w2", until.Add(-time.Nanosecond), time.Second, 5); len(got) != 0 {
			t.Fatalf("claimed a held row: %v", ids(got))
		}
		if got := mustClaim(t, s, "w2", until, time.Second, 5); len(got) != 1 || got[0].Attempt != 1 {
			t.Fatalf("after the hold expired: %+v", got)
		}
		return s
	})
}

// TestPostgresConcurrentClaimersLeaseOnce: four handles (each its own pool,
// as four dispatcher processes would have) claim from one queue of 2,000
// due deliveries in batches and ack them. Every delivery is leased exactly
// once and every ack applies.
func TestPostgresConcurrentClaimersLeaseOnce(t *testing.T) {
	dsn := pgTestSchema(t)
	const n, workers, batch = 2000, 4, 25
	stores := make([]*Postgres, workers)
	for i := range stores {
		stores[i] = mustOpenPostgres(t, dsn)
		defer stores[i].Close()
	}
	ds := make([]Delivery, n)
	for i := range ds {
		// Four run_ats, so claims interleave ties and order.
		ds[i] = delivery(fmt.Sprintf("evt-%05d:acme-0", i), t0.Add(time.Duration(i%4)*time.Millisecond))
	}
	mustEnqueue(t, stores[0], ds...)
	now := t0.Add(time.Second)
	var mu sync.Mutex
	seen := map[string]string{}
	perOwner := make([]int, workers)
	errs := make(chan error, workers*n)
	var wg sync.WaitGroup
	for w, s := range stores {
		owner := fmt.Sprintf("proc-%d", w)
		wg.Go(func() {
			for range n { // bounded: each round claims at least one or stops
				got, err := s.Claim(context.Background(), owner, now, time.Minute, batch)
				if err != nil {
					errs <- err
					return
				}
				if len(got) == 0 {
					return
				}
				cs := make([]Completion, len(got))
				mu.Lock()
				for i, d := range got {
					if prev, dup := seen[d.ID]; dup {
						errs <- fmt.Errorf("%s leased by %s and %s", d.ID, prev, owner)
					}
					seen[d.ID] = owner
					if d.LeaseOwner != owner || d.State != StateLeased {
						errs <- fmt.Errorf("claimed row %+v", d)
					}
					cs[i] = Completion{ID: d.ID, Owner: owner, Kind: KindAck, At: now, Started: now, Attempt: 1, Status: 200, RecordAttempt: true}
				}
				perOwner[w] += len(got)
				mu.Unlock()
				r, err := s.Complete(context.Background(), cs)
				if err != nil {
					errs <- err
					return
				}
				if r != (CompleteResult{Applied: len(cs)}) {
					errs <- fmt.Errorf("%s: complete %+v of %d", owner, r, len(cs))
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}
	if len(seen) != n {
		t.Fatalf("leased %d of %d", len(seen), n)
	}
	if c := mustCounts(t, stores[0], now); c != (Counts{Delivered: n}) {
		t.Fatalf("counts %+v, want all %d delivered", c, n)
	}
	var attempts, distinct int
	if err := stores[0].Pool().QueryRow(context.Background(),
		`SELECT count(*), count(DISTINCT delivery_id) FROM attempts`).Scan(&attempts, &distinct); err != nil {
		t.Fatal(err)
	}
	if attempts != n || distinct != n {
		t.Fatalf("%d attempt rows for %d deliveries, want %d each", attempts, distinct, n)
	}
	t.Logf("claims per handle: %v", perOwner)
}

// BenchmarkPostgresCycle is BenchmarkSQLiteCycle on PostgreSQL: enqueue
// (batches of 256), claim (batches of 64) and ack with attempt history,
// each batch one transaction; it reports deliveries per second.
func BenchmarkPostgresCycle(b *testing.B) {
	s := mustOpenPostgres(b, pgTestSchema(b))
	defer s.Close()
	benchCycle(b, s)
}

// BenchmarkPostgresDispatchCycle: benchDispatchCycle on PostgreSQL.
func BenchmarkPostgresDispatchCycle(b *testing.B) {
	s := mustOpenPostgres(b, pgTestSchema(b))
	defer s.Close()
	benchDispatchCycle(b, s)
}
