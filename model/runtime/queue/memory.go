package queue

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

// Memory is an in-memory Store with the same semantics as SQLite, for tests.
// Claim scans every row, so it suits small queues; the simulation keeps its
// own queue.
type Memory struct {
	mu       sync.Mutex
	closed   bool
	rows     map[string]*Delivery
	dead     map[string]*DeadLetter
	ended    map[string]time.Time // when a delivered row was acknowledged
	attempts map[string][]AttemptRecord
	audit    []ReplayAudit
	clock    Clock
}

var _ Store = (*Memory)(nil)

// NewMemory returns an empty in-memory store.
func NewMemory() *Memory {
	return &Memory{
		rows:     map[string]*Delivery{},
		dead:     map[string]*DeadLetter{},
		ended:    map[string]time.Time{},
		attempts: map[string][]AttemptRecord{},
	}
}

var errClosed = errors.New("queue: store is closed")

// lock takes the mutex and checks the store and the context are usable.
func (m *Memory) lock(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return errClosed
	}
	return nil
}

// norm rounds a time trip through nanoseconds, as SQLite stores it.
func norm(t time.Time) time.Time { return fromNS(toNS(t)) }

func cloneDelivery(d *Delivery) Delivery {
	c := *d
	c.Payload = slices.Clone(d.Payload)
	return c
}

// Enqueue implements Store.
func (m *Memory) Enqueue(ctx context.Context, ds []Delivery) (int, error) {
	for _, d := range ds {
		if err := validateDelivery("enqueue", d); err != nil {
			return 0, err
		}
	}
	if err := m.lock(ctx); err != nil {
		return 0, err
	}
	defer m.mu.Unlock()
	accepted := 0
	for _, d := range ds {
		if _, ok := m.rows[d.ID]; ok {
			continue
		}
		if _, ok := m.dead[d.ID]; ok {
			continue
		}
		r := &Delivery{
			ID: d.ID, Event: d.Event, Partner: d.Partner, Cohort: d.Cohort,
			Payload: slices.Clone(d.Payload), Attempt: d.Attempt,
			Created: norm(d.Created), FirstSeen: norm(d.FirstSeen), RunAt: norm(runAtOf(d)),
			PrevDelay: d.PrevDelay, State: StateReady, LastError: d.LastError,
		}
		m.rows[d.ID] = r
		accepted++
	}
	return accepted, nil
}

// Reject implements Store.
func (m *Memory) Reject(ctx context.Context, ds []Delivery, reason string, at time.Time) (int, error) {
	if err := validateReject(ds, reason, at); err != nil {
		return 0, err
	}
	if err := m.lock(ctx); err != nil {
		return 0, err
	}
	defer m.mu.Unlock()
	at = norm(at)
	rejected := 0
	for _, d := range ds {
		if _, ok := m.rows[d.ID]; ok {
			continue
		}
		if _, ok := m.dead[d.ID]; ok {
			continue
		}
		created, firstSeen := norm(d.Created), norm(d.FirstSeen)
		m.rows[d.ID] = &Delivery{
			ID: d.ID, Event: d.Event, Partner: d.Partner, Cohort: d.Cohort,
			Payload: slices.Clone(d.Payload), Created: created, FirstSeen: firstSeen,
			RunAt: norm(runAtOf(d)), State: StateDead,
		}
		m.dead[d.ID] = &DeadLetter{
			ID: d.ID, Event: d.Event, Partner: d.Partner, Cohort: d.Cohort, Reason: reason,
			Created: created, FirstSeen: firstSeen, DeadAt: at, Payload: slices.Clone(d.Payload),
		}
		rejected++
	}
	return rejected, nil
}

// Claim implements Store.
func (m *Memory) Claim(ctx context.Context, owner string, now time.Time, lease time.Duration, limit int) ([]Delivery, error) {
	limit, err := validateClaim(owner, lease, limit)
	if err != nil {
		return nil, err
	}
	if err := m.lock(ctx); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	return m.claimLocked(owner, now, lease, limit), nil
}

// claimLocked is Claim's work, with m.mu held.
func (m *Memory) claimLocked(owner string, now time.Time, lease time.Duration, limit int) []Delivery {
	now = norm(now)
	var due []*Delivery
	for _, r := range m.rows {
		if claimable(r, now) {
			due = append(due, r)
		}
	}
	slices.SortFunc(due, func(a, b *Delivery) int {
		return cmp.Or(a.RunAt.Compare(b.RunAt), cmp.Compare(a.ID, b.ID))
	})
	due = due[:min(len(due), limit)]
	out := make([]Delivery, 0, len(due))
	for _, r := range due {
		r.State = StateLeased
		r.LeaseOwner = owner
		r.LeaseUntil = norm(now.Add(lease))
		if r.FirstSeen.IsZero() {
			r.FirstSeen = now
		}
		out = append(out, cloneDelivery(r))
	}
	return out
}

func claimable(r *Delivery, now time.Time) bool {
	switch r.State {
	case StateReady:
		return !r.RunAt.After(now)
	case StateLeased:
		return !r.LeaseUntil.After(now)
	}
	return false
}

// Complete implements Store. The whole batch is validated first, so an
// invalid completion changes nothing.
func (m *Memory) Complete(ctx context.Context, cs []Completion) (CompleteResult, error) {
	var res CompleteResult
	if err := validateCompletions(cs); err != nil {
		return res, err
	}
	if err := m.lock(ctx); err != nil {
		return res, err
	}
	defer m.mu.Unlock()
	return m.completeLocked(cs), nil
}

// CompleteClaim implements Store.
func (m *Memory) CompleteClaim(ctx context.Context, cs []Completion, owner string, now time.Time, lease time.Duration, limit int) (CompleteResult, []Delivery, error) {
	limit, err := validateCompleteClaim(cs, owner, lease, limit)
	if err != nil {
		return CompleteResult{}, nil, err
	}
	if err := m.lock(ctx); err != nil {
		return CompleteResult{}, nil, err
	}
	defer m.mu.Unlock()
	res := m.completeLocked(cs)
	if limit == 0 {
		return res, nil, nil
	}
	return res, m.claimLocked(owner, now, lease, limit), nil
}

// completeLocked is Complete's work, with m.mu held.
func (m *Memory) completeLocked(cs []Completion) CompleteResult {
	var res CompleteResult
	for _, c := range cs {
		r, ok := m.rows[c.ID]
		if !ok || r.State != StateLeased || r.LeaseOwner != c.Owner {
			res.Stale++
			continue
		}
		res.Applied++
		if c.Kind == KindHold {
			r.Attempt, r.LastError = c.Attempt, c.LastError
			r.RunAt, r.PrevDelay, r.LeaseUntil = norm(c.RunAt), c.PrevDelay, norm(c.LeaseUntil)
			if c.RecordAttempt {
				m.attempts[c.ID] = append(m.attempts[c.ID], AttemptRecord{
					DeliveryID: c.ID, Ordinal: c.Attempt, Started: norm(c.Started), Ended: norm(c.At),
					Status: c.Status, Error: c.LastError, Owner: c.Owner,
				})
			}
			continue
		}
		r.LeaseOwner, r.LeaseUntil = "", time.Time{}
		if c.Kind == KindRelease {
			r.State = StateReady
			continue
		}
		r.Attempt = c.Attempt
		r.LastError = c.LastError
		switch c.Kind {
		case KindAck:
			r.State = StateDelivered
			m.ended[c.ID] = norm(c.At)
		case KindReschedule:
			r.State = StateReady
			r.RunAt = norm(c.RunAt)
			r.PrevDelay = c.PrevDelay
		case KindDeadLetter:
			r.State = StateDead
			m.dead[c.ID] = &DeadLetter{
				ID: r.ID, Event: r.Event, Partner: r.Partner, Cohort: r.Cohort,
				Reason: c.Reason, LastError: c.LastError, Attempts: c.Attempt,
				Created: r.Created, FirstSeen: r.FirstSeen, DeadAt: norm(c.At),
				Payload: slices.Clone(r.Payload),
			}
		}
		if c.RecordAttempt {
			m.attempts[c.ID] = append(m.attempts[c.ID], AttemptRecord{
				DeliveryID: c.ID, Ordinal: c.Attempt, Started: norm(c.Started), Ended: norm(c.At),
				Status: c.Status, Error: c.LastError, Owner: c.Owner,
			})
		}
	}
	return res
}

// Release implements Store.
func (m *Memory) Release(ctx context.Context, owner string) (int, error) {
	if err := m.lock(ctx); err != nil {
		return 0, err
	}
	defer m.mu.Unlock()
	n := 0
	for _, r := range m.rows {
		if r.State == StateLeased && r.LeaseOwner == owner {
			r.State, r.LeaseOwner, r.LeaseUntil = StateReady, "", time.Time{}
			n++
		}
	}
	return n, nil
}

// Counts implements Store.
func (m *Memory) Counts(ctx context.Context, now time.Time) (Counts, error) {
	var c Counts
	if err := m.lock(ctx); err != nil {
		return c, err
	}
	defer m.mu.Unlock()
	now = norm(now)
	for _, r := range m.rows {
		switch r.State {
		case StateReady:
			if r.RunAt.After(now) {
				c.Delayed++
			} else {
				c.Ready++
			}
		case StateLeased:
			c.Leased++
		case StateDelivered:
			c.Delivered++
		case StateDead:
			c.Dead++
		}
	}
	return c, nil
}

// Get implements Store.
func (m *Memory) Get(ctx context.Context, id string) (Delivery, error) {
	if err := m.lock(ctx); err != nil {
		return Delivery{}, err
	}
	defer m.mu.Unlock()
	r, ok := m.rows[id]
	if !ok {
		return Delivery{}, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	return cloneDelivery(r), nil
}

// RunAts implements Store.
func (m *Memory) RunAts(ctx context.Context) (map[string]time.Time, error) {
	if err := m.lock(ctx); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	out := map[string]time.Time{}
	for id, r := range m.rows {
		if r.State == StateReady || r.State == StateLeased {
			out[id] = r.RunAt
		}
	}
	return out, nil
}

// Attempts implements Store.
func (m *Memory) Attempts(ctx context.Context, id string) ([]AttemptRecord, error) {
	if err := m.lock(ctx); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	a := m.attempts[id]
	return slices.Clone(a[:min(len(a), MaxList)]), nil
}

// matching returns the dead letters f selects, oldest dead_at first.
func (m *Memory) matching(f DLQFilter, cutoffNS int64) []*DeadLetter {
	var out []*DeadLetter
	for _, d := range m.dead {
		if f.Reason != "" && d.Reason != f.Reason {
			continue
		}
		if f.Partner != "" && d.Partner != f.Partner {
			continue
		}
		if f.Cohort != "" && d.Cohort != f.Cohort {
			continue
		}
		if cutoffNS != 0 && toNS(d.DeadAt) > cutoffNS {
			continue
		}
		out = append(out, d)
	}
	slices.SortFunc(out, func(a, b *DeadLetter) int {
		return cmp.Or(a.DeadAt.Compare(b.DeadAt), cmp.Compare(a.ID, b.ID))
	})
	return out
}

// DeadLetters implements Store.
func (m *Memory) DeadLetters(ctx context.Context, f DLQFilter) ([]DeadLetter, error) {
	cut, err := cutoff(f)
	if err != nil {
		return nil, err
	}
	if err := m.lock(ctx); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	match := m.matching(f, cut)
	match = match[:min(len(match), listLimit(f.Limit))]
	out := make([]DeadLetter, len(match))
	for i, d := range match {
		out[i] = *d
		out[i].Payload = slices.Clone(d.Payload)
	}
	return out, nil
}

// Replay implements Store.
func (m *Memory) Replay(ctx context.Context, f DLQFilter, o ReplayOptions) (ReplayResult, error) {
	var res ReplayResult
	p, err := planReplay(f, o)
	if err != nil {
		return res, err
	}
	if err := m.lock(ctx); err != nil {
		return res, err
	}
	res.Matched = len(m.matching(f, p.cutoffNS))
	if p.limit > 0 {
		res.Matched = min(res.Matched, p.limit)
	}
	if o.DryRun {
		res.Batches = (res.Matched + p.batch - 1) / p.batch
		m.audit = append(m.audit, ReplayAudit{
			ID: int64(len(m.audit) + 1), At: norm(p.now()), Who: o.Who, Filter: p.filter, Count: res.Matched, DryRun: true,
		})
		m.mu.Unlock()
		return res, nil
	}
	m.mu.Unlock()
	for res.Moved < res.Matched {
		if res.Batches > 0 {
			if err := p.pause(ctx); err != nil {
				return res, err
			}
		}
		if err := m.lock(ctx); err != nil {
			return res, err
		}
		now := norm(p.now())
		batch := m.matching(f, p.cutoffNS)
		batch = batch[:min(len(batch), p.batch, res.Matched-res.Moved)]
		if len(batch) == 0 {
			m.mu.Unlock()
			break // someone else drained the DLQ meanwhile
		}
		ids := make([]string, 0, len(batch))
		for _, d := range batch {
			ids = append(ids, d.ID)
			m.rows[d.ID] = &Delivery{
				ID: d.ID, Event: d.Event, Partner: d.Partner, Cohort: d.Cohort,
				Payload: d.Payload, Created: d.Created, FirstSeen: d.FirstSeen,
				RunAt: now, State: StateReady, LastError: d.LastError,
			}
			delete(m.dead, d.ID)
		}
		res.Batches++
		res.Moved += len(batch)
		m.audit = append(m.audit, ReplayAudit{
			ID: int64(len(m.audit) + 1), At: now, Who: o.Who, Filter: p.filter, Count: len(batch), Batch: res.Batches,
		})
		m.mu.Unlock()
		if o.OnMoved != nil {
			o.OnMoved(now, ids)
		}
	}
	return res, nil
}

// Audit implements Store.
func (m *Memory) Audit(ctx context.Context) ([]ReplayAudit, error) {
	if err := m.lock(ctx); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	return slices.Clone(m.audit[:min(len(m.audit), MaxList)]), nil
}

// SetClock implements Store.
func (m *Memory) SetClock(ctx context.Context, c Clock) error {
	if err := checkClock(c); err != nil {
		return err
	}
	if err := m.lock(ctx); err != nil {
		return err
	}
	defer m.mu.Unlock()
	m.clock = Clock{Start: norm(c.Start), Speed: c.Speed}
	return nil
}

// Clock implements Store.
func (m *Memory) Clock(ctx context.Context) (Clock, error) {
	if err := m.lock(ctx); err != nil {
		return Clock{}, err
	}
	defer m.mu.Unlock()
	return m.clock, nil
}

// Close implements Store; later calls fail.
func (m *Memory) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	return nil
}
