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
func (b *Breaker) Counts(o Outcome) bool { return b.count.Counts(o) }

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
//
// It is kept small (two cache lines; a test pins its size): the simulator
// keeps one per subscriber. The settings are its own fields, and what only
// the window and rate rules remember is made by those rules (ruleMemory).
type Breaker struct {
	// What the closed fast path (Closed, Generation, RecordClosedSuccess)
	// reads.
	gen uint64
	// run is the failures in a row while closed (consecutive rule) and
	// the probe successes while half-open; every change of state zeroes
	// it.
	run       int
	state     BreakerState
	trip      TripRule
	count     BreakerCount
	threshold int
	// openUntil is when an open breaker lets a probe through: the last
	// opening + cooldown (the zero time + cooldown before the first).
	openUntil time.Time
	cooldown  time.Duration

	// The other settings.
	window   time.Duration
	ratio    float64
	minCalls int
	probes   int

	// probesAdmitted is the calls half-open admitted.
	probesAdmitted int

	// Stale counts results recorded for a generation that is no longer
	// current.
	Stale int64

	// OnTransition, if set, is called on every change of state.
	OnTransition func(Transition)

	// mem is what the window and rate rules remember of recent calls,
	// made by the rule on its first call; nil for the consecutive rule.
	mem *ruleMemory
}

// ruleMemory is a windowed rule's memory of the calls within its window.
type ruleMemory struct {
	// window rule: times of the last Threshold failures, a ring.
	failTimes           []int64
	failNext, failCount int
	// rate rule: calls and failures per bucket (rateBuckets of them).
	buckets []rateBucket
}

// NewBreaker returns a closed breaker.
func NewBreaker(s BreakerSettings) *Breaker {
	s.defaults()
	return &Breaker{
		trip: s.Trip, count: s.Count, threshold: s.Threshold,
		openUntil: time.Time{}.Add(s.Cooldown), cooldown: s.Cooldown,
		window: s.Window, ratio: s.Ratio, minCalls: s.MinCalls, probes: s.Probes,
	}
}

// Settings returns the settings with defaults filled in.
func (b *Breaker) Settings() BreakerSettings {
	return BreakerSettings{
		Trip: b.trip, Threshold: b.threshold, Window: b.window, Ratio: b.ratio,
		MinCalls: b.minCalls, Cooldown: b.cooldown, Probes: b.probes, Count: b.count,
	}
}

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
func (b *Breaker) OpenUntil() time.Time { return b.openUntil }

// Generation is the current generation; it grows on every transition.
func (b *Breaker) Generation() uint64 { return b.gen }

// Admit reports whether a call may start at now and, if so, the generation
// to pass back to Record.
func (b *Breaker) Admit(now time.Time) (gen uint64, ok bool) {
	switch b.State(now) {
	case StateClosed:
		return b.gen, true
	case StateHalfOpen:
		if b.probesAdmitted < b.probes {
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
		b.run++ // a probe success
		if b.run >= b.probes {
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
	b.openUntil = now.Add(b.cooldown)
	b.setState(StateOpen, now)
}

func (b *Breaker) setState(to BreakerState, at time.Time) {
	from := b.state
	b.state = to
	b.gen++
	b.run = 0
	if m := b.mem; m != nil {
		m.failCount, m.failNext = 0, 0
		clear(m.buckets)
	}
	b.probesAdmitted = 0
	if b.OnTransition != nil {
		b.OnTransition(Transition{At: at, From: from, To: to})
	}
}
