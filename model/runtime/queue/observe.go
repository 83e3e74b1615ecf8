package queue

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// This file holds what an observer reads off a store without changing it:
// the depths and oldest ages a sampler plots, the per-partner count of due
// leased rows, and every delivery's outcome at the end of a run. Each
// engine answers with one statement, so one consistent snapshot.

// Sample is the queue at one instant, as a time series plots it.
type Sample struct {
	Ready    int64 // ready and due: waiting for a worker
	InFlight int64 // leased and due: claimed by a dispatcher
	// Delayed counts pending deliveries (ready or leased) that are not due
	// yet, created by then, and the due ones of held partners.
	Delayed int64
	// OldestReady and OldestDelayed are the created times of the oldest
	// ready-or-in-flight and of the oldest delayed delivery; zero if none.
	OldestReady, OldestDelayed time.Time
	Delivered, Dead            int64
}

// Outcome is one delivery as it stands: its state and, once terminal,
// when it got there (the dead letter's dead_at for a dead one) and, for a
// dead one, the reason.
type Outcome struct {
	ID, Partner string
	State       State
	Attempt     int
	Created     time.Time
	At          time.Time // last transition
	Reason      string    // dead: the dead letter's reason
}

// sampleRows reads a Sample's columns in order: ready, in flight, delayed,
// delivered, dead, oldest ready, oldest delayed, and the held partners'
// due ready, due leased and oldest.
func sampleRows(r rowScanner) (Sample, error) {
	var s Sample
	var oldReady, oldDelayed, hOldest *int64
	var hReady, hLeased int64
	if err := r.Scan(&s.Ready, &s.InFlight, &s.Delayed, &s.Delivered, &s.Dead, &oldReady, &oldDelayed, &hReady, &hLeased, &hOldest); err != nil {
		return s, err
	}
	s.Delayed += hReady + hLeased
	if hOldest != nil && (oldDelayed == nil || *hOldest < *oldDelayed) {
		oldDelayed = hOldest
	}
	if oldReady != nil {
		s.OldestReady = fromNS(*oldReady)
	}
	if oldDelayed != nil {
		s.OldestDelayed = fromNS(*oldDelayed)
	}
	return s, nil
}

func scanOutcome(r rowScanner) (Outcome, error) {
	var o Outcome
	var state string
	var created, updated, deadAt int64
	err := r.Scan(&o.ID, &o.Partner, &state, &o.Attempt, &created, &updated, &o.Reason, &deadAt)
	o.State, o.Created, o.At = State(state), fromNS(created), fromNS(updated)
	if deadAt != 0 {
		o.At = fromNS(deadAt)
	}
	return o, err
}

func outcomeLimit(limit int) (int, error) {
	if limit <= 0 {
		return 0, fmt.Errorf("queue: outcomes: limit %d must be positive", limit)
	}
	return min(limit, MaxList), nil
}

// sqliteSampleSQL: ?1 is now, ?2 the held partners as a JSON array. The
// claim index carries partner and created, so each figure is an index
// range and no table row is looked up.
const sqliteSampleSQL = `SELECT
	(SELECT count(*) FROM deliveries WHERE state = 'ready' AND run_at <= ?1
		AND partner NOT IN (SELECT value FROM json_each(?2))),
	(SELECT count(*) FROM deliveries WHERE state = 'leased' AND run_at <= ?1
		AND partner NOT IN (SELECT value FROM json_each(?2))),
	(SELECT count(*) FROM deliveries WHERE state IN ('ready', 'leased') AND run_at > ?1 AND created <= ?1),
	(SELECT count(*) FROM deliveries WHERE state = 'delivered'),
	(SELECT count(*) FROM deliveries WHERE state = 'dead'),
	(SELECT min(created) FROM deliveries WHERE state IN ('ready', 'leased') AND run_at <= ?1
		AND partner NOT IN (SELECT value FROM json_each(?2))),
	(SELECT min(created) FROM deliveries WHERE state IN ('ready', 'leased') AND run_at > ?1 AND created <= ?1),
	(SELECT count(*) FROM deliveries WHERE state = 'ready' AND run_at <= ?1
		AND partner IN (SELECT value FROM json_each(?2))),
	(SELECT count(*) FROM deliveries WHERE state = 'leased' AND run_at <= ?1
		AND partner IN (SELECT value FROM json_each(?2))),
	(SELECT min(created) FROM deliveries WHERE state IN ('ready', 'leased') AND run_at <= ?1
		AND partner IN (SELECT value FROM json_each(?2)))`

// sqliteSampleNoHeldSQL is sqliteSampleSQL when no partner is held (?1
// is now), the common case, read in fewer passes: the due ready rows
// once, the leased once, the rows not due yet once; the delivered rows not
// at all: delivered is every row less the pending and the dead, and every
// row is the largest rowid, read off the table's b-tree in O(log n), as
// rows are never deleted and SQLite gives a new row the largest rowid
// plus one (counting the rows read every index entry: a seventh of a
// sample's cost with 50,000 rows due and 50,000 delivered; TestObserve
// checks that known ids enqueued again move no count). Under overload the due backlog is
// tens of thousands of rows, read every sample interval, so each
// expression evaluated per row counts.
const sqliteSampleNoHeldSQL = `SELECT r.n, l.n, w.delayed, a.n - r.n - l.n - w.n - x.n, x.n,
	CASE WHEN r.m IS NULL THEN l.m WHEN l.m IS NULL THEN r.m ELSE min(r.m, l.m) END, w.m
	FROM (SELECT count(*) AS n, min(created) AS m FROM deliveries WHERE state = 'ready' AND run_at <= ?1) AS r,
	(SELECT count(*) AS n, min(created) AS m FROM deliveries WHERE state = 'leased' AND run_at <= ?1) AS l,
	(SELECT count(*) AS n, count(*) FILTER (WHERE created <= ?1) AS delayed, min(created) FILTER (WHERE created <= ?1) AS m
		FROM deliveries WHERE state IN ('ready', 'leased') AND run_at > ?1) AS w,
	(SELECT count(*) AS n FROM deliveries WHERE state = 'dead') AS x,
	(SELECT coalesce(max(rowid), 0) AS n FROM deliveries) AS a`

// noHeldRows reads sqliteSampleNoHeldSQL's columns as sampleRows reads
// sqliteSampleSQL's: nothing held.
type noHeldRows struct{ r rowScanner }

func (n noHeldRows) Scan(dst ...any) error {
	if err := n.r.Scan(dst[:7]...); err != nil {
		return err
	}
	*dst[7].(*int64), *dst[8].(*int64), *dst[9].(**int64) = 0, 0, nil
	return nil
}

// pgSampleSQL is sqliteSampleSQL for PostgreSQL: $2 is a text array.
const pgSampleSQL = `SELECT
	(SELECT count(*) FROM deliveries WHERE state = 'ready' AND run_at <= $1 AND partner <> ALL($2::text[])),
	(SELECT count(*) FROM deliveries WHERE state = 'leased' AND run_at <= $1 AND partner <> ALL($2::text[])),
	(SELECT count(*) FROM deliveries WHERE state IN ('ready', 'leased') AND run_at > $1 AND created <= $1),
	(SELECT count(*) FROM deliveries WHERE state = 'delivered'),
	(SELECT count(*) FROM deliveries WHERE state = 'dead'),
	(SELECT min(created) FROM deliveries WHERE state IN ('ready', 'leased') AND run_at <= $1 AND partner <> ALL($2::text[])),
	(SELECT min(created) FROM deliveries WHERE state IN ('ready', 'leased') AND run_at > $1 AND created <= $1),
	(SELECT count(*) FROM deliveries WHERE state = 'ready' AND run_at <= $1 AND partner = ANY($2::text[])),
	(SELECT count(*) FROM deliveries WHERE state = 'leased' AND run_at <= $1 AND partner = ANY($2::text[])),
	(SELECT min(created) FROM deliveries WHERE state IN ('ready', 'leased') AND run_at <= $1 AND partner = ANY($2::text[]))`

// outcomeCols are the columns scanOutcome reads; ?1/$1 is the id to page
// after, ?2/$2 the limit.
const outcomeSQL = `SELECT d.id, d.partner, d.state, d.attempt, d.created, d.updated,
	COALESCE(l.reason, ''), COALESCE(l.dead_at, 0)
	FROM deliveries d LEFT JOIN dead_letters l ON l.id = d.id AND d.state = 'dead'
	WHERE d.id > `

const leasedDueSQL = `SELECT partner, count(*) FROM deliveries WHERE state = 'leased' AND run_at <= `

// Sample implements Store.
func (s *SQLite) Sample(ctx context.Context, now time.Time, held []string) (Sample, error) {
	js, err := json.Marshal(append([]string{}, held...))
	if err != nil {
		return Sample{}, err
	}
	var r rowScanner
	if len(held) == 0 {
		r = noHeldRows{s.db.QueryRowContext(ctx, sqliteSampleNoHeldSQL, toNS(now))}
	} else {
		r = s.db.QueryRowContext(ctx, sqliteSampleSQL, toNS(now), string(js))
	}
	sm, err := sampleRows(r)
	if err != nil {
		return sm, fmt.Errorf("queue: sample: %w", err)
	}
	return sm, nil
}

// Outcomes implements Store.
func (s *SQLite) Outcomes(ctx context.Context, after string, limit int) ([]Outcome, error) {
	limit, err := outcomeLimit(limit)
	if err != nil {
		return nil, err
	}
	rows, err := s.db.QueryContext(ctx, outcomeSQL+`?1 ORDER BY d.id LIMIT ?2`, after, limit)
	if err != nil {
		return nil, fmt.Errorf("queue: outcomes: %w", err)
	}
	defer rows.Close()
	return collect(rows, scanOutcome)
}

// LeasedDue implements Store.
func (s *SQLite) LeasedDue(ctx context.Context, now time.Time) (map[string]int64, error) {
	rows, err := s.db.QueryContext(ctx, leasedDueSQL+`?1 GROUP BY partner`, toNS(now))
	if err != nil {
		return nil, fmt.Errorf("queue: leased due: %w", err)
	}
	defer rows.Close()
	return collectPartnerCounts(rows)
}

// Sample implements Store.
func (s *Postgres) Sample(ctx context.Context, now time.Time, held []string) (Sample, error) {
	sm, err := sampleRows(s.pool.QueryRow(ctx, pgSampleSQL, toNS(now), append([]string{}, held...)))
	if err != nil {
		return sm, fmt.Errorf("queue: sample: %w", err)
	}
	return sm, nil
}

// Outcomes implements Store.
func (s *Postgres) Outcomes(ctx context.Context, after string, limit int) ([]Outcome, error) {
	limit, err := outcomeLimit(limit)
	if err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, outcomeSQL+`$1 ORDER BY d.id LIMIT $2`, after, limit)
	if err != nil {
		return nil, fmt.Errorf("queue: outcomes: %w", err)
	}
	defer rows.Close()
	return collect(rows, scanOutcome)
}

// LeasedDue implements Store.
func (s *Postgres) LeasedDue(ctx context.Context, now time.Time) (map[string]int64, error) {
	rows, err := s.pool.Query(ctx, leasedDueSQL+`$1 GROUP BY partner`, toNS(now))
	if err != nil {
		return nil, fmt.Errorf("queue: leased due: %w", err)
	}
	defer rows.Close()
	return collectPartnerCounts(rows)
}

func collectPartnerCounts(rs rows) (map[string]int64, error) {
	out := map[string]int64{}
	for rs.Next() {
		var p string
		var n int64
		if err := rs.Scan(&p, &n); err != nil {
			return nil, err
		}
		out[p] = n
	}
	return out, rs.Err()
}

// Sample implements Store.
func (m *Memory) Sample(ctx context.Context, now time.Time, held []string) (Sample, error) {
	var s Sample
	if err := m.lock(ctx); err != nil {
		return s, err
	}
	defer m.mu.Unlock()
	now = norm(now)
	oldest := func(t *time.Time, c time.Time) {
		if t.IsZero() || c.Before(*t) {
			*t = c
		}
	}
	for _, r := range m.rows {
		switch r.State {
		case StateDelivered:
			s.Delivered++
			continue
		case StateDead:
			s.Dead++
			continue
		}
		due := !r.RunAt.After(now)
		switch {
		case due && slices.Contains(held, r.Partner):
			s.Delayed++
			oldest(&s.OldestDelayed, r.Created)
		case due && r.State == StateReady:
			s.Ready++
			oldest(&s.OldestReady, r.Created)
		case due:
			s.InFlight++
			oldest(&s.OldestReady, r.Created)
		case !r.Created.After(now):
			s.Delayed++
			oldest(&s.OldestDelayed, r.Created)
		}
	}
	return s, nil
}

// Outcomes implements Store.
func (m *Memory) Outcomes(ctx context.Context, after string, limit int) ([]Outcome, error) {
	limit, err := outcomeLimit(limit)
	if err != nil {
		return nil, err
	}
	if err := m.lock(ctx); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	var out []Outcome
	for id, r := range m.rows {
		if id <= after {
			continue
		}
		o := Outcome{ID: id, Partner: r.Partner, State: r.State, Attempt: r.Attempt, Created: r.Created, At: m.ended[id]}
		if dl, ok := m.dead[id]; ok && r.State == StateDead {
			o.Reason, o.At = dl.Reason, dl.DeadAt
		}
		out = append(out, o)
	}
	slices.SortFunc(out, func(a, b Outcome) int { return cmp.Compare(a.ID, b.ID) })
	return out[:min(len(out), limit)], nil
}

// LeasedDue implements Store.
func (m *Memory) LeasedDue(ctx context.Context, now time.Time) (map[string]int64, error) {
	if err := m.lock(ctx); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	now = norm(now)
	out := map[string]int64{}
	for _, r := range m.rows {
		if r.State == StateLeased && !r.RunAt.After(now) {
			out[r.Partner]++
		}
	}
	return out, nil
}
