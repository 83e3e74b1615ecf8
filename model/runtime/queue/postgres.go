package queue

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

//go:embed migrations_pg/*.sql
var pgMigrationFS embed.FS

// pgMigrateLockKey is the advisory lock that serialises migrations, so two
// processes opening one new database apply each migration once.
const pgMigrateLockKey int64 = 0x73746f726d647231 // "stormdr1"

// DefaultPostgresConnectTimeout bounds connecting when the DSN sets no
// connect_timeout.
const DefaultPostgresConnectTimeout = 10 * time.Second

// Postgres is the Store for several dispatcher processes on one queue: a
// pgx connection pool on a PostgreSQL database. Claims lock their rows with
// FOR UPDATE SKIP LOCKED, so concurrent claimers never wait on each other
// and never lease one row twice.
type Postgres struct {
	pool *pgxpool.Pool
	dsn  string // redacted, for messages
}

var _ Store = (*Postgres)(nil)

// OpenPostgres connects to dsn ("postgres://user:pass@127.0.0.1:5432/db?
// sslmode=disable" or "postgresql://..."), refuses any host that is not
// loopback, and applies the embedded migrations that are not yet applied.
// Unknown query parameters are sent as run-time settings, so
// "?search_path=NAME" puts the tables in schema NAME.
func OpenPostgres(dsn string) (*Postgres, error) {
	shown, cfg, err := parsePostgresDSN(dsn)
	if err != nil {
		return nil, err
	}
	if cfg.ConnConfig.ConnectTimeout <= 0 {
		cfg.ConnConfig.ConnectTimeout = DefaultPostgresConnectTimeout
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*cfg.ConnConfig.ConnectTimeout+storeOpenTimeout)
	defer cancel()
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("queue: postgres %s: %v", shown, redactErr(err, dsn))
	}
	s := &Postgres{pool: pool, dsn: shown}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("queue: postgres %s: %v", shown, redactErr(err, dsn))
	}
	if err := s.migrate(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("queue: postgres %s: %w", shown, err)
	}
	return s, nil
}

// storeOpenTimeout bounds the migrations at open, on top of connecting.
const storeOpenTimeout = time.Minute

// CheckPostgresDSN checks, without connecting, what OpenPostgres checks
// before it connects: the URL form, what the driver parses and loopback
// hosts only. Messages never quote the password.
func CheckPostgresDSN(dsn string) error {
	_, _, err := parsePostgresDSN(dsn)
	return err
}

// parsePostgresDSN returns the DSN as messages show it and the pool's
// configuration, or why the DSN is refused.
func parsePostgresDSN(dsn string) (string, *pgxpool.Config, error) {
	shown, err := checkPostgresDSN(dsn)
	if err != nil {
		return "", nil, err
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return "", nil, fmt.Errorf("queue: postgres dsn %s: %v", shown, redactErr(err, dsn))
	}
	if err := checkPostgresHosts(cfg); err != nil {
		return "", nil, fmt.Errorf("queue: postgres dsn %s: %w", shown, err)
	}
	return shown, cfg, nil
}

// InlineSecret reports whether dsn carries a secret itself: a URL
// password or a password-like query parameter, which belong in the
// environment (PGPASSWORD) instead.
func InlineSecret(dsn string) bool {
	u, err := url.Parse(dsn)
	if err != nil {
		return strings.Contains(dsn, "@") || keywordSecret().MatchString(dsn)
	}
	if u.User != nil {
		if _, has := u.User.Password(); has {
			return true
		}
	}
	for k := range u.Query() {
		if isSecretParam(k) {
			return true
		}
	}
	return false
}

// checkPostgresDSN accepts only the URL forms and returns the DSN with its
// password hidden, for messages.
func checkPostgresDSN(dsn string) (string, error) {
	u, err := url.Parse(dsn)
	if err != nil {
		// url's message quotes the input, password and all.
		return "", errors.New("queue: postgres dsn is not a valid URL; want postgres://user:pass@127.0.0.1:5432/db?sslmode=disable")
	}
	// Neither refusal quotes the DSN: only the URL form's password can be hidden.
	if s := strings.ToLower(u.Scheme); s != "postgres" && s != "postgresql" {
		return "", errors.New("queue: postgres dsn: want postgres:// or postgresql://, e.g. postgres://user:pass@127.0.0.1:5432/db?sslmode=disable")
	}
	if u.Opaque != "" {
		return "", errors.New("queue: postgres dsn: want postgres://user:pass@127.0.0.1:5432/db, with //")
	}
	return RedactDSN(dsn), nil
}

// checkPostgresHosts refuses every host, including fallbacks, that is not a
// loopback address: the harness never talks to another machine.
func checkPostgresHosts(cfg *pgxpool.Config) error {
	hosts := []string{cfg.ConnConfig.Host}
	for _, f := range cfg.ConnConfig.Fallbacks {
		hosts = append(hosts, f.Host)
	}
	for _, h := range hosts {
		if err := loopbackHost(h); err != nil {
			return err
		}
	}
	return nil
}

func loopbackHost(h string) error {
	if strings.HasPrefix(h, "/") {
		return fmt.Errorf("host %q is a unix socket directory; give a loopback address such as 127.0.0.1", h)
	}
	if strings.EqualFold(h, "localhost") {
		return nil
	}
	if ip := net.ParseIP(strings.Trim(h, "[]")); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("host %q is not a loopback address; only 127.0.0.0/8, ::1 and localhost are allowed", h)
}

// redactErr hides the DSN's secrets should a driver message quote them.
func redactErr(err error, dsn string) string { return RedactMessage(err.Error(), dsn) }

func loadPGMigrations() ([]migration, error) { return readMigrations(pgMigrationFS, "migrations_pg") }

// migrate applies each missing migration in its own transaction, all under
// a session advisory lock held on one connection.
func (s *Postgres) migrate(ctx context.Context) error {
	ms, err := loadPGMigrations()
	if err != nil {
		return err
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, pgMigrateLockKey); err != nil {
		return fmt.Errorf("migration lock: %w", err)
	}
	// Unlock on a fresh context: ctx may be what failed.
	defer conn.Exec(context.Background(), `SELECT pg_advisory_unlock($1)`, pgMigrateLockKey)
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version INTEGER PRIMARY KEY, name TEXT NOT NULL)`); err != nil {
		return err
	}
	for _, m := range ms {
		if err := pgApplyMigration(ctx, conn.Conn(), m); err != nil {
			return fmt.Errorf("migration %s: %w", m.name, err)
		}
	}
	return nil
}

func pgApplyMigration(ctx context.Context, conn *pgx.Conn, m migration) error {
	tx, err := conn.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx)
	var n int
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM schema_migrations WHERE version = $1`, m.version).Scan(&n); err != nil {
		return err
	}
	if n > 0 {
		return nil
	}
	// No arguments: pgx sends it with the simple protocol, which runs
	// every statement of the file.
	if _, err := tx.Exec(ctx, m.sql); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`, m.version, m.name); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// Pool exposes the connection pool for checks the Store interface does not
// offer (a test counting attempts by owner, say).
func (s *Postgres) Pool() *pgxpool.Pool { return s.pool }

// Close implements Store.
func (s *Postgres) Close() error {
	s.pool.Close()
	return nil
}

// inTx runs fn in one transaction.
func (s *Postgres) inTx(ctx context.Context, fn func(pgx.Tx) error) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		tx.Rollback(ctx)
		return err
	}
	return tx.Commit(ctx)
}

// Enqueue implements Store. One INSERT of unnested arrays: one round trip
// whatever the batch size.
func (s *Postgres) Enqueue(ctx context.Context, ds []Delivery) (int, error) {
	for _, d := range ds {
		if err := validateDelivery("enqueue", d); err != nil {
			return 0, err
		}
	}
	if len(ds) == 0 {
		return 0, nil
	}
	n := len(ds)
	var (
		id, event, partner, cohort, lastErr = make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		payload                             = make([][]byte, n)
		attempt                             = make([]int32, n)
		firstSeen, created, runAt, prev, up = make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
	)
	for i, d := range ds {
		if d.Attempt > 1<<31-1 {
			return 0, fmt.Errorf("queue: enqueue %s: attempt %d out of range", d.ID, d.Attempt)
		}
		id[i], event[i], partner[i], cohort[i], lastErr[i] = d.ID, d.Event, d.Partner, d.Cohort, d.LastError
		payload[i], attempt[i] = d.Payload, int32(d.Attempt)
		firstSeen[i], created[i], runAt[i], prev[i] = toNS(d.FirstSeen), toNS(d.Created), toNS(runAtOf(d)), int64(d.PrevDelay)
		up[i] = toNS(d.FirstSeen)
		if up[i] == 0 {
			up[i] = toNS(d.Created)
		}
	}
	// A duplicate id, in the table or earlier in the batch, is skipped.
	tag, err := s.pool.Exec(ctx, `INSERT INTO deliveries (id, event, partner, cohort, payload, attempt,
		first_seen, created, run_at, prev_delay, state, last_error, updated)
		SELECT id, event, partner, cohort, payload, attempt, first_seen, created, run_at, prev_delay,
			'ready', last_error, updated
		FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bytea[], $6::int4[], $7::int8[],
			$8::int8[], $9::int8[], $10::int8[], $11::text[], $12::int8[])
			AS u(id, event, partner, cohort, payload, attempt, first_seen, created, run_at, prev_delay, last_error, updated)
		ON CONFLICT (id) DO NOTHING`,
		id, event, partner, cohort, payload, attempt, firstSeen, created, runAt, prev, lastErr, up)
	if err != nil {
		return 0, fmt.Errorf("queue: enqueue: %w", err)
	}
	return int(tag.RowsAffected()), nil
}

// pgRejectSQL writes rejected deliveries as dead rows and their dead
// letters in one statement; an id already known (in the table or earlier
// in the batch) gets neither, so the count is of new rows only. $9
// reason, $10 dead_at.
const pgRejectSQL = `WITH ins AS (
		INSERT INTO deliveries (id, event, partner, cohort, payload, attempt, first_seen, created, run_at,
			prev_delay, state, last_error, updated)
		SELECT id, event, partner, cohort, payload, 0, first_seen, created, run_at, 0, 'dead', '', $10::int8
		FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bytea[], $6::int8[], $7::int8[], $8::int8[])
			AS u(id, event, partner, cohort, payload, first_seen, created, run_at)
		ON CONFLICT (id) DO NOTHING
		RETURNING id, event, partner, cohort, created, first_seen, payload
	), dead AS (
		INSERT INTO dead_letters (id, event, partner, cohort, reason, last_error, attempts, created,
			first_seen, dead_at, payload)
		SELECT id, event, partner, cohort, $9::text, '', 0, created, first_seen, $10::int8, payload FROM ins
		ON CONFLICT (id) DO UPDATE SET event = excluded.event, partner = excluded.partner,
			cohort = excluded.cohort, reason = excluded.reason, last_error = excluded.last_error,
			attempts = excluded.attempts, created = excluded.created, first_seen = excluded.first_seen,
			dead_at = excluded.dead_at, payload = excluded.payload
	)
	SELECT count(*) FROM ins`

// Reject implements Store. One statement, so one transaction and one
// round trip whatever the batch size.
func (s *Postgres) Reject(ctx context.Context, ds []Delivery, reason string, at time.Time) (int, error) {
	if err := validateReject(ds, reason, at); err != nil {
		return 0, err
	}
	if len(ds) == 0 {
		return 0, nil
	}
	n := len(ds)
	var (
		id, event, partner, cohort = make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		payload                    = make([][]byte, n)
		firstSeen, created, runAt  = make([]int64, n), make([]int64, n), make([]int64, n)
	)
	for i, d := range ds {
		id[i], event[i], partner[i], cohort[i], payload[i] = d.ID, d.Event, d.Partner, d.Cohort, d.Payload
		firstSeen[i], created[i], runAt[i] = toNS(d.FirstSeen), toNS(d.Created), toNS(runAtOf(d))
	}
	var rejected int64
	if err := s.pool.QueryRow(ctx, pgRejectSQL, id, event, partner, cohort, payload, firstSeen, created, runAt,
		reason, toNS(at)).Scan(&rejected); err != nil {
		return 0, fmt.Errorf("queue: reject: %w", err)
	}
	return int(rejected), nil
}

// pgDeliveryCols is deliveryCols qualified with d, for statements that join.
const pgDeliveryCols = `d.id, d.event, d.partner, d.cohort, d.payload, d.attempt, d.first_seen, d.created, d.run_at,
	d.prev_delay, d.lease_owner, d.lease_until, d.state, d.last_error`

// pgClaimSQL leases up to $4 rows in one statement. Each branch walks its
// own index in (run_at, id) order and skips rows another claimer has locked,
// so two dispatchers never wait on or lease the same row; the row locks are
// held until the UPDATE commits with the statement.
const pgClaimSQL = `WITH ready AS (
		SELECT id, run_at FROM deliveries WHERE state = 'ready' AND run_at <= $1
		ORDER BY run_at, id LIMIT $4 FOR UPDATE SKIP LOCKED
	), expired AS (
		SELECT id, run_at FROM deliveries WHERE state = 'leased' AND lease_until <= $1
		ORDER BY run_at, id LIMIT $4 FOR UPDATE SKIP LOCKED
	), pick AS (
		SELECT id FROM (SELECT id, run_at FROM ready UNION ALL SELECT id, run_at FROM expired) u
		ORDER BY run_at, id LIMIT $4
	)
	UPDATE deliveries d SET state = 'leased', lease_owner = $2, lease_until = $3, updated = $1,
		first_seen = CASE WHEN d.first_seen = 0 THEN $1 ELSE d.first_seen END
	FROM pick WHERE d.id = pick.id
	RETURNING ` + pgDeliveryCols

// Claim implements Store.
func (s *Postgres) Claim(ctx context.Context, owner string, now time.Time, lease time.Duration, limit int) ([]Delivery, error) {
	limit, err := validateClaim(owner, lease, limit)
	if err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, pgClaimSQL, toNS(now), owner, now.Add(lease).UnixNano(), limit)
	if err != nil {
		return nil, fmt.Errorf("queue: claim: %w", err)
	}
	out, err := scanClaimed(rows)
	if err != nil {
		return nil, fmt.Errorf("queue: claim: %w", err)
	}
	return out, nil
}

// scanClaimed reads pgClaimSQL's rows, closes them and sorts the deliveries
// by (run_at, id): RETURNING has no order.
func scanClaimed(rows pgx.Rows) ([]Delivery, error) {
	defer rows.Close()
	var out []Delivery
	for rows.Next() {
		d, err := scanDelivery(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b Delivery) int {
		if c := a.RunAt.Compare(b.RunAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out, nil
}

// pgTransitionSQL ends a lease: $1 state; NULL in $2..$6 keeps the column.
// The dead-letter entry ($9 reason non-empty) and the attempt row ($13) are
// written only if the transition applied, in the same statement.
const pgTransitionSQL = `WITH t AS (
		UPDATE deliveries SET state = $1, attempt = COALESCE($2, attempt), run_at = COALESCE($3, run_at),
			prev_delay = COALESCE($4, prev_delay), last_error = COALESCE($5, last_error),
			lease_owner = '', lease_until = 0, updated = COALESCE($6, updated)
		WHERE id = $7 AND state = 'leased' AND lease_owner = $8
		RETURNING id, event, partner, cohort, created, first_seen, payload
	), dead AS (
		INSERT INTO dead_letters (id, event, partner, cohort, reason, last_error, attempts, created,
			first_seen, dead_at, payload)
		SELECT id, event, partner, cohort, $9, $10, $11, created, first_seen, $12, payload
		FROM t WHERE $9::text <> ''
		ON CONFLICT (id) DO UPDATE SET event = excluded.event, partner = excluded.partner,
			cohort = excluded.cohort, reason = excluded.reason, last_error = excluded.last_error,
			attempts = excluded.attempts, created = excluded.created, first_seen = excluded.first_seen,
			dead_at = excluded.dead_at, payload = excluded.payload
	), att AS (
		INSERT INTO attempts (delivery_id, ordinal, started, ended, status, error, owner)
		SELECT id, $11, $14, $12, $15, $10, $8 FROM t WHERE $13::bool
	)
	SELECT count(*) FROM t`

// pgHoldSQL reschedules but keeps the lease (KindHold), with the same
// conditional attempt row.
const pgHoldSQL = `WITH t AS (
		UPDATE deliveries SET attempt = $1, run_at = $2, prev_delay = $3, last_error = $4,
			lease_until = $5, updated = $6
		WHERE id = $7 AND state = 'leased' AND lease_owner = $8
		RETURNING id
	), att AS (
		INSERT INTO attempts (delivery_id, ordinal, started, ended, status, error, owner)
		SELECT id, $1, $10, $6, $11, $4, $8 FROM t WHERE $9::bool
	)
	SELECT count(*) FROM t`

// Complete implements Store. The batch is one transaction sent in one round
// trip; each completion is one statement that applies only while its owner
// still holds the lease.
func (s *Postgres) Complete(ctx context.Context, cs []Completion) (CompleteResult, error) {
	if err := validateCompletions(cs); err != nil {
		return CompleteResult{}, err
	}
	if err := checkPgRanges(cs); err != nil {
		return CompleteResult{}, err
	}
	if len(cs) == 0 {
		return CompleteResult{}, nil
	}
	res, _, err := s.completeClaim(ctx, cs, "", time.Time{}, 0, 0)
	if err != nil {
		return CompleteResult{}, fmt.Errorf("queue: complete: %w", err)
	}
	return res, nil
}

// CompleteClaim implements Store: the transitions and the claim go to the
// server as one batch in one transaction.
func (s *Postgres) CompleteClaim(ctx context.Context, cs []Completion, owner string, now time.Time, lease time.Duration, limit int) (CompleteResult, []Delivery, error) {
	limit, err := validateCompleteClaim(cs, owner, lease, limit)
	if err != nil {
		return CompleteResult{}, nil, err
	}
	if err := checkPgRanges(cs); err != nil {
		return CompleteResult{}, nil, err
	}
	if len(cs) == 0 && limit == 0 {
		return CompleteResult{}, nil, nil
	}
	res, out, err := s.completeClaim(ctx, cs, owner, now, lease, limit)
	if err != nil {
		return CompleteResult{}, nil, fmt.Errorf("queue: complete and claim: %w", err)
	}
	return res, out, nil
}

// checkPgRanges checks what PostgreSQL's int4 columns can hold, for
// completions validateCompletions has passed.
func checkPgRanges(cs []Completion) error {
	for _, c := range cs {
		if c.Attempt > 1<<31-1 || c.Status > 1<<31-1 || c.Status < -1<<31 {
			return fmt.Errorf("queue: complete %s: attempt %d or status %d out of range", c.ID, c.Attempt, c.Status)
		}
	}
	return nil
}

// completeClaim writes cs and then, if limit is positive, claims, in one
// transaction and one batch.
func (s *Postgres) completeClaim(ctx context.Context, cs []Completion, owner string, now time.Time, lease time.Duration, limit int) (CompleteResult, []Delivery, error) {
	var res CompleteResult
	// Rows are locked in id order, so two batches that overlap (a stale
	// owner's and the new owner's) cannot deadlock; the stable sort keeps
	// the order of completions for one id.
	order := make([]int, len(cs))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return cs[order[a]].ID < cs[order[b]].ID })
	b := &pgx.Batch{}
	for _, i := range order {
		c := cs[i]
		at := toNS(c.At)
		record := c.RecordAttempt && c.Kind != KindRelease
		var attempt, runAt, prevDelay, lastErr, updated any
		var state State
		reason := ""
		switch c.Kind {
		case KindHold:
			b.Queue(pgHoldSQL, int32(c.Attempt), toNS(c.RunAt), int64(c.PrevDelay), c.LastError,
				toNS(c.LeaseUntil), at, c.ID, c.Owner, record, toNS(c.Started), int32(c.Status))
			continue
		case KindRelease:
			state = StateReady
		case KindAck:
			state, attempt, lastErr, updated = StateDelivered, int32(c.Attempt), c.LastError, at
		case KindReschedule:
			state, attempt, runAt, prevDelay, lastErr, updated = StateReady, int32(c.Attempt), toNS(c.RunAt),
				int64(c.PrevDelay), c.LastError, at
		case KindDeadLetter:
			state, attempt, lastErr, updated, reason = StateDead, int32(c.Attempt), c.LastError, at, c.Reason
		}
		b.Queue(pgTransitionSQL, string(state), attempt, runAt, prevDelay, lastErr, updated, c.ID, c.Owner,
			reason, c.LastError, int32(c.Attempt), at, record, toNS(c.Started), int32(c.Status))
	}
	if limit > 0 {
		b.Queue(pgClaimSQL, toNS(now), owner, now.Add(lease).UnixNano(), limit)
	}
	// A batch runs in one implicit transaction (one Sync at its end): a
	// failed statement rolls back the statements before it and skips the
	// rest, so the batch alone is atomic, in one round trip where BEGIN,
	// the batch and COMMIT took three.
	var out []Delivery
	err := func() error {
		br := s.pool.SendBatch(ctx, b)
		defer br.Close()
		for _, i := range order {
			var n int64
			if err := br.QueryRow().Scan(&n); err != nil {
				return fmt.Errorf("%v %s: %w", cs[i].Kind, cs[i].ID, err)
			}
			if n == 0 {
				res.Stale++
			} else {
				res.Applied++
			}
		}
		if limit > 0 {
			rows, err := br.Query()
			if err != nil {
				return fmt.Errorf("claim: %w", err)
			}
			if out, err = scanClaimed(rows); err != nil {
				return fmt.Errorf("claim: %w", err)
			}
		}
		return br.Close()
	}()
	if err != nil {
		return CompleteResult{}, nil, err
	}
	return res, out, nil
}

// Release implements Store.
func (s *Postgres) Release(ctx context.Context, owner string) (int, error) {
	tag, err := s.pool.Exec(ctx, `UPDATE deliveries SET state = 'ready', lease_owner = '', lease_until = 0
		WHERE state = 'leased' AND lease_owner = $1`, owner)
	if err != nil {
		return 0, fmt.Errorf("queue: release: %w", err)
	}
	return int(tag.RowsAffected()), nil
}

// Counts implements Store. One statement, so one consistent snapshot.
func (s *Postgres) Counts(ctx context.Context, now time.Time) (Counts, error) {
	var c Counts
	err := s.pool.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM deliveries WHERE state = 'ready' AND run_at <= $1),
		(SELECT count(*) FROM deliveries WHERE state = 'ready' AND run_at > $1),
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
func (s *Postgres) Get(ctx context.Context, id string) (Delivery, error) {
	d, err := scanDelivery(s.pool.QueryRow(ctx, `SELECT `+deliveryCols+` FROM deliveries WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return Delivery{}, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	if err != nil {
		return Delivery{}, fmt.Errorf("queue: get %s: %w", id, err)
	}
	return d, nil
}

// RunAts implements Store.
func (s *Postgres) RunAts(ctx context.Context) (map[string]time.Time, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, run_at FROM deliveries WHERE state IN ('ready', 'leased')`)
	if err != nil {
		return nil, fmt.Errorf("queue: run_ats: %w", err)
	}
	defer rows.Close()
	return collectRunAts(rows)
}

// Attempts implements Store.
func (s *Postgres) Attempts(ctx context.Context, id string) ([]AttemptRecord, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+attemptCols+`
		FROM attempts WHERE delivery_id = $1 ORDER BY seq LIMIT $2`, id, MaxList)
	if err != nil {
		return nil, fmt.Errorf("queue: attempts %s: %w", id, err)
	}
	defer rows.Close()
	return collect(rows, scanAttempt)
}

// pgDLQWhere is dlqWhere with PostgreSQL parameters: $1 reason, $2 partner,
// $3 dead_at cutoff (0: none), $5 cohort ($4 is each query's LIMIT).
const pgDLQWhere = `($1::text = '' OR reason = $1) AND ($2::text = '' OR partner = $2) AND ($3::bigint = 0 OR dead_at <= $3) AND ($5::text = '' OR cohort = $5)`

// DeadLetters implements Store.
func (s *Postgres) DeadLetters(ctx context.Context, f DLQFilter) ([]DeadLetter, error) {
	cut, err := cutoff(f)
	if err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, `SELECT `+dlqCols+` FROM dead_letters WHERE `+pgDLQWhere+
		` ORDER BY dead_at, id LIMIT $4`, f.Reason, f.Partner, cut, listLimit(f.Limit), f.Cohort)
	if err != nil {
		return nil, fmt.Errorf("queue: dead letters: %w", err)
	}
	defer rows.Close()
	return collect(rows, scanDeadLetter)
}

// Replay implements Store. Each batch is one transaction that moves rows and
// writes its audit record; rows another replay has locked are skipped.
func (s *Postgres) Replay(ctx context.Context, f DLQFilter, o ReplayOptions) (ReplayResult, error) {
	var res ReplayResult
	p, err := planReplay(f, o)
	if err != nil {
		return res, err
	}
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM dead_letters WHERE `+pgDLQWhere+` AND $4::bigint >= 0`,
		f.Reason, f.Partner, p.cutoffNS, 0, f.Cohort).Scan(&res.Matched); err != nil {
		return res, fmt.Errorf("queue: replay: %w", err)
	}
	if p.limit > 0 {
		res.Matched = min(res.Matched, p.limit)
	}
	audit := func(tx pgx.Tx, at time.Time, count, batch int, dry bool) error {
		_, err := tx.Exec(ctx, `INSERT INTO replays (at, who, filter, count, batch, dry_run)
			VALUES ($1, $2, $3, $4, $5, $6)`, toNS(at), o.Who, p.filter, count, batch, dry)
		return err
	}
	if o.DryRun {
		res.Batches = (res.Matched + p.batch - 1) / p.batch
		err := s.inTx(ctx, func(tx pgx.Tx) error { return audit(tx, p.now(), res.Matched, 0, true) })
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
		err := s.inTx(ctx, func(tx pgx.Tx) error {
			moved = 0
			now := toNS(p.now())
			rows, err := tx.Query(ctx, `SELECT id FROM dead_letters WHERE `+pgDLQWhere+
				` ORDER BY dead_at, id LIMIT $4 FOR UPDATE SKIP LOCKED`,
				f.Reason, f.Partner, p.cutoffNS, min(p.batch, res.Matched-res.Moved), f.Cohort)
			if err != nil {
				return err
			}
			ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				return err
			}
			if len(ids) == 0 {
				return nil
			}
			// Same id, fresh attempt budget, due now.
			if _, err := tx.Exec(ctx, `INSERT INTO deliveries (id, event, partner, cohort,
				payload, attempt, first_seen, created, run_at, prev_delay, state, last_error, updated)
				SELECT id, event, partner, cohort, payload, 0, first_seen, created, $1, 0, 'ready',
				last_error, $1 FROM dead_letters WHERE id = ANY($2)
				ON CONFLICT (id) DO UPDATE SET state = 'ready', attempt = 0, run_at = excluded.run_at,
				prev_delay = 0, lease_owner = '', lease_until = 0, updated = excluded.updated`, now, ids); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `DELETE FROM dead_letters WHERE id = ANY($1)`, ids); err != nil {
				return err
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
// SetClock implements Store.
func (s *Postgres) SetClock(ctx context.Context, c Clock) error {
	if err := checkClock(c); err != nil {
		return err
	}
	if _, err := s.pool.Exec(ctx, `INSERT INTO drill_clock (id, start_ns, speed) VALUES (1, $1, $2)
		ON CONFLICT (id) DO UPDATE SET start_ns = excluded.start_ns, speed = excluded.speed`, toNS(c.Start), c.Speed); err != nil {
		return fmt.Errorf("queue: set clock: %w", err)
	}
	return nil
}

// Clock implements Store.
func (s *Postgres) Clock(ctx context.Context) (Clock, error) {
	var ns int64
	var speed float64
	err := s.pool.QueryRow(ctx, `SELECT start_ns, speed FROM drill_clock WHERE id = 1`).Scan(&ns, &speed)
	if errors.Is(err, pgx.ErrNoRows) {
		return Clock{}, nil
	}
	if err != nil {
		return Clock{}, fmt.Errorf("queue: clock: %w", err)
	}
	return Clock{Start: fromNS(ns), Speed: speed}, nil
}

func (s *Postgres) Audit(ctx context.Context) ([]ReplayAudit, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+auditCols+`
		FROM replays ORDER BY id LIMIT $1`, MaxList)
	if err != nil {
		return nil, fmt.Errorf("queue: audit: %w", err)
	}
	defer rows.Close()
	return collect(rows, scanAudit)
}
