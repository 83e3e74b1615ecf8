package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/stormdrill/stormdrill/model"
)

// State is where a delivery stands in the durable queue.
type State string

// The states a delivery row can be in. Every delivery is in exactly one.
const (
	StateReady     State = "ready"     // waiting for run_at, or due
	StateLeased    State = "leased"    // claimed by a dispatcher until lease_until
	StateDelivered State = "delivered" // terminal: a partner accepted it
	StateDead      State = "dead"      // terminal: in the dead-letter queue
)

// Bounds on what one call reads or writes, so no call is unbounded.
const (
	MaxClaim           = 10000                    // most deliveries one Claim hands out
	MaxList            = 100000                   // most rows DeadLetters, Audit or Attempts return
	MaxReplayBatch     = model.MaxReplayBatch     // most dead letters one replay transaction moves
	MaxRejectBatch     = 10000                    // most deliveries one Reject call writes
	DefaultReplayBatch = model.DefaultReplayBatch // replay batch size when none is given
	MinReplayRate      = model.MinReplayRate      // slowest replay rate in batches/s: one batch an hour
)

// ErrNotFound is returned by Get for an unknown delivery id.
var ErrNotFound = errors.New("queue: delivery not found")

// Delivery is one (event, subscriber) pair as the queue stores it. ID is the
// idempotency key, e.g. "evt-000123:acme-0".
type Delivery struct {
	ID, Event, Partner, Cohort string
	Payload                    []byte
	Attempt                    int       // attempts made so far
	Created                    time.Time // scheduled arrival of the event
	FirstSeen                  time.Time // first claim by a dispatcher; zero until then
	RunAt                      time.Time // not due before this
	PrevDelay                  time.Duration
	LeaseOwner                 string
	LeaseUntil                 time.Time
	State                      State
	LastError                  string
}

// CompletionKind says what transition a completion asks for.
type CompletionKind int

// Completion kinds, prefixed Kind because DeadLetter names the DLQ entry.
// The zero value is invalid, so a forgotten Kind is an error.
const (
	KindAck        CompletionKind = iota + 1 // delivered
	KindReschedule                           // back to ready at RunAt, with the new Attempt count
	KindDeadLetter                           // to the DLQ with Reason
	KindRelease                              // give the lease back unchanged (not attempted)
	// KindHold is a reschedule that keeps the lease: the row gets the new
	// Attempt, RunAt and PrevDelay but stays leased by Owner until
	// LeaseUntil. A dispatcher that keeps the delivery in memory until it is
	// due uses it, so its own claims cannot hand the row out twice; if that
	// dispatcher dies the row is claimable once the lease expires.
	KindHold
)

func (k CompletionKind) String() string {
	switch k {
	case KindAck:
		return "ack"
	case KindReschedule:
		return "reschedule"
	case KindDeadLetter:
		return "dead-letter"
	case KindRelease:
		return "release"
	case KindHold:
		return "hold"
	}
	return fmt.Sprintf("CompletionKind(%d)", int(k))
}

// Completion is the end of one leased delivery's turn. It applies only while
// the row is still leased by Owner; otherwise it is stale and ignored.
type Completion struct {
	ID, Owner     string
	Kind          CompletionKind
	At            time.Time     // when the attempt ended
	Attempt       int           // new attempt count (Ack, Reschedule, DeadLetter)
	RunAt         time.Time     // Reschedule: next run time
	PrevDelay     time.Duration // Reschedule: the delay just chosen
	Reason        string        // DeadLetter: permanent, max-attempts, ...
	LastError     string
	Status        int       // HTTP status of the attempt, 0 if none
	Started       time.Time // attempt start, for the history
	RecordAttempt bool      // append an attempts row (ordinal = Attempt)
	LeaseUntil    time.Time // Hold: the lease's new expiry
}

// CompleteResult counts what a Complete batch did.
type CompleteResult struct {
	Applied int // transitions made
	Stale   int // ignored: the row was no longer leased by the completion's owner
}

// Counts is the queue depth by state at a given time.
type Counts struct {
	Ready     int64 // ready and due (run_at <= now)
	Delayed   int64 // ready but run_at > now
	Leased    int64
	Delivered int64
	Dead      int64
}

// Total is the number of deliveries the store knows.
func (c Counts) Total() int64 { return c.Ready + c.Delayed + c.Leased + c.Delivered + c.Dead }

// AttemptRecord is one row of a delivery's attempt history.
type AttemptRecord struct {
	DeliveryID string
	Ordinal    int
	Started    time.Time
	Ended      time.Time
	Status     int
	Error      string
	Owner      string
}

// DeadLetter is one entry of the dead-letter queue.
type DeadLetter struct {
	ID, Event, Partner, Cohort string
	Reason, LastError          string
	Attempts                   int
	Created, FirstSeen, DeadAt time.Time
	Payload                    []byte
}

// DLQFilter selects dead letters. Empty fields match everything.
type DLQFilter struct {
	Reason    string
	Partner   string
	Cohort    string
	OlderThan time.Duration // dead_at <= Now - OlderThan; needs Now
	Now       time.Time
	Limit     int // at most this many (0: MaxList for listing, all for replay)
}

// ReplayOptions bound a replay. Now and Sleep are passed in so tests and the
// simulation control time.
type ReplayOptions struct {
	Batch  int     // rows per transaction, at most MaxReplayBatch (0: DefaultReplayBatch)
	Rate   float64 // batches per second; 0 or less: no pause between batches
	DryRun bool    // count what would move, move nothing
	Who    string
	Now    func() time.Time    // run_at and audit time; nil: the filter's Now
	Sleep  func(time.Duration) // nil: a context-aware timer
	// OnMoved, if set, is called after each batch has been committed with
	// the time it was moved at and the ids it moved (a drill's report
	// follows the replayed deliveries by id).
	OnMoved func(at time.Time, ids []string)
}

// ReplayResult reports a replay. In a dry run Moved is 0 and Batches is how
// many batches a real run would take.
type ReplayResult struct {
	Matched, Moved, Batches int
}

// ReplayAudit is one audit record: one per replay batch, one per dry run.
type ReplayAudit struct {
	ID     int64
	At     time.Time
	Who    string
	Filter string // JSON of the filter
	Count  int
	Batch  int // 1-based batch number within its replay; 0 for a dry run
	DryRun bool
}

// Clock is the drill clock a store's times were written on. A live drill
// runs Speed times as fast as the wall clock from Start, and every time it
// writes (created, run_at, dead_at, attempt times) is an instant of that
// clock: Start + (wall - Start) × Speed. Recorded in the store (SetClock),
// it turns those instants back into the wall-clock instants of the run,
// which is what a reader of the store after the run wants. The zero Clock
// means the times are wall-clock instants already.
type Clock struct {
	Start time.Time
	Speed float64 // > 0; 0 reads as 1
}

func (c Clock) speed() float64 {
	if c.Speed > 0 {
		return c.Speed
	}
	return 1
}

// Wall is the wall-clock instant of the store's instant t (zero stays zero).
func (c Clock) Wall(t time.Time) time.Time {
	if t.IsZero() || c.speed() == 1 {
		return t
	}
	return c.Start.Add(time.Duration(float64(t.Sub(c.Start)) / c.speed()))
}

// At is the store's instant for the wall-clock instant w.
func (c Clock) At(w time.Time) time.Time {
	if c.speed() == 1 {
		return w
	}
	return c.Start.Add(time.Duration(float64(w.Sub(c.Start)) * c.speed()))
}

// checkClock refuses a clock SetClock cannot record.
func checkClock(c Clock) error {
	if !(c.Speed > 0) || c.Speed > 1e9 || c.Start.IsZero() {
		return fmt.Errorf("queue: set clock: want a start and a speed above 0 (got %v, %v)", c.Start, c.Speed)
	}
	return nil
}

// Store is a durable (or, for tests, in-memory) delivery queue.
type Store interface {
	// Enqueue inserts deliveries as ready in one transaction. A delivery
	// whose id is already known is ignored (idempotency), so accepted may be
	// less than len(ds). A zero RunAt means Created.
	Enqueue(ctx context.Context, ds []Delivery) (accepted int, err error)
	// Claim leases up to limit deliveries that are ready and due, or leased
	// with an expired lease (at-least-once), oldest run_at first, atomically.
	Claim(ctx context.Context, owner string, now time.Time, lease time.Duration, limit int) ([]Delivery, error)
	// Complete applies a batch of transitions in one transaction.
	Complete(ctx context.Context, cs []Completion) (CompleteResult, error)
	// CompleteClaim is a dispatcher's round trip to the store: Complete of
	// cs and then, if limit is positive, Claim, in one transaction (both
	// happen or neither does). The transitions are written first, so a
	// delivery cs ends is never handed out again by the claim. With limit 0
	// it only completes; with no completions it only claims.
	CompleteClaim(ctx context.Context, cs []Completion, owner string, now time.Time, lease time.Duration, limit int) (CompleteResult, []Delivery, error)
	// Reject writes deliveries that die before they are ever queued (a full
	// queue) straight to the DLQ, in one transaction: each becomes a dead
	// row with attempt 0 and a dead letter with reason, no last error,
	// attempts 0 and dead_at at. Like Enqueue, a delivery whose id is
	// already known is ignored and not counted. At most MaxRejectBatch
	// deliveries per call.
	Reject(ctx context.Context, ds []Delivery, reason string, at time.Time) (rejected int, err error)
	// Release gives back every lease of owner, keeping run_at and attempt.
	Release(ctx context.Context, owner string) (int, error)
	Counts(ctx context.Context, now time.Time) (Counts, error)
	// Sample reads the queue's depths and oldest ages at now in one
	// snapshot. The due deliveries of the partners in held (whose breaker
	// is open, say) wait out that hold, not a worker: they count as
	// delayed.
	Sample(ctx context.Context, now time.Time, held []string) (Sample, error)
	// LeasedDue counts the leased, due deliveries per partner.
	LeasedDue(ctx context.Context, now time.Time) (map[string]int64, error)
	// Outcomes pages through every delivery in id order: at most limit
	// (capped at MaxList) whose id sorts after after.
	Outcomes(ctx context.Context, after string, limit int) ([]Outcome, error)
	Get(ctx context.Context, id string) (Delivery, error)
	// RunAts maps every pending (ready or leased) delivery to its run_at.
	RunAts(ctx context.Context) (map[string]time.Time, error)
	// Attempts returns a delivery's attempt history, oldest first.
	Attempts(ctx context.Context, id string) ([]AttemptRecord, error)
	// DeadLetters lists the DLQ, oldest dead_at first.
	DeadLetters(ctx context.Context, f DLQFilter) ([]DeadLetter, error)
	// Replay moves matching dead letters back to ready with a fresh attempt
	// budget and the same id, in bounded batches at a bounded rate.
	Replay(ctx context.Context, f DLQFilter, opts ReplayOptions) (ReplayResult, error)
	// Audit lists the replay audit records, oldest first.
	Audit(ctx context.Context) ([]ReplayAudit, error)
	// SetClock records the drill clock the store's times are written on
	// (see Clock), replacing any recorded before.
	SetClock(ctx context.Context, c Clock) error
	// Clock returns the recorded drill clock, or the zero Clock if none.
	Clock(ctx context.Context) (Clock, error)
	Close() error
}

// Open opens a store by DSN: "sqlite:PATH", "postgres://USER:PASS@127.0.0.1:PORT/DB" (loopback only) or "memory:".
func Open(dsn string) (Store, error) {
	scheme, rest, ok := strings.Cut(dsn, ":")
	if !ok {
		return nil, fmt.Errorf("queue: dsn %q: want sqlite:PATH, postgres://USER@127.0.0.1/DB or memory:", RedactDSN(dsn))
	}
	switch strings.ToLower(scheme) {
	case "sqlite":
		if rest == "" {
			return nil, fmt.Errorf("queue: dsn %q: sqlite needs a file path", RedactDSN(dsn))
		}
		s, err := OpenSQLite(rest)
		if err != nil {
			return nil, err // not a nil *SQLite inside a non-nil Store
		}
		return s, nil
	case "memory":
		if rest != "" {
			return nil, fmt.Errorf("queue: dsn %q: memory takes no argument", RedactDSN(dsn))
		}
		return NewMemory(), nil
	case "postgres", "postgresql":
		s, err := OpenPostgres(dsn)
		if err != nil {
			return nil, err // not a nil *Postgres inside a non-nil Store
		}
		return s, nil
	}
	return nil, fmt.Errorf("queue: dsn %q: unknown store %q; want sqlite:PATH, postgres://USER@127.0.0.1/DB or memory:", RedactDSN(dsn), scheme)
}

// toNS stores a time as unix nanoseconds; the zero time is 0.
func toNS(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// fromNS is the inverse of toNS; times come back in UTC.
func fromNS(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns).UTC()
}

// validateDelivery checks a delivery to be written; op names the call.
func validateDelivery(op string, d Delivery) error {
	if d.ID == "" {
		return fmt.Errorf("queue: %s: delivery with empty id", op)
	}
	if d.Created.IsZero() && d.RunAt.IsZero() {
		return fmt.Errorf("queue: %s %s: neither created nor run_at set", op, d.ID)
	}
	return nil
}

// validateReject checks a Reject call before it writes anything.
func validateReject(ds []Delivery, reason string, at time.Time) error {
	if len(ds) > MaxRejectBatch {
		return fmt.Errorf("queue: reject: %d deliveries exceed the batch limit %d", len(ds), MaxRejectBatch)
	}
	if reason == "" {
		return errors.New("queue: reject: empty reason")
	}
	if at.IsZero() {
		return errors.New("queue: reject: zero dead-letter time")
	}
	for _, d := range ds {
		if err := validateDelivery("reject", d); err != nil {
			return err
		}
	}
	return nil
}

// runAtOf is the run time a newly enqueued delivery gets.
func runAtOf(d Delivery) time.Time {
	if d.RunAt.IsZero() {
		return d.Created
	}
	return d.RunAt
}

// validateCompletions checks a batch of completions whole, before any is
// applied, so that an invalid one changes nothing.
func validateCompletions(cs []Completion) error {
	for _, c := range cs {
		if err := validateCompletion(c); err != nil {
			return err
		}
	}
	return nil
}

func validateCompletion(c Completion) error {
	if c.ID == "" || c.Owner == "" {
		return fmt.Errorf("queue: complete: id %q owner %q: both are required", c.ID, c.Owner)
	}
	switch c.Kind {
	case KindAck, KindRelease:
	case KindReschedule, KindHold:
		if c.RunAt.IsZero() {
			return fmt.Errorf("queue: complete %s: %v without run_at", c.ID, c.Kind)
		}
	case KindDeadLetter:
		if c.Reason == "" {
			return fmt.Errorf("queue: complete %s: dead-letter without reason", c.ID)
		}
	default:
		return fmt.Errorf("queue: complete %s: unknown kind %v", c.ID, c.Kind)
	}
	if c.Attempt < 0 {
		return fmt.Errorf("queue: complete %s: negative attempt %d", c.ID, c.Attempt)
	}
	return nil
}

func validateClaim(owner string, lease time.Duration, limit int) (int, error) {
	if owner == "" {
		return 0, errors.New("queue: claim: empty owner")
	}
	if lease <= 0 {
		return 0, fmt.Errorf("queue: claim: lease %v must be positive", lease)
	}
	if limit <= 0 {
		return 0, fmt.Errorf("queue: claim: limit %d must be positive", limit)
	}
	return min(limit, MaxClaim), nil
}

// validateCompleteClaim checks a CompleteClaim call as Complete and
// Claim check theirs; a limit of 0 (no claim) is valid.
func validateCompleteClaim(cs []Completion, owner string, lease time.Duration, limit int) (int, error) {
	if err := validateCompletions(cs); err != nil {
		return 0, err
	}
	if limit == 0 {
		return 0, nil
	}
	return validateClaim(owner, lease, limit)
}

// replayPlan is the validated form of a replay request.
type replayPlan struct {
	cutoffNS int64 // dead_at <= cutoffNS; 0: no age condition
	batch    int
	limit    int // 0: all
	now      func() time.Time
	pause    func(context.Context) error // between batches
	filter   string
}

func planReplay(f DLQFilter, o ReplayOptions) (replayPlan, error) {
	p := replayPlan{batch: o.Batch, limit: f.Limit}
	if p.batch <= 0 {
		p.batch = DefaultReplayBatch
	}
	if p.batch > MaxReplayBatch {
		return p, fmt.Errorf("queue: replay: batch %d exceeds %d", o.Batch, MaxReplayBatch)
	}
	if p.limit < 0 {
		return p, fmt.Errorf("queue: replay: negative limit %d", f.Limit)
	}
	cut, err := cutoff(f)
	if err != nil {
		return p, err
	}
	p.cutoffNS = cut
	p.now = o.Now
	if p.now == nil {
		if f.Now.IsZero() {
			return p, errors.New("queue: replay: neither options.Now nor filter.Now given")
		}
		fixed := f.Now
		p.now = func() time.Time { return fixed }
	}
	if math.IsNaN(o.Rate) || (o.Rate > 0 && o.Rate < MinReplayRate) {
		return p, fmt.Errorf("queue: replay: rate %v batches/s is below the minimum %v", o.Rate, MinReplayRate)
	}
	var gap time.Duration
	if o.Rate > 0 {
		gap = time.Duration(float64(time.Second) / o.Rate)
	}
	p.pause = func(ctx context.Context) error {
		switch {
		case gap <= 0:
		case o.Sleep != nil:
			o.Sleep(gap)
		default:
			t := time.NewTimer(gap)
			defer t.Stop()
			select {
			case <-t.C:
			case <-ctx.Done():
			}
		}
		return ctx.Err()
	}
	js, err := json.Marshal(struct {
		Reason    string `json:"reason,omitempty"`
		Partner   string `json:"partner,omitempty"`
		Cohort    string `json:"cohort,omitempty"`
		OlderThan string `json:"older_than,omitempty"`
		Limit     int    `json:"limit,omitempty"`
	}{f.Reason, f.Partner, f.Cohort, durString(f.OlderThan), f.Limit})
	if err != nil {
		return p, err
	}
	p.filter = string(js)
	return p, nil
}

func durString(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return d.String()
}

// cutoff turns OlderThan into an upper bound on dead_at (0: none).
func cutoff(f DLQFilter) (int64, error) {
	if f.OlderThan < 0 {
		return 0, fmt.Errorf("queue: dlq filter: negative older_than %v", f.OlderThan)
	}
	if f.OlderThan == 0 {
		return 0, nil
	}
	if f.Now.IsZero() {
		return 0, errors.New("queue: dlq filter: older_than needs now")
	}
	return f.Now.Add(-f.OlderThan).UnixNano(), nil
}

func listLimit(n int) int {
	if n <= 0 || n > MaxList {
		return MaxList
	}
	return n
}
