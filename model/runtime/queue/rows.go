package queue

import "time"

// rows is what a database/sql result set and a pgx one have in common, so
// that SQLite and PostgreSQL read their rows with the same code.
type rows interface {
	rowScanner
	Next() bool
	Err() error
}

// collect scans every row of rs with scan. The queries that feed it carry a
// LIMIT, which is what bounds the result.
func collect[T any](rs rows, scan func(rowScanner) (T, error)) ([]T, error) {
	var out []T
	for rs.Next() {
		v, err := scan(rs)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rs.Err()
}

// collectRunAts reads (id, run_at) rows into a map.
func collectRunAts(rs rows) (map[string]time.Time, error) {
	out := map[string]time.Time{}
	for rs.Next() {
		var id string
		var ns int64
		if err := rs.Scan(&id, &ns); err != nil {
			return nil, err
		}
		out[id] = fromNS(ns)
	}
	return out, rs.Err()
}

// attemptCols are the columns scanAttempt reads, in order.
const attemptCols = `delivery_id, ordinal, started, ended, status, error, owner`

func scanAttempt(r rowScanner) (AttemptRecord, error) {
	var a AttemptRecord
	var started, ended int64
	err := r.Scan(&a.DeliveryID, &a.Ordinal, &started, &ended, &a.Status, &a.Error, &a.Owner)
	a.Started, a.Ended = fromNS(started), fromNS(ended)
	return a, err
}

// auditCols are the columns scanAudit reads, in order.
const auditCols = `id, at, who, filter, count, batch, dry_run`

func scanAudit(r rowScanner) (ReplayAudit, error) {
	var a ReplayAudit
	var at int64
	err := r.Scan(&a.ID, &at, &a.Who, &a.Filter, &a.Count, &a.Batch, &a.DryRun)
	a.At = fromNS(at)
	return a, err
}
