package fakepartner

import (
	"math/rand/v2"
	"net/http"
	"time"
)

// SimEpoch is the wall-clock instant of drill time 0 in simulation; HTTP-dates
// in Retry-After headers are computed from it.
var SimEpoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// FastAnswerLatency is how long an answer takes that the partner gives
// without doing the work: a 503 while unavailable, flapping or busy, a 429
// while throttling, a connection reset.
const FastAnswerLatency = time.Millisecond

// NoAnswerLatency is Call.Latency for a call that is never answered. It is
// far beyond any drill yet small enough that now+NoAnswerLatency cannot
// overflow.
const NoAnswerLatency = time.Duration(1 << 62)

// ResultKind is how a call ended as the caller sees it.
type ResultKind uint8

// Result kinds.
const (
	ResultOK      ResultKind = iota // 2xx
	ResultHTTP                      // a non-2xx status
	ResultTimeout                   // no answer before the caller gave up
	ResultReset                     // connection reset
	ResultRefused                   // connection refused
)

var resultKindNames = [...]string{"ok", "http", "timeout", "reset", "refused"}

// String returns a short lower-case name.
func (k ResultKind) String() string {
	if int(k) < len(resultKindNames) {
		return resultKindNames[k]
	}
	return "unknown"
}

// Result is a partner's answer.
type Result struct {
	Status     int // HTTP status; 0 for timeout, reset and refused
	Kind       ResultKind
	RetryAfter string // the Retry-After header, "" if none
}

// Call is a planned call to a simulated partner, returned by Begin.
type Call struct {
	// Latency is the time from Begin until the answer reaches the caller;
	// NoAnswerLatency when NoAnswer.
	Latency  time.Duration
	NoAnswer bool   // the partner never answers; the caller's timeout decides
	Result   Result // for a contended partner, final only after Finish
	// ReadAt (contended) is the drill time at which the call read the row.
	ReadAt time.Duration
	// Processed: the partner accepted the delivery, even if the caller gives
	// up before the answer arrives. For a contended partner it is decided in
	// Finish.
	Processed bool

	contended bool // a contended write still to be decided in Finish
}

// NeedsFinish reports whether the call's outcome waits for Finish: a
// contended write that lands at the Begin time plus Latency, whether or not
// the caller still waits for the answer.
func (c *Call) NeedsFinish() bool { return c.contended }

// SimStats counts what one simulated subscriber saw.
type SimStats struct {
	Calls     int64 // Begin calls
	Accepted  int64 // calls the partner processed successfully
	Faulted   int64 // calls answered by a scripted outage
	Rejected  int64 // 503s because every server was busy
	Errors    int64 // 422s and 503s drawn from the error rates
	Conflicts int64 // contended writes that lost (409)
}

// Sim is one simulated subscriber. It is not safe for concurrent use; the
// simulation calls it from one goroutine, in time order.
type Sim struct {
	spec     *Spec
	member   int
	rng      *rand.Rand
	dataSeed uint64 // decides with a delivery's key whether it is bad data

	free []time.Duration // min-heap of server-free times; nil when unlimited

	lastWrite time.Duration // contended: time of the latest successful write
	wrote     bool

	dateSecond int64 // cached HTTP-date, so a throttle allocates once per second
	dateText   string

	stats SimStats
}

// NewSim returns the simulated subscriber member of the cohort spec. rng is
// the subscriber's own random stream. spec must be valid and must not change
// while the Sim is in use. Its drill seed is 0 until SetSeed.
func NewSim(spec *Spec, member int, rng *rand.Rand) *Sim {
	p := &Sim{spec: spec, member: member, rng: rng, dataSeed: DataSeed(0, spec.Name), dateSecond: -1 << 62}
	if c := spec.Concurrency; c > 0 {
		p.free = make([]time.Duration, min(c, MaxConcurrency))
	}
	return p
}

// SetSeed sets the drill seed which, with a delivery's key, decides which
// deliveries carry bad data (see Spec.BadData). Give it the seed the Server
// gets in ServerOptions.Seed, so that a simulated and a live drill reject
// the same deliveries. Call it before the first Begin.
func (p *Sim) SetSeed(seed uint64) { p.dataSeed = DataSeed(seed, p.spec.Name) }

// Stats returns the subscriber's counters.
func (p *Sim) Stats() SimStats { return p.stats }

// Begin plans a call that the caller starts at drill time now, for a
// delivery it does not identify: whether the call meets bad data is drawn
// per call, like a transient error. Prefer BeginKey.
func (p *Sim) Begin(now time.Duration) Call { return p.begin(now, 0, false) }

// BeginKey plans a call that the caller starts at drill time now for the
// delivery whose id hashes to key (KeyHash): a delivery with bad data
// (Spec.BadData) is answered 422 on every attempt the partner serves;
// transient errors are drawn per call. Calls must be begun in time order.
// It does not allocate, except for a throttle's HTTP-date (once per
// simulated second).
func (p *Sim) BeginKey(now time.Duration, key uint64) Call { return p.begin(now, key, true) }

func (p *Sim) begin(now time.Duration, key uint64, keyed bool) Call {
	p.stats.Calls++
	factor := 1.0
	if len(p.spec.Outages) > 0 {
		if o, ok := p.spec.FaultAt(p.member, now); ok {
			switch o.Kind {
			case OutageSlow:
				factor = o.Factor
			case OutageTimeout:
				p.stats.Faulted++
				return Call{Latency: NoAnswerLatency, NoAnswer: true, Result: Result{Kind: ResultTimeout}}
			case OutageReset:
				p.stats.Faulted++
				return Call{Latency: FastAnswerLatency, Result: Result{Kind: ResultReset}}
			case OutageThrottle:
				p.stats.Faulted++
				return Call{Latency: FastAnswerLatency, Result: Result{
					Status: http.StatusTooManyRequests, Kind: ResultHTTP, RetryAfter: p.retryAfter(o.RetryAfter, now),
				}}
			default: // unavailable, flap (down half)
				p.stats.Faulted++
				return Call{Latency: FastAnswerLatency, Result: Result{Status: http.StatusServiceUnavailable, Kind: ResultHTTP}}
			}
		}
	}

	// A contended call reaches the partner one network hop after it starts.
	arrive := now
	if p.spec.Contended {
		arrive += p.spec.NetworkDelay.Sample(p.rng)
	}
	start := arrive
	if p.free != nil {
		earliest := p.free[0]
		if earliest > arrive && p.spec.RejectWhenBusy {
			p.stats.Rejected++
			return Call{Latency: arrive - now + FastAnswerLatency, Result: Result{Status: http.StatusServiceUnavailable, Kind: ResultHTTP}}
		}
		start = max(arrive, earliest)
	}
	service := scaleDuration(p.spec.Latency.Sample(p.rng), factor)
	if p.free != nil {
		p.free[0] = start + service
		p.siftDownFree()
	}
	end := start + service

	var c Call
	// One draw per call whether keyed or not, so that the latency stream
	// does not depend on it.
	u := p.rng.Float64()
	switch status := errorStatus(p.spec.PermanentErrors, p.spec.TransientErrors, u, keyed, p.dataSeed, key); status {
	case http.StatusUnprocessableEntity, http.StatusServiceUnavailable:
		p.stats.Errors++
		c.Result = Result{Status: status, Kind: ResultHTTP}
	default:
		c.Result = Result{Status: http.StatusOK, Kind: ResultOK}
		if p.spec.Contended {
			c.contended = true
		} else {
			c.Processed = true
			p.stats.Accepted++
		}
	}
	if p.spec.Contended {
		// Read when service starts; the write (and the answer) lands one
		// more hop after the service time.
		c.ReadAt = start
		end += p.spec.NetworkDelay.Sample(p.rng)
	}
	c.Latency = end - now
	return c
}

// Finish completes c at drill time now, which must be the Begin time plus
// c.Latency; calls must be finished in time order. For an ordinary partner
// it returns c.Result. For a contended partner the write succeeds only if no
// other call's write succeeded after c read the row; otherwise the answer is
// 409 Conflict. Call Finish for contended calls (NeedsFinish) even when the
// caller has given up: the write lands regardless, and later calls conflict
// with it.
func (p *Sim) Finish(c *Call, now time.Duration) Result {
	if !c.contended {
		return c.Result
	}
	c.contended = false
	if p.wrote && p.lastWrite > c.ReadAt {
		p.stats.Conflicts++
		c.Result = Result{Status: http.StatusConflict, Kind: ResultHTTP}
		c.Processed = false
		return c.Result
	}
	p.lastWrite, p.wrote = now, true
	p.stats.Accepted++
	c.Processed = true
	return c.Result
}

// retryAfter renders a throttle's Retry-After at drill time now.
func (p *Sim) retryAfter(spec string, now time.Duration) string {
	mode, offset, err := parseRetryAfter(spec)
	if err != nil {
		return GarbageRetryAfter // Validate refuses this; never panic
	}
	switch mode {
	case retryAfterSeconds:
		return spec
	case retryAfterGarbage:
		return GarbageRetryAfter
	case retryAfterDate:
		at := SimEpoch.Add(now + offset)
		if sec := at.Unix(); sec != p.dateSecond {
			p.dateSecond, p.dateText = sec, at.Format(http.TimeFormat)
		}
		return p.dateText
	}
	return ""
}

func (p *Sim) siftDownFree() {
	h := p.free
	i, n := 0, len(h)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && h[r] < h[l] {
			m = r
		}
		if h[i] <= h[m] {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

// scaleDuration multiplies d by f, clamped to [0, MaxSample].
func scaleDuration(d time.Duration, f float64) time.Duration {
	if f == 1 {
		return d
	}
	return clampNs(float64(d) * f)
}
