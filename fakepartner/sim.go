package fakepartner

import (
	"math/rand/v2"
	"time"
	"unsafe"

	"github.com/stormdrill/stormdrill/model"
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

// Outcome is the result as the dispatcher sees it.
func (r Result) Outcome() model.Outcome {
	switch r.Kind {
	case ResultTimeout:
		return model.Outcome{Err: model.ErrTimeout}
	case ResultReset:
		return model.Outcome{Err: model.ErrReset}
	case ResultRefused:
		return model.Outcome{Err: model.ErrRefused}
	}
	return model.Outcome{Status: r.Status, RetryAfter: r.RetryAfter}
}

// Wire is how the HTTP server puts an answer on the wire when it is not an
// ordinary response; the caller's view of it is the Call's Result.
type Wire uint8

// Wire forms.
const (
	WireNormal     Wire = iota // an HTTP response (or, for ResultReset, a TCP reset)
	WireEmpty                  // the connection is closed with no response
	WireGarbage                // bytes that are not HTTP, then close
	WireTruncated              // a 200 whose body stops short of its Content-Length, then close
	WireDribble                // the response's body spread over Call.Dribble
	WireDropAnswer             // a processed call's answer is dropped: the connection is reset
)

// GarbageAnswer is what a garbage answer writes: not an HTTP status line.
const GarbageAnswer = "\x00\x17 this is not HTTP \xff\r\n\r\n"

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
	// Wire is how the server writes the answer; Dribble (WireDribble) is
	// how long the body takes after the headers, included in Latency.
	Wire    Wire
	Dribble time.Duration
	// AckLost: the partner processed the call and dropped its answer on
	// purpose (lost-ack): the caller sees a reset.
	AckLost bool

	contended bool // a contended write still to be decided in Finish
}

// NeedsFinish reports whether the call's outcome waits for Finish: a
// contended write that lands at the Begin time plus Latency, whether or not
// the caller still waits for the answer.
func (c *Call) NeedsFinish() bool { return c.contended }

// SimStats counts what one simulated subscriber saw.
type SimStats struct {
	// Every call counts in Calls and, unless a rarer counter takes it, in
	// Accepted or Errors: Behaviour keeps those three beside its servers.
	Calls    int64 // Begin calls
	Accepted int64 // calls the partner processed successfully
	Errors   int64 // 422s and 503s drawn from the error rates

	Faulted   int64 // calls answered by a scripted outage
	Rejected  int64 // 503s because every server was busy
	Conflicts int64 // contended writes that lost (409)
	AcksLost  int64 // processed calls whose answer a lost-ack fault dropped
}

// Sim is one simulated subscriber: its Behaviour stepped in virtual time,
// with the cohort's scripted outages looked up at each call. It is not safe
// for concurrent use; the simulation calls it from one goroutine, in time
// order.
type Sim struct {
	b Behaviour // its spec and member too
}

// SimHotBytes is how many bytes from its start an ordinary call's Begin
// reads or writes of the Sim itself (through the counters every call writes),
// for a caller that prefetches them or lays out what precedes them.
const SimHotBytes = unsafe.Offsetof(Sim{}.b) + unsafe.Offsetof(Behaviour{}.stats) + unsafe.Sizeof(hotStats{})

// NewSim returns the simulated subscriber member of the cohort spec. rng is
// the subscriber's own random stream. spec must be valid and must not change
// while the Sim is in use. Its drill seed is 0 until SetSeed.
func NewSim(spec *Spec, member int, rng *rand.Rand) *Sim {
	p := &Sim{}
	p.Init(spec, member, rng)
	return p
}

// Init makes p what NewSim returns, in place: a simulation of many
// subscribers keeps them in one slice, so that walking them in order
// reads memory in order. A Sim must not be copied once initialised.
func (p *Sim) Init(spec *Spec, member int, rng *rand.Rand) {
	*p = Sim{}
	p.b.init(spec, rng, DataSeed(0, spec.Name))
	p.b.member = int32(member)
}

// SetSeed sets the drill seed which, with a delivery's key, decides which
// deliveries carry bad data (see Spec.BadData). Give it the seed the Server
// gets in ServerOptions.Seed, so that a simulated and a live drill reject
// the same deliveries. Call it before the first Begin.
func (p *Sim) SetSeed(seed uint64) { p.b.dataSeed = DataSeed(seed, p.b.spec().Name) }

// Stats returns the subscriber's counters.
func (p *Sim) Stats() SimStats { return p.b.Stats() }

// Begin plans a call that the caller starts at drill time now, for a
// delivery it does not identify: whether the call meets bad data is drawn
// per call, like a transient error. Prefer BeginKey.
func (p *Sim) Begin(now time.Duration) Call {
	var c Call
	p.begin(&c, now, Delivery{})
	return c
}

// BeginKey plans a call that the caller starts at drill time now for the
// delivery whose id hashes to key (KeyHash): a delivery with bad data
// (Spec.BadData) is answered 422 on every attempt the partner serves;
// transient errors are drawn per call. Calls must be begun in time order.
// It does not allocate, except for a throttle's HTTP-date (once per
// simulated second).
func (p *Sim) BeginKey(now time.Duration, key uint64) Call {
	var c Call
	p.begin(&c, now, Delivery{Draw: DataDraw(p.b.dataSeed, key), Keyed: true})
	return c
}

// BeginDrawTo plans the call BeginKey plans for the delivery whose key has
// the data draw draw (DataDraw of the subscriber's data seed, DataSeed(drill
// seed, its cohort), and the key), for a caller that keeps the draw with
// the delivery instead of the key, and writes it to *c, which must be zero
// (a new Call): a caller that plans a call per attempt is spared the copies
// of one, and the clearing of one already clear.
func (p *Sim) BeginDrawTo(c *Call, now time.Duration, draw uint64) {
	p.begin(c, now, Delivery{Draw: draw, Keyed: true})
}

func (p *Sim) begin(c *Call, now time.Duration, d Delivery) {
	spec := p.b.spec()
	var fault *Outage
	if len(spec.Outages) > 0 {
		fault = spec.faultAt(int(p.b.member), now)
	}
	p.b.begin(c, now, d, fault, &simClock)
}

// Finish completes c at drill time now, which must be the Begin time plus
// c.Latency; calls must be finished in time order. See Behaviour.Finish.
func (p *Sim) Finish(c *Call, now time.Duration) Result { return p.b.Finish(c, now) }
