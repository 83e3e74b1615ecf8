package model

import "time"

// BreakerState is the state of a circuit breaker.
type BreakerState uint8

const (
	StateClosed BreakerState = iota
	StateHalfOpen
	StateOpen
)

func (s BreakerState) String() string {
	switch s {
	case StateClosed:
		return "closed"
	case StateHalfOpen:
		return "half-open"
	}
	return "open"
}

// BreakerSettings configures a Breaker. Zero fields take the documented
// defaults.
type BreakerSettings struct {
	Trip      TripRule      // default TripConsecutive
	Threshold int           // consecutive, window: failures that trip it; default 5
	Window    time.Duration // window, rate: the sliding window; default 60s
	Ratio     float64       // rate: failure ratio that trips it; default 0.5
	MinCalls  int           // rate: calls the window must hold first; default 10
	Cooldown  time.Duration // how long it stays open; default 30s
	Probes    int           // calls half-open admits, and successes that close it; default 1
	// Count is the failures the breaker counts; 0 = CountAll. Record the
	// others with Ignore.
	Count BreakerCount
}

func (s *BreakerSettings) defaults() {
	if s.Threshold <= 0 {
		s.Threshold = 5
	}
	if s.Window <= 0 {
		s.Window = 60 * time.Second
	}
	if s.Ratio <= 0 {
		s.Ratio = 0.5
	}
	if s.MinCalls <= 0 {
		s.MinCalls = 10
	}
	if s.Cooldown <= 0 {
		s.Cooldown = 30 * time.Second
	}
	if s.Probes <= 0 {
		s.Probes = 1
	}
}

// Counts reports whether a call that ended with failed outcome o counts
// against the breaker.
func (b *Breaker) Counts(o Outcome) bool { return b.s.Count.Counts(o) }

// Ignore reports an admitted call that ended with a failure the breaker
// does not count (see BreakerSettings.Count). It changes no state and
// breaks no run of failures; a half-open probe that ends so hands its slot
// back, so that the next call can probe instead.
func (b *Breaker) Ignore(gen uint64, now time.Time) {
	state := b.State(now)
	if gen != b.gen {
		b.Stale++
		return
	}
	if state == StateHalfOpen && b.probesAdmitted > 0 {
		b.probesAdmitted--
	}
}

// rateBuckets is how finely the rate rule's sliding window is kept: counts
// per bucket of Window/rateBuckets, so memory is fixed whatever the traffic.
const rateBuckets = 10

type rateBucket struct {
	start        int64 // unix ns of the bucket start; 0 = empty
	calls, fails int32
}

// Transition is one change of state, reported with its time.
type Transition struct {
	At       time.Time
	From, To BreakerState
}

// Breaker is a three-state circuit breaker for one partner. It reads no
// clock: every call takes now. Admit hands out the generation of the state
// that admitted the call; Record with an older generation is counted as
// stale but changes no state, so a failure that was in flight when the
// breaker opened does not restart the cooldown.
//
// It is not safe for concurrent use; the dispatcher owns it.
type Breaker struct {
	// What the closed fast path (Closed, Generation, RecordClosedSuccess)
	// reads.
	gen         uint64
	consecutive int
	threshold   int // s.Threshold
	state       BreakerState
	trip        TripRule  // s.Trip
	openUntil   time.Time // open: openedAt + Cooldown

	s        BreakerSettings
	openedAt time.Time

	// window rule: times of the last Threshold failures, a ring.
	failTimes []int64
	failNext  int
	failCount int

	// rate rule.
	buckets [rateBuckets]rateBucket

	// half-open bookkeeping.
	probesAdmitted int
	probeSuccesses int

	// Stale counts results recorded for a generation that is no longer
	// current.
	Stale int64

	// OnTransition, if set, is called on every change of state.
	OnTransition func(Transition)
}

// NewBreaker returns a closed breaker.
func NewBreaker(s BreakerSettings) *Breaker {
	s.defaults()
	// A rule's own state (the window rule's ring) is made by its trips.
	return &Breaker{s: s, trip: s.Trip, threshold: s.Threshold}
}

// Settings returns the settings with defaults filled in.
func (b *Breaker) Settings() BreakerSettings { return b.s }

// State returns the state at now, moving open to half-open once the
// cooldown has passed.
func (b *Breaker) State(now time.Time) BreakerState {
	if b.state == StateOpen && !now.Before(b.openUntil) {
		b.setState(StateHalfOpen, b.openUntil)
	}
	return b.state
}

// Closed reports whether the breaker is closed: State at any time is
// StateClosed then, so a caller on a hot path can skip building the time.
func (b *Breaker) Closed() bool { return b.state == StateClosed }

// OpenUntil is when an open breaker will let a probe through.
func (b *Breaker) OpenUntil() time.Time { return b.openedAt.Add(b.s.Cooldown) }

// Generation is the current generation; it grows on every transition.
func (b *Breaker) Generation() uint64 { return b.gen }

// Admit reports whether a call may start at now and, if so, the generation
// to pass back to Record.
func (b *Breaker) Admit(now time.Time) (gen uint64, ok bool) {
	switch b.State(now) {
	case StateClosed:
		return b.gen, true
	case StateHalfOpen:
		if b.probesAdmitted < b.s.Probes {
			b.probesAdmitted++
			return b.gen, true
		}
	}
	return b.gen, false
}

// Record reports how an admitted call ended.
func (b *Breaker) Record(gen uint64, success bool, now time.Time) {
	state := b.State(now)
	if gen != b.gen {
		b.Stale++
		return
	}
	switch state {
	case StateClosed:
		if b.trips(success, now) {
			b.open(now)
		}
	case StateHalfOpen:
		if !success {
			b.open(now)
			return
		}
		b.probeSuccesses++
		if b.probeSuccesses >= b.s.Probes {
			b.setState(StateClosed, now)
		}
	}
	// Open: a result of the current generation cannot arrive while open
	// (open admits nothing), so there is nothing to do.
}

// trips records a closed-state result and says whether the rule trips.
func (b *Breaker) trips(success bool, now time.Time) bool {
	return b.trip.Info().trips(b, success, now.UnixNano())
}

func (b *Breaker) open(now time.Time) {
	b.openedAt = now
	b.openUntil = now.Add(b.s.Cooldown)
	b.setState(StateOpen, now)
}

func (b *Breaker) setState(to BreakerState, at time.Time) {
	from := b.state
	b.state = to
	b.gen++
	b.consecutive = 0
	b.failCount, b.failNext = 0, 0
	b.buckets = [rateBuckets]rateBucket{}
	b.probesAdmitted, b.probeSuccesses = 0, 0
	if b.OnTransition != nil {
		b.OnTransition(Transition{At: at, From: from, To: to})
	}
}
