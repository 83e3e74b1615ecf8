package queue

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/stormdrill/stormdrill/model/runtime/wallclock"
	_ "modernc.org/sqlite" // registers the pure-Go "sqlite" driver
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// DefaultBusyTimeout is how long a statement waits for another process's
// write lock before failing with SQLITE_BUSY.
const DefaultBusyTimeout = 5 * time.Second

// SQLiteOption tunes OpenSQLite.
type SQLiteOption func(*sqliteConfig)

type sqliteConfig struct {
	busyTimeout time.Duration
}

// WithBusyTimeout sets the busy timeout (default DefaultBusyTimeout).
func WithBusyTimeout(d time.Duration) SQLiteOption {
	return func(c *sqliteConfig) { c.busyTimeout = d }
}

// SQLite is the durable Store: one database file in WAL mode. It keeps one
// connection, because SQLite has one writer and a single connection lets
// every batch reuse its prepared statements; other processes on the same
// file wait up to the busy timeout.
type SQLite struct {
	db          *sql.DB
	path        string
	st          sqliteStmts
	busyTimeout time.Duration
}

var _ Store = (*SQLite)(nil)

type sqliteStmts struct {
	selReady, selExpired, transition, release, hold *sql.Stmt
	insDead, get, reject                            *sql.Stmt
	// The batch statements, by rows: insert, lease, ack and insAttempt[k]
	// carry 1<<k rows (see eachChunk).
	insert, lease, ack, insAttempt multiStmts
}

// maxChunkShift: a batch statement carries at most 1<<maxChunkShift rows.
// A batch of n rows goes as chunks of decreasing powers of two (at most
// maxChunkShift+1 statements for fewer than 1<<(maxChunkShift+1) rows),
// so a few prepared statements serve every batch size. One statement per
// row cost more in the driver than in SQLite on the hot paths.
const maxChunkShift = 8

type multiStmts [maxChunkShift + 1]*sql.Stmt

// eachChunk calls fn for each chunk of a batch of n rows: rows [lo,
// lo+1<<k), the largest power of two that fits first.
func eachChunk(n int, fn func(lo, k int) error) error {
	for lo := 0; lo < n; {
		k := maxChunkShift
		for 1<<k > n-lo {
			k--
		}
		if err := fn(lo, k); err != nil {
			return err
		}
		lo += 1 << k
	}
	return nil
}

// placeholders is n groups of per placeholders, "(?, ?), (?, ?)".
func placeholders(n, per int) string {
	g := "(" + strings.Repeat("?, ", per-1) + "?)"
	return strings.Repeat(g+", ", n-1) + g
}

// deliveryCols is the column list scanDelivery reads, in order.
const deliveryCols = `id, event, partner, cohort, payload, attempt, first_seen, created, run_at,
	prev_delay, lease_owner, lease_until, state, last_error`

// OpenSQLite opens or creates the database at path, switches it to WAL and
// applies the embedded migrations that are not yet applied.
func OpenSQLite(path string, opts ...SQLiteOption) (*SQLite, error) {
	cfg := sqliteConfig{busyTimeout: DefaultBusyTimeout}
	for _, o := range opts {
		o(&cfg)
	}
	if path == "" || strings.ContainsAny(path, "?#") || strings.HasPrefix(path, "file:") {
		return nil, fmt.Errorf("queue: sqlite path %q: want a plain file path without ? or #", path)
	}
	if cfg.busyTimeout < 0 {
		return nil, fmt.Errorf("queue: sqlite: negative busy timeout %v", cfg.busyTimeout)
	}
	// _txlock=immediate: every write transaction takes the write lock at
	// BEGIN, so two processes never deadlock upgrading a read lock.
	dsn := path + "?_txlock=immediate" +
		"&_pragma=busy_timeout(" + strconv.FormatInt(cfg.busyTimeout.Milliseconds(), 10) + ")" +
		"&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("queue: open %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	s := &SQLite{db: db, path: path, busyTimeout: cfg.busyTimeout}
	if err := s.init(); err != nil {
		db.Close()
		return nil, fmt.Errorf("queue: open %s: %w", path, err)
	}
	return s, nil
}

func (s *SQLite) init() error {
	ctx := context.Background()
	var mode string
	if err := s.db.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		return err
	}
	if !strings.EqualFold(mode, "wal") {
		return fmt.Errorf("journal mode is %q, want wal", mode)
	}
	if err := migrate(ctx, s.db); err != nil {
		return err
	}
	prep := func(dst **sql.Stmt, q string) error {
		st, err := s.db.PrepareContext(ctx, q)
		if err != nil {
			return fmt.Errorf("prepare %q: %w", q, err)
		}
		*dst = st
		return nil
	}
	st := &s.st
	var errs []error
	for k := 0; k <= maxChunkShift; k++ {
		n := 1 << k
		ids := make([]string, n)
		for i := range ids {
			ids[i] = "?" + strconv.Itoa(4+i)
		}
		errs = append(errs,
			prep(&st.insert[k], `INSERT INTO deliveries (id, event, partner, cohort, payload, attempt,
			first_seen, created, run_at, prev_delay, last_error, updated, state)
			VALUES `+strings.ReplaceAll(placeholders(n, 12), "?)", "?, 'ready')")+` ON CONFLICT (id) DO NOTHING`),
			prep(&st.lease[k], `UPDATE deliveries SET state = 'leased', lease_owner = ?1, lease_until = ?2,
			updated = ?3, first_seen = CASE WHEN first_seen = 0 THEN ?3 ELSE first_seen END
			WHERE id IN (`+strings.Join(ids, ", ")+`)`),
			prep(&st.insAttempt[k], `INSERT INTO attempts (delivery_id, ordinal, started, ended, status, error, owner)
			VALUES `+placeholders(n, 7)),
			// The transition of KindAck for n deliveries with distinct ids;
			// it returns the ids it applied to (the others were stale).
			prep(&st.ack[k], `UPDATE deliveries SET state = 'delivered', attempt = v.column2, last_error = v.column3,
			updated = v.column4, lease_owner = '', lease_until = 0
			FROM (VALUES `+placeholders(n, 5)+`) AS v
			WHERE deliveries.id = v.column1 AND deliveries.state = 'leased' AND deliveries.lease_owner = v.column5
			RETURNING deliveries.id`))
	}
	return errors.Join(append(errs,
		prep(&st.selReady, `SELECT `+deliveryCols+` FROM deliveries
			WHERE state = 'ready' AND run_at <= ? ORDER BY run_at, id LIMIT ?`),
		prep(&st.selExpired, `SELECT `+deliveryCols+` FROM deliveries
			WHERE state = 'leased' AND lease_until <= ? ORDER BY run_at, id LIMIT ?`),
		// NULL parameters keep the column: a release changes only the state.
		prep(&st.transition, `UPDATE deliveries SET state = ?1, attempt = COALESCE(?2, attempt),
			run_at = COALESCE(?3, run_at), prev_delay = COALESCE(?4, prev_delay),
			last_error = COALESCE(?5, last_error), lease_owner = '', lease_until = 0,
			updated = COALESCE(?6, updated)
			WHERE id = ?7 AND state = 'leased' AND lease_owner = ?8`),
		prep(&st.hold, `UPDATE deliveries SET attempt = ?1, run_at = ?2, prev_delay = ?3, last_error = ?4,
			lease_until = ?5, updated = ?6 WHERE id = ?7 AND state = 'leased' AND lease_owner = ?8`),
		prep(&st.release, `UPDATE deliveries SET state = 'ready', lease_owner = '', lease_until = 0
			WHERE state = 'leased' AND lease_owner = ?`),
		prep(&st.insDead, `INSERT OR REPLACE INTO dead_letters (id, event, partner, cohort, reason,
			last_error, attempts, created, first_seen, dead_at, payload)
			SELECT id, event, partner, cohort, ?1, ?2, ?3, created, first_seen, ?4, payload
			FROM deliveries WHERE id = ?5`),
		prep(&st.get, `SELECT `+deliveryCols+` FROM deliveries WHERE id = ?`),
		// A rejected delivery: dead since ?9, never attempted; insDead
		// copies its dead letter from this row.
		prep(&st.reject, `INSERT INTO deliveries (id, event, partner, cohort, payload, attempt,
			first_seen, created, run_at, prev_delay, state, last_error, updated)
			VALUES (?1, ?2, ?3, ?4, ?5, 0, ?6, ?7, ?8, 0, 'dead', '', ?9) ON CONFLICT (id) DO NOTHING`),
	)...)
}

// migration is one embedded schema file, NNNN_name.sql.
type migration struct {
	version int
	name    string
	sql     string
}

func loadMigrations() ([]migration, error) { return readMigrations(migrationFS, "migrations") }

// readMigrations reads dir/NNNN_name.sql from fsys in version order; each
// engine has its own directory, as their SQL dialects differ.
func readMigrations(fsys embed.FS, dir string) ([]migration, error) {
	files, err := fs.Glob(fsys, dir+"/*.sql")
	if err != nil {
		return nil, err
	}
	var out []migration
	for _, f := range files {
		base := strings.TrimPrefix(f, dir+"/")
		num, _, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %s: name must start with a positive number and _", base)
		}
		body, err := fsys.ReadFile(f)
		if err != nil {
			return nil, err
		}
		out = append(out, migration{version: v, name: base, sql: string(body)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	for i := 1; i < len(out); i++ {
		if out[i].version == out[i-1].version {
			return nil, fmt.Errorf("migrations %s and %s share a version", out[i-1].name, out[i].name)
		}
	}
	return out, nil
}

// migrate applies each missing migration in its own transaction. The
// applied check is inside the transaction, so two processes opening the same
// new file apply each migration once.
func migrate(ctx context.Context, db *sql.DB) error {
	ms, err := loadMigrations()
	if err != nil {
		return err
	}
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version INTEGER PRIMARY KEY, name TEXT NOT NULL)`); err != nil {
		return err
	}
	for _, m := range ms {
		if err := applyMigration(ctx, db, m); err != nil {
			return fmt.Errorf("migration %s: %w", m.name, err)
		}
	}
	return nil
}

func applyMigration(ctx context.Context, db *sql.DB, m migration) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM schema_migrations WHERE version = ?`, m.version).Scan(&n); err != nil {
		return err
	}
	if n > 0 {
		return nil
	}
	if _, err := tx.ExecContext(ctx, m.sql); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, name) VALUES (?, ?)`, m.version, m.name); err != nil {
		return err
	}
	return tx.Commit()
}

// Path is the database file.
func (s *SQLite) Path() string { return s.path }

// DB exposes the handle for checks such as PRAGMA integrity_check.
func (s *SQLite) DB() *sql.DB { return s.db }

// Close implements Store.
func (s *SQLite) Close() error {
	sts := []*sql.Stmt{s.st.selReady, s.st.selExpired, s.st.transition, s.st.release, s.st.hold,
		s.st.insDead, s.st.get, s.st.reject}
	for k := range s.st.insert {
		sts = append(sts, s.st.insert[k], s.st.lease[k], s.st.ack[k], s.st.insAttempt[k])
	}
	for _, st := range sts {
		if st != nil {
			st.Close()
		}
	}
	return s.db.Close()
}

// busyRetry is how often a write transaction asks again for the write
// lock while another process holds it.
const busyRetry = 200 * time.Microsecond

// inTx runs fn in a write transaction. The write lock is asked for every
// busyRetry until the busy timeout, rather than through SQLite's busy
// handler, which sleeps 5, 10, 25 ms and more after a few tries: against a
// writer that retries quickly (the live injector) that handler loses the
// lock time after time, and the dispatcher starves.
func (s *SQLite) inTx(ctx context.Context, fn func(*sql.Tx) error) error {
	var tx *sql.Tx
	var err error
	if s.busyTimeout <= 0 {
		tx, err = s.db.BeginTx(ctx, nil)
	} else {
		conn, cerr := s.db.Conn(ctx)
		if cerr != nil {
			return cerr
		}
		defer conn.Close() // after the transaction has ended and the restore ran
		// The connection's own busy handler is off while this asks for the
		// lock; the transaction's statements then hold it and never wait.
		if _, err := conn.ExecContext(ctx, "PRAGMA busy_timeout = 0"); err != nil {
			return err
		}
		defer conn.ExecContext(context.Background(), "PRAGMA busy_timeout = "+strconv.FormatInt(s.busyTimeout.Milliseconds(), 10))
		// Counted rather than timed (the store reads no clock): sleeps
		// overshoot, so this waits at least the busy timeout.
		for tries := int64(s.busyTimeout / busyRetry); ; tries-- {
			tx, err = conn.BeginTx(ctx, nil)
			if err == nil || !isBusy(err) || tries <= 0 {
				break
			}
			// A Go timer would retry every millisecond, not every
			// busyRetry (see package wallclock).
			wallclock.Sleep(busyRetry)
			if err := ctx.Err(); err != nil {
				return err
			}
		}
	}
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

// stmtContext is the context for the statements of one write
// transaction: ctx without its cancellation. The driver starts a goroutine
// to watch every statement whose context can end, which cost more than
// the statement itself on the hot paths (a claim or a batch of
// completions is hundreds of statements). The transaction still ends with
// ctx: database/sql rolls it back then, and its next statement fails.
func stmtContext(ctx context.Context) context.Context { return context.WithoutCancel(ctx) }

// Enqueue implements Store.
func (s *SQLite) Enqueue(ctx context.Context, ds []Delivery) (int, error) {
	for _, d := range ds {
		if err := validateDelivery("enqueue", d); err != nil {
			return 0, err
		}
	}
	accepted := 0
	sctx := stmtContext(ctx)
	args := make([]any, 0, 12*min(len(ds), 1<<maxChunkShift))
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		accepted = 0 // a retried closure must not double count
		// Rows are inserted in order, so of two with one id in a batch the
		// first is kept, as with one statement per row.
		return eachChunk(len(ds), func(lo, k int) error {
			args = args[:0]
			for _, d := range ds[lo : lo+1<<k] {
				updated := toNS(d.FirstSeen)
				if updated == 0 {
					updated = toNS(d.Created)
				}
				args = append(args, d.ID, d.Event, d.Partner, d.Cohort, d.Payload, d.Attempt,
					toNS(d.FirstSeen), toNS(d.Created), toNS(runAtOf(d)), int64(d.PrevDelay), d.LastError, updated)
			}
			r, err := tx.StmtContext(sctx, s.st.insert[k]).ExecContext(sctx, args...)
			if err != nil {
				return fmt.Errorf("enqueue %d deliveries from %s: %w", 1<<k, ds[lo].ID, err)
			}
			n, err := r.RowsAffected()
			if err != nil {
				return err
			}
			accepted += int(n)
			return nil
		})
	})
	if err != nil {
		return 0, fmt.Errorf("queue: %w", err)
	}
	return accepted, nil
}

// Reject implements Store.
func (s *SQLite) Reject(ctx context.Context, ds []Delivery, reason string, at time.Time) (int, error) {
	if err := validateReject(ds, reason, at); err != nil {
		return 0, err
	}
	if len(ds) == 0 {
		return 0, nil
	}
	atNS := toNS(at)
	rejected := 0
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		rejected = 0 // a retried closure must not double count
		ins, dead := tx.StmtContext(ctx, s.st.reject), tx.StmtContext(ctx, s.st.insDead)
		for _, d := range ds {
			r, err := ins.ExecContext(ctx, d.ID, d.Event, d.Partner, d.Cohort, d.Payload,
				toNS(d.FirstSeen), toNS(d.Created), toNS(runAtOf(d)), atNS)
			if err != nil {
				return fmt.Errorf("reject %s: %w", d.ID, err)
			}
			n, err := r.RowsAffected()
			if err != nil {
				return err
			}
			if n == 0 {
				continue // already known: left as it is
			}
			if _, err := dead.ExecContext(ctx, reason, "", 0, atNS, d.ID); err != nil {
				return fmt.Errorf("reject %s: %w", d.ID, err)
			}
			rejected++
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("queue: %w", err)
	}
	return rejected, nil
}

type rowScanner interface{ Scan(...any) error }

func scanDelivery(r rowScanner) (Delivery, error) {
	var d Delivery
	var firstSeen, created, runAt, prevDelay, leaseUntil int64
	var state string
	err := r.Scan(&d.ID, &d.Event, &d.Partner, &d.Cohort, &d.Payload, &d.Attempt, &firstSeen, &created,
		&runAt, &prevDelay, &d.LeaseOwner, &leaseUntil, &state, &d.LastError)
	if err != nil {
		return d, err
	}
	d.FirstSeen, d.Created, d.RunAt = fromNS(firstSeen), fromNS(created), fromNS(runAt)
	d.PrevDelay, d.LeaseUntil, d.State = time.Duration(prevDelay), fromNS(leaseUntil), State(state)
	return d, nil
}

func queryDeliveries(ctx context.Context, st *sql.Stmt, args ...any) ([]Delivery, error) {
	rows, err := st.QueryContext(ctx, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return collect(rows, scanDelivery)
}

// Claim implements Store. Due ready rows and expired leases are read by two
// indexed queries and merged, so a large backlog costs limit rows, not a scan.
func (s *SQLite) Claim(ctx context.Context, owner string, now time.Time, lease time.Duration, limit int) ([]Delivery, error) {
	limit, err := validateClaim(owner, lease, limit)
	if err != nil {
		return nil, err
	}
	var out []Delivery
	sctx := stmtContext(ctx)
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		out, err = s.claimTx(sctx, tx, owner, now, lease, limit)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("queue: claim: %w", err)
	}
	return out, nil
}

// claimTx is Claim's work in the write transaction tx.
func (s *SQLite) claimTx(sctx context.Context, tx *sql.Tx, owner string, now time.Time, lease time.Duration, limit int) ([]Delivery, error) {
	nowNS := toNS(now)
	untilNS := now.Add(lease).UnixNano()
	ready, err := queryDeliveries(sctx, tx.StmtContext(sctx, s.st.selReady), nowNS, limit)
	if err != nil {
		return nil, err
	}
	expired, err := queryDeliveries(sctx, tx.StmtContext(sctx, s.st.selExpired), nowNS, limit)
	if err != nil {
		return nil, err
	}
	out := mergeByRunAt(ready, expired, limit)
	args := make([]any, 0, 3+min(len(out), 1<<maxChunkShift))
	err = eachChunk(len(out), func(lo, k int) error {
		args = append(args[:0], owner, untilNS, nowNS)
		for i := lo; i < lo+1<<k; i++ {
			args = append(args, out[i].ID)
		}
		_, err := tx.StmtContext(sctx, s.st.lease[k]).ExecContext(sctx, args...)
		return err
	})
	if err != nil {
		return nil, err
	}
	for i := range out {
		out[i].State, out[i].LeaseOwner, out[i].LeaseUntil = StateLeased, owner, fromNS(untilNS)
		if out[i].FirstSeen.IsZero() {
			out[i].FirstSeen = fromNS(nowNS)
		}
	}
	return out, nil
}

// mergeByRunAt merges two lists sorted by (run_at, id), keeping at most limit.
func mergeByRunAt(a, b []Delivery, limit int) []Delivery {
	out := make([]Delivery, 0, min(len(a)+len(b), limit))
	for len(out) < limit && (len(a) > 0 || len(b) > 0) {
		takeA := len(b) == 0 || (len(a) > 0 && (a[0].RunAt.Before(b[0].RunAt) ||
			(a[0].RunAt.Equal(b[0].RunAt) && a[0].ID < b[0].ID)))
		if takeA {
			out, a = append(out, a[0]), a[1:]
		} else {
			out, b = append(out, b[0]), b[1:]
		}
	}
	return out
}

// Complete implements Store.
func (s *SQLite) Complete(ctx context.Context, cs []Completion) (CompleteResult, error) {
	var res CompleteResult
	if err := validateCompletions(cs); err != nil {
		return res, err
	}
	sctx := stmtContext(ctx)
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		var err error
		res, err = s.completeTx(sctx, tx, cs)
		return err
	})
	if err != nil {
		return CompleteResult{}, fmt.Errorf("queue: complete: %w", err)
	}
	return res, nil
}

// CompleteClaim implements Store: one write transaction, one commit and
// one wait for the write lock where Complete and Claim take two each.
func (s *SQLite) CompleteClaim(ctx context.Context, cs []Completion, owner string, now time.Time, lease time.Duration, limit int) (CompleteResult, []Delivery, error) {
	limit, err := validateCompleteClaim(cs, owner, lease, limit)
	if err != nil {
		return CompleteResult{}, nil, err
	}
	if len(cs) == 0 && limit == 0 {
		return CompleteResult{}, nil, nil
	}
	var res CompleteResult
	var out []Delivery
	sctx := stmtContext(ctx)
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		var err error
		if res, err = s.completeTx(sctx, tx, cs); err != nil || limit == 0 {
			return err
		}
		out, err = s.claimTx(sctx, tx, owner, now, lease, limit)
		return err
	})
	if err != nil {
		return CompleteResult{}, nil, fmt.Errorf("queue: complete and claim: %w", err)
	}
	return res, out, nil
}

// completeTx is Complete's work in the write transaction tx.
func (s *SQLite) completeTx(sctx context.Context, tx *sql.Tx, cs []Completion) (CompleteResult, error) {
	var res CompleteResult
	tr := tx.StmtContext(sctx, s.st.transition)
	var insDead, hold *sql.Stmt
	// The attempt rows go in after the transitions, in their order, a
	// chunk per statement (nothing in the batch reads them).
	var attempts []any
	// Acks, the bulk of a batch, gather into a run of distinct ids
	// written a chunk per statement; the run is written before any
	// other kind of completion, or a second one of an id in it, so
	// every delivery's transitions keep their order.
	var acks []Completion
	inAcks := map[string]struct{}{}
	var args []any
	applied := map[string]struct{}{}
	writeAcks := func() error {
		err := eachChunk(len(acks), func(lo, k int) error {
			chunk := acks[lo : lo+1<<k]
			args = args[:0]
			for _, c := range chunk {
				args = append(args, c.ID, c.Attempt, c.LastError, toNS(c.At), c.Owner)
			}
			rows, err := tx.StmtContext(sctx, s.st.ack[k]).QueryContext(sctx, args...)
			if err != nil {
				return fmt.Errorf("ack %d deliveries from %s: %w", len(chunk), chunk[0].ID, err)
			}
			clear(applied)
			for rows.Next() {
				var id string
				if err := rows.Scan(&id); err != nil {
					rows.Close()
					return err
				}
				applied[id] = struct{}{}
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return err
			}
			for _, c := range chunk {
				if _, ok := applied[c.ID]; !ok {
					res.Stale++
					continue
				}
				res.Applied++
				if c.RecordAttempt {
					attempts = append(attempts, c.ID, c.Attempt, toNS(c.Started), toNS(c.At), c.Status, c.LastError, c.Owner)
				}
			}
			return nil
		})
		acks = acks[:0]
		clear(inAcks)
		return err
	}
	for _, c := range cs {
		_, again := inAcks[c.ID]
		if len(acks) > 0 && (c.Kind != KindAck || again) {
			if err := writeAcks(); err != nil {
				return res, err
			}
		}
		if c.Kind == KindAck {
			acks = append(acks, c)
			inAcks[c.ID] = struct{}{}
			continue
		}
		var r sql.Result
		var err error
		at := toNS(c.At)
		switch c.Kind {
		case KindRelease:
			r, err = tr.ExecContext(sctx, StateReady, nil, nil, nil, nil, nil, c.ID, c.Owner)
		case KindReschedule:
			r, err = tr.ExecContext(sctx, StateReady, c.Attempt, toNS(c.RunAt), int64(c.PrevDelay), c.LastError, at, c.ID, c.Owner)
		case KindDeadLetter:
			r, err = tr.ExecContext(sctx, StateDead, c.Attempt, nil, nil, c.LastError, at, c.ID, c.Owner)
		case KindHold:
			if hold == nil {
				hold = tx.StmtContext(sctx, s.st.hold)
			}
			r, err = hold.ExecContext(sctx, c.Attempt, toNS(c.RunAt), int64(c.PrevDelay),
				c.LastError, toNS(c.LeaseUntil), at, c.ID, c.Owner)
		}
		if err != nil {
			return res, fmt.Errorf("%v %s: %w", c.Kind, c.ID, err)
		}
		n, err := r.RowsAffected()
		if err != nil {
			return res, err
		}
		if n == 0 {
			res.Stale++
			continue
		}
		res.Applied++
		if c.Kind == KindDeadLetter {
			if insDead == nil {
				insDead = tx.StmtContext(sctx, s.st.insDead)
			}
			if _, err := insDead.ExecContext(sctx, c.Reason, c.LastError, c.Attempt, at, c.ID); err != nil {
				return res, fmt.Errorf("dead-letter %s: %w", c.ID, err)
			}
		}
		if c.RecordAttempt && c.Kind != KindRelease {
			attempts = append(attempts, c.ID, c.Attempt, toNS(c.Started), at, c.Status, c.LastError, c.Owner)
		}
	}
	if err := writeAcks(); err != nil {
		return res, err
	}
	const per = 7 // values per attempt row
	err := eachChunk(len(attempts)/per, func(lo, k int) error {
		_, err := tx.StmtContext(sctx, s.st.insAttempt[k]).ExecContext(sctx, attempts[lo*per:(lo+1<<k)*per]...)
		if err != nil {
			return fmt.Errorf("attempts of %d deliveries from %s: %w", 1<<k, attempts[lo*per], err)
		}
		return nil
	})
	return res, err
}

// Release implements Store.
func (s *SQLite) Release(ctx context.Context, owner string) (int, error) {
	r, err := s.st.release.ExecContext(ctx, owner)
	if err != nil {
		return 0, fmt.Errorf("queue: release: %w", err)
	}
	n, err := r.RowsAffected()
	return int(n), err
}

// Counts implements Store. One statement, so one consistent snapshot; each
// count is an index range.
func (s *SQLite) Counts(ctx context.Context, now time.Time) (Counts, error) {
	var c Counts
	err := s.db.QueryRowContext(ctx, `SELECT
		(SELECT count(*) FROM deliveries WHERE state = 'ready' AND run_at <= ?1),
		(SELECT count(*) FROM deliveries WHERE state = 'ready' AND run_at > ?1),
		(SELECT count(*) FROM deliveries WHERE state = 'leased'),
		(SELECT count(*) FROM deliveries WHERE state = 'delivered'),
		(SELECT count(*) FROM deliveries WHERE state = 'dead')`, toNS(now)).
		Scan(&c.Ready, &c.Delayed, &c.Leased, &c.Delivered, &c.Dead)
	if err != nil {
		return c, fmt.Errorf("queue: counts: %w", err)
	}
	return c, nil
}

// Get implements Store.
func (s *SQLite) Get(ctx context.Context, id string) (Delivery, error) {
	d, err := scanDelivery(s.st.get.QueryRowContext(ctx, id))
	if errors.Is(err, sql.ErrNoRows) {
		return Delivery{}, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	if err != nil {
		return Delivery{}, fmt.Errorf("queue: get %s: %w", id, err)
	}
	return d, nil
}

// RunAts implements Store.
func (s *SQLite) RunAts(ctx context.Context) (map[string]time.Time, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id, run_at FROM deliveries WHERE state IN ('ready', 'leased')`)
	if err != nil {
		return nil, fmt.Errorf("queue: run_ats: %w", err)
	}
	defer rows.Close()
	return collectRunAts(rows)
}

// Attempts implements Store.
func (s *SQLite) Attempts(ctx context.Context, id string) ([]AttemptRecord, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+attemptCols+`
		FROM attempts WHERE delivery_id = ? ORDER BY rowid LIMIT ?`, id, MaxList)
	if err != nil {
		return nil, fmt.Errorf("queue: attempts %s: %w", id, err)
	}
	defer rows.Close()
	return collect(rows, scanAttempt)
}

// dlqWhere is the filter condition on dead_letters; ?1 reason, ?2 partner,
// ?3 dead_at cutoff (0: none), ?5 cohort (?4 is each query's LIMIT).
const dlqWhere = `(?1 = '' OR reason = ?1) AND (?2 = '' OR partner = ?2) AND (?3 = 0 OR dead_at <= ?3) AND (?5 = '' OR cohort = ?5)`

const dlqCols = `id, event, partner, cohort, reason, last_error, attempts, created, first_seen, dead_at, payload`

func scanDeadLetter(r rowScanner) (DeadLetter, error) {
	var d DeadLetter
	var created, firstSeen, deadAt int64
	err := r.Scan(&d.ID, &d.Event, &d.Partner, &d.Cohort, &d.Reason, &d.LastError, &d.Attempts,
		&created, &firstSeen, &deadAt, &d.Payload)
	d.Created, d.FirstSeen, d.DeadAt = fromNS(created), fromNS(firstSeen), fromNS(deadAt)
	return d, err
}

// DeadLetters implements Store.
func (s *SQLite) DeadLetters(ctx context.Context, f DLQFilter) ([]DeadLetter, error) {
	cut, err := cutoff(f)
	if err != nil {
		return nil, err
	}
	rows, err := s.db.QueryContext(ctx, `SELECT `+dlqCols+` FROM dead_letters WHERE `+dlqWhere+
		` ORDER BY dead_at, id LIMIT ?4`, f.Reason, f.Partner, cut, listLimit(f.Limit), f.Cohort)
	if err != nil {
		return nil, fmt.Errorf("queue: dead letters: %w", err)
	}
	defer rows.Close()
	return collect(rows, scanDeadLetter)
}

// Replay implements Store. Each batch is one transaction that moves rows and
// writes its audit record, so a crash mid-replay leaves whole batches.
func (s *SQLite) Replay(ctx context.Context, f DLQFilter, o ReplayOptions) (ReplayResult, error) {
	var res ReplayResult
	p, err := planReplay(f, o)
	if err != nil {
		return res, err
	}
	if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM dead_letters WHERE `+dlqWhere,
		f.Reason, f.Partner, p.cutoffNS, 0, f.Cohort).Scan(&res.Matched); err != nil {
		return res, fmt.Errorf("queue: replay: %w", err)
	}
	if p.limit > 0 {
		res.Matched = min(res.Matched, p.limit)
	}
	audit := func(tx *sql.Tx, at time.Time, count, batch int, dry bool) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO replays (at, who, filter, count, batch, dry_run)
			VALUES (?, ?, ?, ?, ?, ?)`, toNS(at), o.Who, p.filter, count, batch, dry)
		return err
	}
	if o.DryRun {
		res.Batches = (res.Matched + p.batch - 1) / p.batch
		err := s.inTx(ctx, func(tx *sql.Tx) error { return audit(tx, p.now(), res.Matched, 0, true) })
		if err != nil {
			return res, fmt.Errorf("queue: replay: %w", err)
		}
		return res, nil
	}
	for res.Moved < res.Matched {
		if res.Batches > 0 {
			if err := p.pause(ctx); err != nil {
				return res, err
			}
		}
		moved := 0
		var movedIDs []string
		var movedAt time.Time
		err := s.inTx(ctx, func(tx *sql.Tx) error {
			moved = 0
			now := toNS(p.now())
			rows, err := tx.QueryContext(ctx, `SELECT id FROM dead_letters WHERE `+dlqWhere+
				` ORDER BY dead_at, id LIMIT ?4`, f.Reason, f.Partner, p.cutoffNS, min(p.batch, res.Matched-res.Moved), f.Cohort)
			if err != nil {
				return err
			}
			var ids []string
			for rows.Next() {
				var id string
				if err := rows.Scan(&id); err != nil {
					rows.Close()
					return err
				}
				ids = append(ids, id)
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return err
			}
			if len(ids) == 0 {
				return nil
			}
			for _, id := range ids {
				// Same id, fresh attempt budget, due now.
				if _, err := tx.ExecContext(ctx, `INSERT INTO deliveries (id, event, partner, cohort,
					payload, attempt, first_seen, created, run_at, prev_delay, state, last_error, updated)
					SELECT id, event, partner, cohort, payload, 0, first_seen, created, ?1, 0, 'ready',
					last_error, ?1 FROM dead_letters WHERE id = ?2
					ON CONFLICT (id) DO UPDATE SET state = 'ready', attempt = 0, run_at = excluded.run_at,
					prev_delay = 0, lease_owner = '', lease_until = 0, updated = excluded.updated`, now, id); err != nil {
					return fmt.Errorf("replay %s: %w", id, err)
				}
				if _, err := tx.ExecContext(ctx, `DELETE FROM dead_letters WHERE id = ?`, id); err != nil {
					return err
				}
			}
			moved, movedIDs, movedAt = len(ids), ids, fromNS(now)
			return audit(tx, fromNS(now), moved, res.Batches+1, false)
		})
		if err != nil {
			return res, fmt.Errorf("queue: replay: %w", err)
		}
		if moved == 0 {
			break // someone else drained the DLQ meanwhile
		}
		if o.OnMoved != nil {
			o.OnMoved(movedAt, movedIDs)
		}
		res.Batches++
		res.Moved += moved
	}
	return res, nil
}

// Audit implements Store.
func (s *SQLite) Audit(ctx context.Context) ([]ReplayAudit, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+auditCols+`
		FROM replays ORDER BY id LIMIT ?`, MaxList)
	if err != nil {
		return nil, fmt.Errorf("queue: audit: %w", err)
	}
	defer rows.Close()
	return collect(rows, scanAudit)
}

// SetClock implements Store.
func (s *SQLite) SetClock(ctx context.Context, c Clock) error {
	if err := checkClock(c); err != nil {
		return err
	}
	if _, err := s.db.ExecContext(ctx, `INSERT INTO drill_clock (id, start_ns, speed) VALUES (1, ?, ?)
		ON CONFLICT (id) DO UPDATE SET start_ns = excluded.start_ns, speed = excluded.speed`, toNS(c.Start), c.Speed); err != nil {
		return fmt.Errorf("queue: set clock: %w", err)
	}
	return nil
}

// Clock implements Store.
func (s *SQLite) Clock(ctx context.Context) (Clock, error) {
	var ns int64
	var speed float64
	err := s.db.QueryRowContext(ctx, `SELECT start_ns, speed FROM drill_clock WHERE id = 1`).Scan(&ns, &speed)
	if errors.Is(err, sql.ErrNoRows) {
		return Clock{}, nil
	}
	if err != nil {
		return Clock{}, fmt.Errorf("queue: clock: %w", err)
	}
	return Clock{Start: fromNS(ns), Speed: speed}, nil
}

// isBusy reports whether err is SQLite's "another connection holds the
// lock".
func isBusy(err error) bool {
	s := err.Error()
	return strings.Contains(s, "SQLITE_BUSY") || strings.Contains(s, "database is locked")
}
