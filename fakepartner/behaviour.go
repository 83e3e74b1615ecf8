package fakepartner

import (
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"
	"unique"
)

// Delivery is what a call tells the partner about the delivery it carries.
type Delivery struct {
	// Draw is DataDraw of the subscriber's data seed and KeyHash of the
	// delivery id (the Idempotency-Key): it decides whether the delivery
	// carries bad data.
	Draw uint64
	// Keyed is false for a call that carries no id: whether it meets bad
	// data is then drawn per call, like a transient error.
	Keyed bool
}

// WallClock maps drill time to wall time, for the HTTP-dates a throttle
// writes into Retry-After.
type WallClock struct {
	Epoch time.Time // the wall instant of drill time 0
	Speed float64   // drill time runs Speed times as fast as wall time; 0 means 1
}

// At is the wall instant of drill time t.
func (c WallClock) At(t time.Duration) time.Time {
	if c.Speed == 0 || c.Speed == 1 {
		return c.Epoch.Add(t)
	}
	return c.Epoch.Add(time.Duration(float64(t) / c.Speed))
}

// RetryAfterSeconds renders a Retry-After of secs drill seconds as the
// wire carries it: wall seconds, secs / Speed rounded up. The system under
// drill sleeps on the wall clock, so this is the wait that lasts secs of
// drill time; rounding up keeps it from retrying early, and any positive
// wait stays at least one second (the header's resolution), which at a
// high speed is Speed drill seconds.
func (c WallClock) RetryAfterSeconds(secs uint64) uint64 {
	if c.Speed == 0 || c.Speed == 1 || secs == 0 {
		return secs
	}
	return uint64(math.Ceil(float64(secs)/c.Speed - 1e-9))
}

// simClock is the simulation's wall clock: drill time 0 is SimEpoch.
var simClock = WallClock{Epoch: SimEpoch, Speed: 1}

// Behaviour is one subscriber's behaviour as a pure state machine: no I/O,
// no clock, no global randomness. The simulated partner (Sim) steps it in
// virtual time; the HTTP server (Server) steps it, under a lock, at the
// drill time it reads off the wall clock, and only turns each Call into
// bytes on the wire after waiting its latency. So both modes answer the
// same calls the same way by construction: every random draw of a call is
// made in Begin, in one order.
//
// Its state is what the subscriber remembers between calls: when each of
// its servers is next free (in drill time), the drill time of its latest
// successful contended write, its random stream and its counters.
//
// It is small, because a simulation keeps tens of thousands of them and
// reads one per call: what every call reads comes first, then the free
// times of up to len(ring) servers and the counters every call writes
// (see SimHotBytes), all in 128 bytes. What is the same for every member
// of a cohort (the spec, the latency's parameters) is shared through one
// pointer, and what only some specs use (more servers than the ring holds,
// contended writes, throttle dates, per-call faults, the rarer counters)
// is allocated by the first call that needs it. It must not be copied once
// initialised (rng may point into the simulator's copy of it).
type Behaviour struct {
	cohort   unique.Handle[cohortShared] // the spec and its latency sampler
	rng      *rand.Rand
	dataSeed uint64 // DataSeed of its cohort: Sim.BeginKey draws a delivery's bad data with it
	member   int32  // the Sim's member, for its cohort's outages; 0 for a server's
	// Up to len(ring) servers keep their free times in ring, a sorted ring
	// whose earliest is at ringHead: the server a call takes is the
	// earliest, and it is taken until a time usually later than all the
	// others, so the ring turns by one and the new time stays at its end,
	// where a heap would sift it down to a leaf. More servers (ringN ==
	// ringInHeap) keep them in cold.heap.
	ringN    uint8 // servers in ring; 0: unlimited
	ringHead uint8
	ring     [8]time.Duration
	stats    hotStats       // every call writes one of them
	cold     *behaviourCold // nil until a call needs it
}

// ringInHeap is Behaviour.ringN for servers kept in a heap.
const ringInHeap = 255

// cohortShared is what every member of a cohort shares of its Behaviour,
// read-only: interned (unique.Make), so that a cohort of any size keeps
// one copy, which stays in the caches.
type cohortShared struct {
	spec    *Spec
	latency distSampler // spec.Latency
}

// hotStats are the counters every call writes one of (see SimStats).
type hotStats struct{ calls, accepted, errors int64 }

// behaviourCold is the state of a Behaviour that only some specs and some
// calls use, allocated by the first that needs it.
type behaviourCold struct {
	heap []time.Duration // min-heap of server-free times when there are more than len(ring)

	lastWrite time.Duration // contended: drill time of the latest successful write
	wrote     bool

	dateSecond int64 // cached HTTP-date, so a throttle allocates once per second
	dateText   string

	callOutage Outage // the per-call fault of the call being begun

	faulted, rejected, conflicts, acksLost int64 // SimStats' rarer counters
}

// NewBehaviour returns the behaviour of one subscriber of the cohort spec.
// rng is the subscriber's own random stream; dataSeed is DataSeed of the
// drill seed and the cohort's name. spec must be valid and must not change
// while the Behaviour is in use.
func NewBehaviour(spec *Spec, rng *rand.Rand, dataSeed uint64) *Behaviour {
	b := &Behaviour{}
	b.init(spec, rng, dataSeed)
	return b
}

func (b *Behaviour) init(spec *Spec, rng *rand.Rand, dataSeed uint64) {
	*b = Behaviour{cohort: unique.Make(cohortShared{spec: spec, latency: newDistSampler(&spec.Latency)}), rng: rng, dataSeed: dataSeed}
	if c := min(spec.Concurrency, MaxConcurrency); c > len(b.ring) {
		b.ringN = ringInHeap
		b.coldState().heap = make([]time.Duration, c)
	} else if c > 0 {
		b.ringN = uint8(c)
	}
}

// coldState returns b.cold, allocating it on first use.
func (b *Behaviour) coldState() *behaviourCold {
	if b.cold == nil {
		b.cold = &behaviourCold{dateSecond: -1 << 62}
	}
	return b.cold
}

// spec is the cohort's spec.
func (b *Behaviour) spec() *Spec { return b.cohort.Value().spec }

// Stats returns the subscriber's counters.
func (b *Behaviour) Stats() SimStats {
	st := SimStats{Calls: b.stats.calls, Accepted: b.stats.accepted, Errors: b.stats.errors}
	if c := b.cold; c != nil {
		st.Faulted, st.Rejected, st.Conflicts, st.AcksLost = c.faulted, c.rejected, c.conflicts, c.acksLost
	}
	return st
}

// Begin decides a call that reaches the subscriber at drill time now: which
// answer it gets (a status, a reset, or no answer at all), after what
// latency and with which Retry-After. fault is the outage that governs the
// subscriber at now, nil for none (see Spec.FaultAt). clock places drill
// time on the wall clock for HTTP-dates. Calls should be begun in time
// order. It does not allocate, except for a throttle's HTTP-date (once per
// second of drill time).
func (b *Behaviour) Begin(now time.Duration, d Delivery, fault *Outage, clock WallClock) Call {
	var c Call
	b.begin(&c, now, d, fault, &clock)
	return c
}

// begin is Begin writing the call to *out, which must be zero: a call is
// 80 bytes, and the simulator plans one per attempt.
func (b *Behaviour) begin(out *Call, now time.Duration, d Delivery, fault *Outage, clock *WallClock) {
	sh := b.cohort.Value()
	spec := sh.spec
	b.stats.calls++
	factor := 1.0
	if fault == nil && len(spec.CallFaults) > 0 {
		// A draw only for cohorts with per-call faults, so other drills
		// keep their streams.
		if k, ok := spec.callFault(b.rng.Float64()); ok {
			c := b.coldState()
			c.callOutage = Outage{Kind: k, DribbleOver: spec.DribbleOver}
			fault = &c.callOutage
		}
	}
	var wire Wire
	var dribble time.Duration
	if fault != nil {
		c, f, served := fault.Kind.Info().Answer(fault, b, now, *clock)
		if !served {
			b.coldState().faulted++
			if fault.AnswerAfter != nil && !c.NoAnswer {
				// A draw only for outages that answer slowly, so other
				// drills keep their streams.
				c.Latency = max(fault.AnswerAfter.Sample(b.rng), FastAnswerLatency)
			}
			*out = c
			return
		}
		factor, wire, dribble = f, c.Wire, c.Dribble
	}

	// A contended call reaches the partner one network hop after it starts.
	arrive := now
	if spec.Contended {
		arrive += spec.NetworkDelay.Sample(b.rng)
	}
	start := arrive
	limited := b.ringN > 0
	if limited {
		earliest := b.earliestFree()
		if earliest > arrive && spec.RejectWhenBusy {
			b.coldState().rejected++
			*out = Call{Latency: arrive - now + FastAnswerLatency, Result: Result{Status: http.StatusServiceUnavailable, Kind: ResultHTTP}}
			return
		}
		start = max(arrive, earliest)
	}
	service := scaleDuration(sh.latency.sample(b.rng), factor)
	if limited {
		b.takeEarliest(start + service)
	}
	end := start + service

	c := out
	// One draw per call whether keyed or not, so that the latency stream
	// does not depend on it.
	u := b.rng.Float64()
	switch status := errorStatus(spec.PermanentErrors, spec.TransientErrors, u, d.Keyed, d.Draw); status {
	case http.StatusUnprocessableEntity, http.StatusServiceUnavailable:
		b.stats.errors++
		c.Result = Result{Status: status, Kind: ResultHTTP}
	default:
		c.Result = Result{Status: http.StatusOK, Kind: ResultOK}
		if spec.Contended {
			c.contended = true
		} else {
			c.Processed = true
			b.stats.accepted++
		}
	}
	if spec.Contended {
		// Read when service starts; the write (and the answer) lands one
		// more hop after the service time.
		c.ReadAt = start
		end += spec.NetworkDelay.Sample(b.rng)
	}
	c.Wire, c.Dribble = wire, dribble
	c.Latency = min(end-now+dribble, NoAnswerLatency)
	b.dropAnswer(c)
}

// earliestFree is when the server free first is free; call it only when
// the servers are limited (ringN > 0).
func (b *Behaviour) earliestFree() time.Duration {
	if b.ringN != ringInHeap {
		return b.ring[b.ringHead]
	}
	return b.cold.heap[0]
}

// takeEarliest makes the server free first busy until t, which is at least
// its free time.
func (b *Behaviour) takeEarliest(t time.Duration) {
	n := int(b.ringN)
	if n == ringInHeap {
		b.cold.heap[0] = t
		b.siftDownFree()
		return
	}
	// The earliest's slot becomes the ring's last; t moves back past the
	// times later than it.
	i := int(b.ringHead)
	h := i + 1
	if h == n {
		h = 0
	}
	b.ringHead = uint8(h)
	for i != h {
		j := i - 1
		if j < 0 {
			j = n - 1
		}
		if b.ring[j] <= t {
			break
		}
		b.ring[i] = b.ring[j]
		i = j
	}
	b.ring[i] = t
}

// dropAnswer turns a processed call's answer into a reset when the fault
// governing it drops answers (lost-ack).
func (b *Behaviour) dropAnswer(c *Call) {
	if c.Wire == WireDropAnswer && c.Processed && c.Result.Kind == ResultOK {
		c.Result = Result{Kind: ResultReset}
		c.AckLost = true
		b.coldState().acksLost++
	}
}

// Finish completes c at drill time now, the Begin time plus c.Latency. For
// an ordinary call it returns c.Result. For a contended call the write
// succeeds only if no other call's write succeeded after c read the row;
// otherwise the answer is 409 Conflict. Call Finish for contended calls
// (NeedsFinish) even when the caller has given up: the write lands
// regardless, and later calls conflict with it.
func (b *Behaviour) Finish(c *Call, now time.Duration) Result {
	if !c.contended {
		return c.Result
	}
	c.contended = false
	cold := b.coldState()
	if cold.wrote && cold.lastWrite > c.ReadAt {
		cold.conflicts++
		c.Result = Result{Status: http.StatusConflict, Kind: ResultHTTP}
		c.Processed = false
		return c.Result
	}
	// max: the HTTP server finishes calls about, not exactly, in time order.
	cold.lastWrite, cold.wrote = max(cold.lastWrite, now), true
	b.stats.accepted++
	c.Processed = true
	b.dropAnswer(c)
	return c.Result
}

// retryAfter renders a throttle's Retry-After (see Outage.RetryAfter) for
// an answer given at drill time now.
func (b *Behaviour) retryAfter(spec string, now time.Duration, clock WallClock) string {
	mode, offset, err := parseRetryAfter(spec)
	if err != nil {
		return GarbageRetryAfter // Validate refuses this; never panic
	}
	switch mode {
	case retryAfterSeconds:
		if clock.Speed == 0 || clock.Speed == 1 {
			return spec
		}
		secs, _ := strconv.ParseUint(spec, 10, 32) // checked by parseRetryAfter
		return strconv.FormatUint(clock.RetryAfterSeconds(secs), 10)
	case retryAfterGarbage:
		return GarbageRetryAfter
	case retryAfterDate:
		at := clock.At(now + offset)
		c := b.coldState()
		if sec := at.Unix(); sec != c.dateSecond {
			c.dateSecond, c.dateText = sec, at.UTC().Format(http.TimeFormat)
		}
		return c.dateText
	}
	return ""
}

func (b *Behaviour) siftDownFree() {
	h := b.cold.heap
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
