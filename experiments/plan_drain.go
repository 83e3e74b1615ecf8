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

// modelDrain runs the drain model of outage o.
func modelDrain(p *planParams, o *PlanOutage, exhaustK func(k int) bool) drainOutcome {
	f := newFluid(p, o, exhaustK)
	f.runModel()
	return f.out
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
	for i := range in.Outages {
		validateDrainOutage(fmt.Sprintf("outages[%d]", i), &in.Outages[i], bad)
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

// validateDrainOutage checks one outage's kind and timing; the kind's own
// keys are checked by its declaration.
func validateDrainOutage(key string, o *PlanOutage, bad func(key, format string, a ...any)) {
	if _, err := fakepartner.ParseOutageKind(o.Kind); o.Kind != "" && err != nil {
		bad(key+".kind", "%q, want one of %v", o.Kind, fakepartner.OutageKindNames())
	}
	nonNegative(bad, key+".start", o.Start)
	nonNegative(bad, key+".fail_latency", o.FailLatency)
	nonNegative(bad, key+".retry_after", o.RetryAfter)
	if fo, _ := o.fakeOutage(); o.Kind != "" {
		for _, pr := range fo.Problems(0) {
			if pr.Key == "factor" || pr.Key == "period" {
				bad(key+"."+pr.Key, "%s", pr.Msg)
			}
		}
	}
}
