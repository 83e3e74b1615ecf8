package experiments

import (
	"math"
	"time"

	"github.com/stormdrill/stormdrill/model"
)

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

func newFluid(p *planParams, o *PlanOutage, winDead func(k int) bool) *fluid {
	f := &fluid{p: p, o: o, br: p.in.Breaker}
	f.setSpan()
	events := f.setSubscribers()
	f.setRewait(events)
	maxDelay := f.setClasses(winDead)
	f.setRings(maxDelay)
	f.setBreaker()
	f.out.dead = map[string]float64{}
	return f
}

// setSpan sets the modelled span around the outage and the step.
func (f *fluid) setSpan() {
	in, o := &f.p.in, f.o
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
}

// setSubscribers sets the affected subscribers' and the rest's service,
// failures, event shares and amplification, and returns the events per
// second.
func (f *fluid) setSubscribers() (events float64) {
	p, in, o := f.p, &f.p.in, f.o
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
	events = in.EventsPerS
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
	return events
}

// setRewait sets how long an attempt that ends waits to rejoin the round
// robin. It rejoins behind the subscribers an event's fan-out made due.
// The pool works through one event's fan-out in Tb; events arrive at
// random, so fan-outs queue behind each other like the jobs of an M/D/1
// queue at load ρ = events/s × Tb, whose mean wait is ρ·Tb/(2(1−ρ)). The
// round robin bounds the wait: ahead of the partner are at most the other
// subscribers, one start each, which the pool gets through in about Tb
// while busy (probability ρ).
func (f *fluid) setRewait(events float64) {
	if workers := float64(f.p.in.Workers); f.subsO > 1 && events > 0 {
		tb := f.eventsO * f.svcO * f.ampO / workers
		rho := math.Min(1, events*tb)
		f.rewaitS = rho * tb
		if rho < 0.5 {
			f.rewaitS = rho * tb / (2 * (1 - rho))
		}
	}
}

// setClasses sets the attempt classes, their delays and which of them the
// delivery window ends, and returns the longest delay a failure waits.
func (f *fluid) setClasses(winDead func(k int) bool) (maxDelay float64) {
	p, in := f.p, &f.p.in
	f.classes = in.MaxAttempts
	if f.classes == 0 {
		f.classes = unlimitedClasses
	}
	f.delayLo = make([]float64, f.classes+2)
	f.delayHi = make([]float64, f.classes+2)
	f.winDead = make([]bool, f.classes+2)
	sch := scheduler{p: p}
	sch.next()
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
		if ra := in.Outages[i].RetryAfter.Seconds(); ra > 0 && in.Outages[i].Partner == f.o.Partner {
			maxDelay = math.Max(maxDelay, math.Min(ra, p.retryAfterLimitS()))
		}
	}
	return maxDelay
}

// setRings sizes the rings of delayed work (coarsening the step when the
// longest delay would need too many bins) and of calls in flight, and
// makes the per-class arrays.
func (f *fluid) setRings(maxDelay float64) {
	p, in := f.p, &f.p.in
	f.ring = min(int(math.Ceil(maxDelay/f.dt))+3, MaxDrainRingBins)
	for f.ring >= MaxDrainRingBins && f.dt < MaxDrainStep.Seconds() {
		f.dt = math.Min(f.dt*2, MaxDrainStep.Seconds())
		f.ring = min(int(math.Ceil(maxDelay/f.dt))+3, MaxDrainRingBins)
	}
	maxCall := math.Max(p.timeoutS, 1)
	if p.timeoutS == 0 {
		maxCall = math.Max(f.svcA*maxSlowFactor(in.Outages, f.o.Partner), 60)
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
}

// setBreaker reads the breaker's rule and, for a windowed one, makes its
// window's bins (after setRings, which may coarsen the step).
func (f *fluid) setBreaker() {
	if f.br == nil {
		return
	}
	f.trip, _ = model.ParseTripRule(f.br.Trip) // validated
	f.bs = model.BreakerSettings{Trip: f.trip, Threshold: f.br.Threshold, Ratio: f.br.Ratio, MinCalls: f.br.MinCalls}
	if f.trip.Info().Windowed {
		f.winBin = math.Max(f.br.Window.Seconds()/10, f.dt)
		f.winFails = make([]float64, 10)
		f.winCalls = make([]float64, 10)
	}
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
	f.cur = step
	rA := f.readyA(0) + f.readyA(1)
	if f.br != nil && f.state == 2 && f.br.OnOpenDeadLetter && rA > 0 {
		f.deadLetterReady()
		rA = 0
	}
	wantA, wantO := f.wantA(rA), f.wantO()
	sA, sO := f.share(wantA, wantO)
	if sO > 0 {
		f.readyO -= sO
		f.inO += sO
		f.relO[(step+f.bins(f.svcO))%f.cring] += sO
	}
	if sA > 0 {
		f.startA(t, step, sA)
	}
}

// deadLetterReady dead-letters every ready affected delivery: an open
// breaker with on_open = "dead-letter".
func (f *fluid) deadLetterReady() {
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
}

// wantA is how many of the rA ready affected deliveries may start: none
// while the breaker is open or its probes are out, its probes while
// half-open, and no more than the per-partner limit leaves room for.
func (f *fluid) wantA(rA float64) float64 {
	want := rA
	if f.br != nil {
		switch f.state {
		case 2:
			want = 0
		case 1:
			if f.probesOut > 0 {
				want = 0 // wait for the probes' results
			} else {
				want = math.Min(want, f.probesLeft)
			}
		}
	}
	if ppc := float64(f.p.in.PerPartnerConcurrency); ppc > 0 {
		want = math.Min(want, math.Max(0, ppc*f.subsA-f.inA))
	}
	return want
}

// wantO is how many of the other subscribers' ready deliveries may start.
func (f *fluid) wantO() float64 {
	want := f.readyO
	if ppc := float64(f.p.in.PerPartnerConcurrency); ppc > 0 && f.subsO > 0 {
		want = math.Min(want, math.Max(0, ppc*f.subsO-f.inO))
	}
	return want
}

// share divides the free workers between the affected and the other
// subscribers when they want more than there is.
func (f *fluid) share(wantA, wantO float64) (sA, sO float64) {
	free := math.Max(0, float64(f.p.in.Workers)-f.inA-f.inO)
	sA, sO = wantA, wantO
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
	return sA, sO
}

// startA starts sA attempts at the affected subscribers at t: they end as
// the outage answers them, and each class of ready deliveries gives its
// share.
func (f *fluid) startA(t float64, step int, sA float64) {
	if f.br != nil && f.state == 1 {
		f.probesLeft -= sA
		f.probesOut += sA
		f.out.probes += sA
	}
	f.out.attempts += sA
	f.inA += sA
	c := f.call(t)
	dur, fails := f.answer(&c, sA)
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
	f.takeReady(sA, cb, fails, c.retryAfter)
}

// answer is how long sA attempts answered by c take and the fraction of
// them that fail: a call the outage does not fail waits behind the
// partner's queue and may time out.
func (f *fluid) answer(c *fluidCall, sA float64) (dur, fails float64) {
	if c.fails {
		return c.durS, 1
	}
	svc := f.svcA * c.factor
	wait := 0.0
	if f.concA > 0 {
		wait = f.workA / f.concA
		f.workA += sA * svc
	}
	dur = wait + svc
	fails = f.failA
	c.kind = model.Count5xx // a transient error is a 503
	if f.p.timeoutS > 0 && dur > f.p.timeoutS {
		dur, fails = f.p.timeoutS, 1
		c.kind = model.CountTimeout
	}
	return dur, fails
}

// takeReady takes sA started attempts from the ready classes in
// proportion, and books their successes and failures at bin cb.
func (f *fluid) takeReady(sA float64, cb int, fails, retryAfter float64) {
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
			if retryAfter > 0 {
				f.failRA[pp][kk] = grow(f.failRA[pp][kk], f.cring)
				f.failRA[pp][kk][cb] += m * fails
				f.raAt[cb] = retryAfter
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
