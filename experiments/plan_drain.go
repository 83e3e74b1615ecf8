package experiments

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/stormdrill/stormdrill/fakepartner"
	"github.com/stormdrill/stormdrill/model"
)

// The drain model: a deterministic fluid model of one outage. It follows
// the deliveries to the affected subscribers as masses (fractions of
// deliveries are fine) through the dispatcher's states: held back by the
// source, ready, in flight, waiting out a backoff delay or an open
// breaker, delivered or dead-lettered. The rest of the drill's traffic is
// one steady stream that competes for the worker pool. Time advances in
// fixed steps; nothing is random, so the same input gives the same plan.
//
// It models what decides a drain: each outage's own answer (how fast a
// failing call fails, Retry-After, a slowdown behind the partner's own
// capacity, a flap's phases), the breaker's holding, probes and
// circuit-open dead letters, max-attempts and window dead letters, the
// source held back by a bounded queue, per-partner concurrency, and the
// round robin in which the affected partner takes its turn behind the
// subscribers an event's fan-out made due.

// Bounds of the drain model.
const (
	// MaxDrainSteps bounds the steps of one outage's model; the step grows
	// with the time modelled.
	MaxDrainSteps = 400_000
	// MinDrainStep and MaxDrainStep bound the step.
	MinDrainStep = 5 * time.Millisecond
	MaxDrainStep = time.Second
	// MaxDrainRingBins bounds the bins of the delay calendar: longer
	// delays are rounded to the calendar's end.
	MaxDrainRingBins = 1 << 20
	// drainWarmupS is how long before an outage the model starts, from an
	// empty pipeline.
	drainWarmupS = 10.0
	// drainedBelow is the pending mass under which the backlog counts as
	// drained: less than one delivery left.
	drainedBelow = 0.5
	// unlimitedClasses is how many attempt counts the model tells apart
	// when attempts are unlimited; later attempts share the last class
	// (their delays have long reached the cap).
	unlimitedClasses = MaxScheduleRows
)

// Outage kinds by name, as PlanOutage.Kind takes them; what each does is
// read off its declaration (fakepartner.OutageKinds).
var (
	OutageKindUnavailable = fakepartner.OutageUnavailable.String()
	OutageKindTimeout     = fakepartner.OutageTimeout.String()
	OutageKindReset       = fakepartner.OutageReset.String()
	OutageKindThrottle    = fakepartner.OutageThrottle.String()
	OutageKindSlow        = fakepartner.OutageSlow.String()
	OutageKindFlap        = fakepartner.OutageFlap.String()
)

// fakeOutage is the plan's outage as the fake partner declares it ("" is
// unavailable), with its effect on attempts.
func (o *PlanOutage) fakeOutage() (fakepartner.Outage, fakepartner.OutageEffect) {
	kind, _ := fakepartner.ParseOutageKind(o.Kind) // validated; "" is unavailable
	fo := fakepartner.Outage{Start: o.Start, For: o.Length, Kind: kind, Factor: o.Factor, Period: o.Period}
	return fo, kind.Info().Effect(&fo)
}

// PlanBreaker is the breaker as the drain model needs it, defaults filled
// in. Trip is a model.TripRules name.
type PlanBreaker struct {
	Trip             string
	Threshold        int
	Window           time.Duration
	Ratio            float64
	MinCalls         int
	Cooldown         time.Duration
	Probes           int
	OnOpenDeadLetter bool
	// Count is the failures the breaker counts; 0 = every failure.
	Count model.BreakerCount
}

// PlanCohort is one cohort of identical subscribers the source fans out to.
type PlanCohort struct {
	Name        string
	Subscribers int
	MeanService time.Duration // mean attempt duration, capped at the attempt timeout
	FailureProb float64       // transient errors, answered after the latency
	// Concurrency is the partner's own capacity per subscriber (calls it
	// serves at once; more wait in its queue); 0 = unlimited.
	Concurrency int
}

// drainOutcome is what the model found for one outage.
type drainOutcome struct {
	drained       bool
	drainS        float64
	backlog       float64 // affected deliveries pending when the outage ends
	capacityPerS  float64 // attempts/s the affected partners get once healthy
	attempts      float64 // attempts to the affected partners, modelled span
	firsts        float64 // first attempts among them
	deliveries    float64 // deliveries to them, modelled span
	dead          map[string]float64
	openS         float64 // breaker open (any subscriber), seconds
	probes        float64
	heldMax       float64 // deliveries held back by the source at most
	noAttempt     float64 // deliveries dead-lettered before any attempt
	modelledFromS float64
	modelledToS   float64
}

// fluidCall is how calls that start at one moment go.
type fluidCall struct {
	fails      bool
	durS       float64
	retryAfter float64 // > 0: the failure carries Retry-After
	factor     float64 // slow: latency multiplier
	kind       model.BreakerCount
}

// fluid is the state of one outage's model. Masses are deliveries.
// Indexes: p is 0 for deliveries created before the outage ends, 1 after;
// k is the attempts a delivery has made.
type fluid struct {
	p        *planParams
	o        *PlanOutage
	dt       float64
	classes  int // attempt counts told apart: 0..classes
	delayLo  []float64
	delayHi  []float64
	winDead  []bool // a failure of attempt k is past the window
	startS   float64
	endS     float64
	stopS    float64 // the drill ends
	sourceTo float64 // the source stops producing

	// the affected subscribers
	subsA   float64
	svcA    float64
	failA   float64
	concA   float64 // partner capacity, all affected subscribers; 0 = unlimited
	workA   float64 // seconds of work queued at the partner
	ampA    float64
	eventsA float64 // deliveries per event to them
	rewaitS float64 // wait to rejoin the round robin after an attempt

	// everyone else, one steady stream of attempts
	subsO, svcO, ampO, eventsO float64

	ready   [2][]float64
	delayed [2]float64
	diff    [2][][]float64 // delay calendar: rate changes per bin
	run     [2][]float64   // delay calendar: mass released per bin
	ring    int            // bins of the delay calendar

	cring   int            // bins of the completion calendar
	succ    [2][][]float64 // completions by outcome, [p][k][bin]
	fail    [2][][]float64
	failRA  [2][][]float64
	raAt    []float64 // Retry-After of the failures in a bin
	counted []float64 // failures in a bin the breaker counts
	probeOK []float64
	probeNo []float64
	probeIg []float64 // probes that end in a failure the breaker ignores
	relA    []float64 // affected slots freed per bin
	relO    []float64 // other slots freed per bin
	inA     float64
	inO     float64
	readyO  float64

	held    [2]float64 // affected deliveries held back by the source
	heldO   float64
	pending float64 // affected deliveries created before the outage ends, not terminal

	// breaker of each affected subscriber, all alike
	br         *PlanBreaker
	trip       model.TripRule // br.Trip
	bs         model.BreakerSettings
	state      int // 0 closed, 1 half-open, 2 open
	openUntil  float64
	consec     float64
	winFails   []float64 // window/rate: fails per bin of the window, per subscriber
	winCalls   []float64
	winBin     float64
	lastBin    int
	probesOut  float64
	probesLeft float64
	probeWins  float64

	cur int // the current step

	out drainOutcome
}

// modelDrain runs the drain model of outage o.
func modelDrain(p *planParams, o *PlanOutage, exhaustK func(k int) bool) drainOutcome {
	f := newFluid(p, o, exhaustK)
	f.runModel()
	return f.out
}

func newFluid(p *planParams, o *PlanOutage, winDead func(k int) bool) *fluid {
	in := &p.in
	f := &fluid{p: p, o: o, br: in.Breaker}
	f.startS = o.Start.Seconds()
	f.endS = f.startS + o.Length.Seconds()
	f.stopS = (in.Duration + in.DrainAfter).Seconds()
	f.sourceTo = in.Duration.Seconds()
	if in.Duration <= 0 { // no drill length given: follow the outage long enough
		f.sourceTo = math.Inf(1)
		f.stopS = f.endS + 24*3600
	}
	from := math.Max(0, f.startS-drainWarmupS)
	span := math.Max(f.stopS-from, 1)
	f.dt = math.Min(math.Max(span/MaxDrainSteps, MinDrainStep.Seconds()), MaxDrainStep.Seconds())
	f.out.modelledFromS = from

	// The affected subscribers and the rest.
	totalSubs := 0
	for _, c := range in.Cohorts {
		totalSubs += c.Subscribers
	}
	f.subsA = float64(max(o.Subscribers, 1))
	f.svcA, f.failA = p.partnerS, in.FailureProb
	var restSvc, restFail, restSubs float64
	for _, c := range in.Cohorts {
		n := float64(c.Subscribers)
		svc := c.MeanService.Seconds()
		if p.timeoutS > 0 {
			svc = math.Min(svc, p.timeoutS)
		}
		if c.Name == o.Partner {
			f.svcA, f.failA = svc, c.FailureProb
			if c.Concurrency > 0 {
				f.concA = float64(c.Concurrency) * f.subsA
			}
			n -= f.subsA // the cohort's members the outage spares
		}
		if n > 0 {
			restSubs += n
			restSvc += n * svc
			restFail += n * c.FailureProb
		}
	}
	if f.svcA <= 0 {
		f.svcA = p.meanS
	}
	// Deliveries per second to the affected subscribers and to the rest.
	rateA := in.ArrivalPerS * o.ShareOfDeliveries
	rateO := in.ArrivalPerS - rateA
	events := in.EventsPerS
	if events <= 0 {
		events = in.ArrivalPerS / math.Max(float64(totalSubs), 1)
		if totalSubs == 0 {
			events = in.ArrivalPerS
		}
	}
	if events > 0 {
		f.eventsA, f.eventsO = rateA/events, rateO/events
	}
	f.subsO = restSubs
	f.svcO, f.ampO = p.meanS, 1
	if restSubs > 0 {
		f.svcO = restSvc / restSubs
		if a, ok := ExpectedAttempts(restFail/restSubs, in.MaxAttempts); ok {
			f.ampO = a
		}
	}
	if a, ok := ExpectedAttempts(f.failA, in.MaxAttempts); ok {
		f.ampA = a
	} else {
		f.ampA = 1
	}
	// An attempt that ends rejoins the round robin behind the subscribers an
	// event's fan-out made due. The pool works through one event's fan-out
	// in Tb; events arrive at random, so fan-outs queue behind each other
	// like the jobs of an M/D/1 queue at load ρ = events/s × Tb, whose mean
	// wait is ρ·Tb/(2(1−ρ)). The round robin bounds the wait: ahead of the
	// partner are at most the other subscribers, one start each, which
	// the pool gets through in about Tb while busy (probability ρ).
	if workers := float64(in.Workers); f.subsO > 1 && events > 0 {
		tb := f.eventsO * f.svcO * f.ampO / workers
		rho := math.Min(1, events*tb)
		f.rewaitS = rho * tb
		if rho < 0.5 {
			f.rewaitS = rho * tb / (2 * (1 - rho))
		}
	}

	// Attempt classes and their delays.
	f.classes = in.MaxAttempts
	if f.classes == 0 {
		f.classes = unlimitedClasses
	}
	f.delayLo = make([]float64, f.classes+2)
	f.delayHi = make([]float64, f.classes+2)
	f.winDead = make([]bool, f.classes+2)
	sch := scheduler{p: p}
	sch.next()
	maxDelay := 0.0
	for k := 2; k <= f.classes+1; k++ {
		st := sch.next()
		lo, hi := st.lo, st.hi
		if p.bo.Jitter.Info().FollowsPrevious { // keep the typical value the mean
			hi = math.Min(hi, math.Max(lo, 2*st.typ-lo))
		}
		f.delayLo[k], f.delayHi[k] = lo, hi
		maxDelay = math.Max(maxDelay, hi)
	}
	for k := 1; k <= f.classes; k++ {
		f.winDead[k] = winDead(k)
	}
	for i := range in.Outages {
		if ra := in.Outages[i].RetryAfter.Seconds(); ra > 0 && in.Outages[i].Partner == o.Partner {
			maxDelay = math.Max(maxDelay, math.Min(ra, p.retryAfterLimitS()))
		}
	}
	f.ring = min(int(math.Ceil(maxDelay/f.dt))+3, MaxDrainRingBins)
	for f.ring >= MaxDrainRingBins && f.dt < MaxDrainStep.Seconds() {
		f.dt = math.Min(f.dt*2, MaxDrainStep.Seconds())
		f.ring = min(int(math.Ceil(maxDelay/f.dt))+3, MaxDrainRingBins)
	}
	maxCall := math.Max(p.timeoutS, 1)
	if p.timeoutS == 0 {
		maxCall = math.Max(f.svcA*maxSlowFactor(in.Outages, o.Partner), 60)
	}
	f.cring = min(int(math.Ceil((maxCall+f.rewaitS)/f.dt))+3, MaxDrainRingBins)
	for pp := range 2 {
		f.ready[pp] = make([]float64, f.classes+1)
		f.run[pp] = make([]float64, f.classes+1)
		f.diff[pp] = make([][]float64, f.classes+1)
		f.succ[pp] = make([][]float64, f.classes+1)
		f.fail[pp] = make([][]float64, f.classes+1)
		f.failRA[pp] = make([][]float64, f.classes+1)
	}
	f.raAt = make([]float64, f.cring)
	f.counted = make([]float64, f.cring)
	f.probeOK = make([]float64, f.cring)
	f.probeNo = make([]float64, f.cring)
	f.probeIg = make([]float64, f.cring)
	f.relA = make([]float64, f.cring)
	f.relO = make([]float64, f.cring)
	if f.br != nil {
		f.trip, _ = model.ParseTripRule(f.br.Trip) // validated
		f.bs = model.BreakerSettings{Trip: f.trip, Threshold: f.br.Threshold, Ratio: f.br.Ratio, MinCalls: f.br.MinCalls}
	}
	if f.br != nil && f.trip.Info().Windowed {
		f.winBin = math.Max(f.br.Window.Seconds()/10, f.dt)
		f.winFails = make([]float64, 10)
		f.winCalls = make([]float64, 10)
	}
	f.out.dead = map[string]float64{}
	return f
}

func maxSlowFactor(outs []PlanOutage, partner string) float64 {
	m := 1.0
	for _, o := range outs {
		if o.Partner == partner {
			_, e := o.fakeOutage()
			m = math.Max(m, e.LatencyFactor)
		}
	}
	return m
}

func (p *planParams) retryAfterLimitS() float64 {
	if p.in.RetryAfterMax > 0 {
		return p.in.RetryAfterMax.Seconds()
	}
	return p.capS
}

func grow(s []float64, n int) []float64 {
	if s == nil {
		return make([]float64, n)
	}
	return s
}

// call says how a call to the affected subscribers that starts at t goes,
// before the partner's own queue and the attempt timeout.
func (f *fluid) call(t float64) fluidCall {
	c := fluidCall{factor: 1}
	for i := range f.p.in.Outages {
		o := &f.p.in.Outages[i]
		if o.Partner != f.o.Partner {
			continue
		}
		s := o.Start.Seconds()
		if t < s || t >= s+o.Length.Seconds() {
			continue
		}
		// What the outage does at t is its kind's declaration: whether it
		// is in force (a flap's up half is not), whether its calls fail or
		// are served slowed down, hang, or carry Retry-After.
		fo, e := o.fakeOutage()
		if in := fo.Kind.Info().EffectiveAt; in != nil && !in(&fo, time.Duration((t-s)*1e9)) {
			return c
		}
		if e.FailShare == 0 {
			c.factor = math.Max(e.LatencyFactor, 1)
			return c
		}
		c.fails = true
		c.durS = o.FailLatency.Seconds()
		// The breaker count class of what the dispatcher sees.
		c.kind = fo.Kind.Info().Counts
		if e.Hangs {
			c.durS = f.p.timeoutS
			if c.durS == 0 {
				c.durS = float64(f.cring-2) * f.dt
			}
		}
		if e.RetryAfter {
			c.kind = model.Count429
			if f.p.in.RetryAfterHonour {
				c.retryAfter = math.Min(o.RetryAfter.Seconds(), f.p.retryAfterLimitS())
			}
		}
		if c.durS <= 0 {
			c.durS = fastFailS
		}
		return c
	}
	return c
}

// fastFailS is how long a scripted outage takes to answer (the fake
// partner's fast answer).
const fastFailS = 0.001

func (f *fluid) bins(s float64) int { return max(1, int(math.Round(s/f.dt))) }

func (f *fluid) runModel() {
	from := f.out.modelledFromS
	steps := int(math.Ceil((f.stopS - from) / f.dt))
	endSeen := false
	for step := 0; step <= steps; step++ {
		t := from + float64(step)*f.dt
		pp := 0
		if t >= f.endS {
			pp = 1
		}
		cb := step % f.cring
		db := step % f.ring
		f.breakerClock(t)
		f.workDone()
		f.complete(t, cb)
		f.releaseDelays(db)
		f.arrive(t, pp)
		f.start(t, step)
		if t >= f.endS && !endSeen {
			endSeen = true
			f.out.backlog = f.pending
			f.out.capacityPerS = f.healthyCapacity()
		}
		if endSeen && f.pending < drainedBelow {
			f.out.drained, f.out.drainS = true, math.Max(0, t-f.endS)
			f.out.modelledToS = t
			return
		}
		if f.state == 2 {
			f.out.openS += f.dt
		}
	}
	f.out.modelledToS = from + float64(steps)*f.dt
}

// healthyCapacity is attempts/s the affected subscribers can take once the
// partner answers as usual: their slots at the partner's latency plus the
// wait to rejoin the round robin.
func (f *fluid) healthyCapacity() float64 {
	slots := float64(f.p.in.Workers) - f.busyO()
	if ppc := f.p.in.PerPartnerConcurrency; ppc > 0 {
		slots = math.Min(slots, float64(ppc)*f.subsA)
	}
	rate := math.Max(0, slots) / (f.svcA + f.rewaitS)
	if f.concA > 0 {
		rate = math.Min(rate, f.concA/f.svcA)
	}
	return rate
}

// busyO is the workers the rest of the traffic keeps busy in steady state.
func (f *fluid) busyO() float64 {
	return f.p.in.ArrivalPerS * (1 - f.o.ShareOfDeliveries) * f.ampO * f.svcO
}

func (f *fluid) breakerClock(t float64) {
	if f.br == nil {
		return
	}
	if f.state == 2 && t >= f.openUntil {
		f.state = 1
		f.probesLeft = float64(f.br.Probes) * f.subsA
		f.probeWins = 0
	}
}

func (f *fluid) open(t float64) {
	f.state = 2
	f.openUntil = t + f.br.Cooldown.Seconds()
	f.consec = 0
	for i := range f.winFails {
		f.winFails[i], f.winCalls[i] = 0, 0
	}
	f.probesOut, f.probesLeft, f.probeWins = 0, 0, 0
}

// record counts closed-state results on the breaker (per subscriber).
func (f *fluid) record(t, ok, no float64) {
	if f.br == nil || f.state != 0 || ok+no == 0 {
		return
	}
	okS, noS := ok/f.subsA, no/f.subsA
	var fails, calls float64
	if f.trip.Info().Windowed {
		fails, calls = f.countWindow(t, okS, noS)
	} else {
		// A run of failures grows while failures outnumber successes;
		// steady transient errors never make a run of Threshold.
		if ok > no {
			f.consec = 0
			return
		}
		f.consec += noS
	}
	if f.trip.Info().FluidOpens(&f.bs, f.consec, fails, calls) {
		f.open(t)
	}
}

// countWindow adds a step's results to the window's bins and returns the
// failures and calls the window holds.
func (f *fluid) countWindow(t, okS, noS float64) (fails, calls float64) {
	b := int(t/f.winBin) % len(f.winFails)
	if b != f.lastBin {
		for i := (f.lastBin + 1) % len(f.winFails); ; i = (i + 1) % len(f.winFails) {
			f.winFails[i], f.winCalls[i] = 0, 0
			if i == b {
				break
			}
		}
		f.lastBin = b
	}
	f.winFails[b] += noS
	f.winCalls[b] += okS + noS
	for i := range f.winFails {
		fails += f.winFails[i]
		calls += f.winCalls[i]
	}
	return fails, calls
}

func (f *fluid) terminal(pp int, m float64, reason string) {
	if pp == 0 {
		f.pending -= m
	}
	if reason != "" {
		f.out.dead[reason] += m
	}
}

func (f *fluid) complete(t float64, cb int) {
	// Probes decide the half-open breaker first.
	if f.br != nil {
		if no := f.probeNo[cb]; no > 0 && f.state == 1 {
			f.open(t)
		} else if ok := f.probeOK[cb]; ok > 0 && f.state == 1 {
			f.probesOut -= ok
			f.probeWins += ok
			if f.probeWins >= float64(f.br.Probes)*f.subsA-1e-9 {
				f.state = 0
				f.consec = 0
			}
		}
		if ig := f.probeIg[cb]; ig > 0 && f.state == 1 {
			// An ignored failure hands the probe's slot back.
			f.probesOut = math.Max(0, f.probesOut-ig)
			f.probesLeft += ig
		}
		f.probeOK[cb], f.probeNo[cb], f.probeIg[cb] = 0, 0, 0
	}
	var okAll float64
	for pp := range 2 {
		for k := 1; k <= f.classes; k++ {
			if s := f.succ[pp][k]; s != nil && s[cb] > 0 {
				okAll += s[cb]
				f.terminal(pp, s[cb], "")
				s[cb] = 0
			}
			for ra := range 2 {
				ring := f.fail[pp][k]
				if ra == 1 {
					ring = f.failRA[pp][k]
				}
				if ring == nil || ring[cb] == 0 {
					continue
				}
				m := ring[cb]
				ring[cb] = 0
				retryAfter := 0.0
				if ra == 1 {
					retryAfter = f.raAt[cb]
				}
				f.decide(t, pp, k, m, retryAfter)
			}
		}
	}
	f.raAt[cb] = 0
	f.record(t, okAll, f.counted[cb])
	f.counted[cb] = 0
	f.inA = math.Max(0, f.inA-f.relA[cb])
	f.inO = math.Max(0, f.inO-f.relO[cb])
	f.relA[cb], f.relO[cb] = 0, 0
}

// decide is the policy's decision on m failed attempts number k.
func (f *fluid) decide(t float64, pp, k int, m, retryAfter float64) {
	in := &f.p.in
	switch {
	case in.MaxAttempts > 0 && k >= in.MaxAttempts:
		f.terminal(pp, m, "max-attempts")
		return
	case f.winDead[k]:
		f.terminal(pp, m, "window-expired")
		return
	case f.br != nil && f.br.OnOpenDeadLetter && f.state == 2:
		f.terminal(pp, m, "circuit-open")
		return
	}
	next := min(k+1, f.classes+1)
	lo, hi := f.delayLo[next], f.delayHi[next]
	cls := min(k, f.classes)
	switch {
	case retryAfter <= lo:
		f.spread(pp, cls, m, lo, hi)
	case retryAfter >= hi:
		f.spread(pp, cls, m, retryAfter, retryAfter)
	default: // the delay is max(backoff, Retry-After)
		share := (retryAfter - lo) / (hi - lo)
		f.spread(pp, cls, m*share, retryAfter, retryAfter)
		f.spread(pp, cls, m*(1-share), retryAfter, hi)
	}
}

// spread schedules mass m of class k to come due uniformly over
// [now+lo, now+hi].
func (f *fluid) spread(pp, k int, m, lo, hi float64) {
	if m <= 0 {
		return
	}
	d := f.diff[pp][k]
	if d == nil {
		d = make([]float64, f.ring)
		f.diff[pp][k] = d
	}
	a := min(f.bins(lo), f.ring-2)
	b := max(a, min(f.bins(hi), f.ring-2))
	now := f.cur
	per := m / float64(b-a+1)
	d[(now+a)%f.ring] += per
	d[(now+b+1)%f.ring] -= per
	f.delayed[pp] += m
}

func (f *fluid) releaseDelays(db int) {
	for pp := range 2 {
		for k := range f.diff[pp] {
			d := f.diff[pp][k]
			if d == nil {
				continue
			}
			f.run[pp][k] += d[db]
			d[db] = 0
			if r := f.run[pp][k]; r > 1e-12 {
				r = math.Min(r, f.delayed[pp])
				f.ready[pp][k] += r
				f.delayed[pp] -= r
			} else if r < 1e-12 {
				f.run[pp][k] = math.Max(0, r)
			}
		}
	}
}

func (f *fluid) readyA(pp int) float64 {
	s := 0.0
	for _, v := range f.ready[pp] {
		s += v
	}
	return s
}

// arrive adds this step's arrivals, holding the source back (or refusing
// deliveries) when the queue is full.
func (f *fluid) arrive(t float64, pp int) {
	in := &f.p.in
	events := 0.0
	if t < f.sourceTo {
		events = f.eventRate(t) * f.dt
	}
	newA, newO := events*f.eventsA, events*f.eventsO
	if pp == 0 {
		f.pending += newA
	}
	f.out.deliveries += newA
	if in.QueueCapacity <= 0 {
		f.ready[pp][0] += newA
		f.readyO += newO * f.ampO
		return
	}
	queued := f.readyA(0) + f.readyA(1) + f.delayed[0] + f.delayed[1] + f.readyO/f.ampO
	room := math.Max(0, float64(in.QueueCapacity)-queued)
	if in.OnFullReject {
		if w := newA + newO; w > room {
			keep := room / w
			f.out.deliveries -= newA * (1 - keep)
			f.out.noAttempt += (newA + newO) * (1 - keep)
			f.terminal(pp, newA*(1-keep), "queue-full")
			newA, newO = newA*keep, newO*keep
		}
		f.ready[pp][0] += newA
		f.readyO += newO * f.ampO
		return
	}
	// Block: held events go first, oldest (created before the outage's
	// end) first, then this step's.
	f.held[pp] += newA
	f.heldO += newO
	for q := range 2 {
		w := f.held[q] + f.heldO*f.held[q]/math.Max(f.held[0]+f.held[1], 1e-300)
		if f.held[0]+f.held[1] == 0 {
			w = 0
		}
		if w <= 0 || room <= 0 {
			continue
		}
		take := math.Min(1, room/w)
		moveA := f.held[q] * take
		moveO := (w - f.held[q]) * take
		f.ready[q][0] += moveA
		f.readyO += moveO * f.ampO
		f.held[q] -= moveA
		f.heldO = math.Max(0, f.heldO-moveO)
		room -= moveA + moveO
	}
	if f.held[0]+f.held[1] == 0 && room > 0 && f.heldO > 0 { // no affected deliveries held
		move := math.Min(room, f.heldO)
		f.readyO += move * f.ampO
		f.heldO -= move
	}
	f.out.heldMax = math.Max(f.out.heldMax, f.held[0]+f.held[1])
}

// eventRate is the source's events per second at t.
func (f *fluid) eventRate(t float64) float64 {
	in := &f.p.in
	if in.EventRate != nil {
		return in.EventRate(time.Duration(t * 1e9))
	}
	if in.EventsPerS > 0 {
		return in.EventsPerS
	}
	tot := f.eventsA + f.eventsO
	if tot == 0 {
		return 0
	}
	return in.ArrivalPerS / tot
}

// start hands free workers to the affected subscribers and the rest.
func (f *fluid) start(t float64, step int) {
	in := &f.p.in
	f.cur = step
	rA := f.readyA(0) + f.readyA(1)
	if f.br != nil && f.state == 2 && f.br.OnOpenDeadLetter && rA > 0 {
		for pp := range 2 {
			for k := range f.ready[pp] {
				if v := f.ready[pp][k]; v > 0 {
					f.terminal(pp, v, "circuit-open")
					if k == 0 {
						f.out.deliveries -= v // dead-lettered before any attempt
						f.out.noAttempt += v
					}
					f.ready[pp][k] = 0
				}
			}
		}
		rA = 0
	}
	wantA := rA
	if f.br != nil {
		switch f.state {
		case 2:
			wantA = 0
		case 1:
			if f.probesOut > 0 {
				wantA = 0 // wait for the probes' results
			} else {
				wantA = math.Min(wantA, f.probesLeft)
			}
		}
	}
	ppc := float64(in.PerPartnerConcurrency)
	if ppc > 0 {
		wantA = math.Min(wantA, math.Max(0, ppc*f.subsA-f.inA))
	}
	wantO := f.readyO
	if ppc > 0 && f.subsO > 0 {
		wantO = math.Min(wantO, math.Max(0, ppc*f.subsO-f.inO))
	}
	free := math.Max(0, float64(in.Workers)-f.inA-f.inO)
	sA, sO := wantA, wantO
	if wantA+wantO > free {
		// Round robin: one start per partner with due work in turn.
		nA := math.Min(f.subsA, wantA)
		nO := math.Min(f.subsO, wantO)
		sA = free * nA / math.Max(nA+nO, 1e-300)
		sO = free - sA
		if sA > wantA {
			sO, sA = sO+sA-wantA, wantA
		}
		if sO > wantO {
			sA, sO = math.Min(wantA, sA+sO-wantO), wantO
		}
	}
	if sO > 0 {
		f.readyO -= sO
		f.inO += sO
		f.relO[(step+f.bins(f.svcO))%f.cring] += sO
	}
	if sA <= 0 {
		return
	}
	if f.br != nil && f.state == 1 {
		f.probesLeft -= sA
		f.probesOut += sA
		f.out.probes += sA
	}
	f.out.attempts += sA
	f.inA += sA
	c := f.call(t)
	dur := c.durS
	fails, timedOut := 0.0, false
	if !c.fails {
		svc := f.svcA * c.factor
		wait := 0.0
		if f.concA > 0 {
			wait = f.workA / f.concA
			f.workA += sA * svc
		}
		dur = wait + svc
		if f.p.timeoutS > 0 && dur > f.p.timeoutS {
			dur, timedOut = f.p.timeoutS, true
		}
		fails = f.failA
		c.kind = model.Count5xx // a transient error is a 503
		if timedOut {
			fails = 1
			c.kind = model.CountTimeout
		}
	} else {
		fails = 1
	}
	counts := f.br == nil || f.br.Count == 0 || f.br.Count&c.kind != 0
	cb := (step + f.bins(dur)) % f.cring
	f.relA[(step+f.bins(dur+f.rewaitS))%f.cring] += sA
	if f.br != nil && f.state == 1 {
		f.probeOK[cb] += sA * (1 - fails)
		if counts {
			f.probeNo[cb] += sA * fails
		} else {
			f.probeIg[cb] += sA * fails
		}
	}
	if counts {
		f.counted[cb] += sA * fails
	}
	left := sA
	for pp := range 2 {
		tot := f.readyA(pp)
		if tot <= 0 || left <= 0 {
			continue
		}
		take := math.Min(1, left/tot)
		for k, v := range f.ready[pp] {
			if v <= 0 {
				continue
			}
			m := v * take
			f.ready[pp][k] -= m
			left -= m
			if k == 0 {
				f.out.firsts += m
			}
			kk := min(k+1, f.classes)
			f.succ[pp][kk] = grow(f.succ[pp][kk], f.cring)
			f.succ[pp][kk][cb] += m * (1 - fails)
			if c.retryAfter > 0 {
				f.failRA[pp][kk] = grow(f.failRA[pp][kk], f.cring)
				f.failRA[pp][kk][cb] += m * fails
				f.raAt[cb] = c.retryAfter
			} else {
				f.fail[pp][kk] = grow(f.fail[pp][kk], f.cring)
				f.fail[pp][kk][cb] += m * fails
			}
		}
	}
}

// workDone is the partner-side queue's progress in one step.
func (f *fluid) workDone() {
	if f.concA > 0 {
		f.workA = math.Max(0, f.workA-f.concA*f.dt)
	}
}

func (plan *Plan) makeDrains(p *planParams) {
	// A delivery whose attempt k fails is past its window when the typical
	// path's next attempt would start after it.
	winDead := func(k int) bool {
		if !p.hasWindow {
			return false
		}
		rows := plan.Schedule.Rows
		if len(rows) == 0 {
			return false
		}
		i := min(k, len(rows)-1) // row i is attempt i+1
		return rows[i].ElapsedTypicalS > p.windowS
	}
	for i := range p.in.Outages {
		o := &p.in.Outages[i]
		subs := max(o.Subscribers, 1)
		kind := o.Kind
		if kind == "" {
			kind = OutageKindUnavailable
		}
		d := Drain{Partner: o.Partner, Kind: kind, StartS: o.Start.Seconds(), OutageS: o.Length.Seconds(),
			Share: o.ShareOfDeliveries, Subscribers: subs}
		d.AffectedArrivalPerS = p.in.ArrivalPerS * o.ShareOfDeliveries
		exhaust := math.Inf(1)
		if e := plan.Schedule.LastAttemptTypicalEndS; e != nil {
			exhaust = *e
		}
		if p.hasWindow {
			exhaust = math.Min(exhaust, p.windowS)
		}
		if !math.IsInf(exhaust, 1) {
			d.ExhaustS = ptr(exhaust)
		}
		m := modelDrain(p, o, winDead)
		d.BacklogDeliveries = m.backlog
		d.CapacityPerS = m.capacityPerS
		d.Attempts = m.attempts
		d.DeadLetters = m.dead
		d.BreakerOpenS = m.openS
		d.Probes = m.probes
		d.SourceHeldMax = m.heldMax
		d.ModelledFromS, d.ModelledToS = m.modelledFromS, m.modelledToS
		if m.drained {
			d.DrainS = ptr(m.drainS)
			d.Drains = true
		}
		ampA := 1.0
		fail := p.in.FailureProb
		for _, c := range p.in.Cohorts {
			if c.Name == o.Partner {
				fail = c.FailureProb
			}
		}
		if a, ok := ExpectedAttempts(fail, p.in.MaxAttempts); ok {
			ampA = a
		}
		// Attempts beyond what the deliveries that started in the span
		// would make in steady state; deliveries still waiting for their
		// first attempt when the model stops go on in steady state.
		d.extraAttempts = m.attempts - m.firsts*ampA
		d.noAttempt = m.noAttempt
		plan.Drains = append(plan.Drains, d)
	}
	plan.amplificationWithOutages(p)
}

// amplificationWithOutages adds the attempts each outage costs beyond the
// steady state to the drill's expected attempts.
func (plan *Plan) amplificationWithOutages(p *planParams) {
	a := plan.Amplification.Expected
	if a == nil || len(plan.Drains) == 0 || p.in.Duration <= 0 {
		return
	}
	deliveries := p.in.ArrivalPerS * p.in.Duration.Seconds()
	if p.in.EventRate != nil && p.in.EventsPerS > 0 {
		// A ramp: integrate the event rate.
		steps := 1000
		dt := p.in.Duration / time.Duration(steps)
		var ev float64
		for i := range steps {
			ev += p.in.EventRate(dt*time.Duration(i)+dt/2) * dt.Seconds()
		}
		deliveries = ev * p.in.ArrivalPerS / p.in.EventsPerS
	}
	if deliveries <= 0 {
		return
	}
	attempts := deliveries * *a
	for _, d := range plan.Drains {
		attempts += d.extraAttempts
		deliveries -= d.noAttempt
	}
	if deliveries > 0 {
		plan.Amplification.WithOutages = ptr(attempts / deliveries)
	}
}

// deadLetterText lists dead letters by reason, largest first, rounded to
// whole deliveries: "412 max-attempts, 3 window-expired"; "–" for none.
func deadLetterText(dead map[string]float64) string {
	type kv struct {
		k string
		v float64
	}
	var rows []kv
	for k, v := range dead {
		if math.Round(v) >= 1 {
			rows = append(rows, kv{k, v})
		}
	}
	if len(rows) == 0 {
		return "–"
	}
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].v != rows[j].v {
			return rows[i].v > rows[j].v
		}
		return rows[i].k < rows[j].k
	})
	var b strings.Builder
	for i, r := range rows {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%.0f %s", r.v, r.k)
	}
	return b.String()
}

// validateDrainInput checks what only the drain model reads.
func validateDrainInput(in *PlanInput, bad func(key, format string, a ...any)) {
	for i, o := range in.Outages {
		key := fmt.Sprintf("outages[%d]", i)
		if _, err := fakepartner.ParseOutageKind(o.Kind); o.Kind != "" && err != nil {
			bad(key+".kind", "%q, want one of %v", o.Kind, fakepartner.OutageKindNames())
		}
		if o.Start < 0 {
			bad(key+".start", "%v is negative", o.Start)
		}
		if o.FailLatency < 0 {
			bad(key+".fail_latency", "%v is negative", o.FailLatency)
		}
		if o.RetryAfter < 0 {
			bad(key+".retry_after", "%v is negative", o.RetryAfter)
		}
		// The kind's own keys are checked by its declaration.
		if fo, _ := o.fakeOutage(); o.Kind != "" {
			for _, pr := range fo.Problems(0) {
				if pr.Key == "factor" || pr.Key == "period" {
					bad(key+"."+pr.Key, "%s", pr.Msg)
				}
			}
		}
	}
	for i, c := range in.Cohorts {
		key := fmt.Sprintf("cohorts[%d]", i)
		if c.Subscribers < 0 || c.Concurrency < 0 || c.MeanService < 0 {
			bad(key, "subscribers, concurrency and mean service must not be negative")
		}
		if !(c.FailureProb >= 0 && c.FailureProb <= 1) {
			bad(key+".failure_prob", "%v, want a number in [0, 1]", c.FailureProb)
		}
	}
	if b := in.Breaker; b != nil {
		if _, err := model.ParseTripRule(b.Trip); err != nil {
			bad("breaker.trip", "%v", err)
		}
		if b.Threshold < 1 || b.Probes < 1 || b.MinCalls < 0 || b.Cooldown <= 0 || b.Window < 0 || !(b.Ratio >= 0 && b.Ratio <= 1) {
			bad("breaker", "threshold and probes must be ≥ 1, cooldown > 0, window and min_calls ≥ 0, ratio in [0, 1]")
		}
	}
	if in.QueueCapacity < 0 {
		bad("queue_capacity", "%d is negative", in.QueueCapacity)
	}
	if in.RetryAfterMax < 0 || in.Duration < 0 || in.DrainAfter < 0 {
		bad("retry_after_max, duration, drain_after", "must not be negative")
	}
	if !finiteNonNeg(in.EventsPerS) {
		bad("events_per_s", "%v, want a finite number ≥ 0", in.EventsPerS)
	}
}
