package drills

import (
	"strconv"
	"time"

	"github.com/stormdrill/stormdrill/model"
)

// Defaults, as documented in Keys. The policy's are model's
// (model.DefaultPolicySettings), which the dispatcher's file takes too.
const (
	DefaultSeed            = 1
	DefaultMode            = "sim"
	DefaultDrain           = 10 * time.Minute
	DefaultSampleInterval  = time.Second
	DefaultLatency         = 50 * time.Millisecond
	DefaultWorkers         = 10
	DefaultQueueCapacity   = 100000
	DefaultAttemptTimeout  = 10 * time.Second
	DefaultSLO             = 30 * time.Minute
	DefaultFaultDown       = 10 * time.Second
	DefaultRetryBase       = model.DefaultRetryBase
	DefaultRetryCap        = model.DefaultRetryCap
	DefaultRetryAttempts   = model.DefaultRetryAttempts
	DefaultBreakerCooldown = model.DefaultBreakerCooldown
)

// SetDefaults fills every key a drill built in Go leaves at its zero value.
// Durations use their Set flag; for numbers zero means absent, so a Go
// caller who wants max_attempts 0 (no limit) sets it after SetDefaults.
// Load applies the same defaults to keys absent from the file.
func (d *Drill) SetDefaults() {
	applyDefaults(d, nil)
}

// applyDefaults fills absent keys. has reports whether a key (with indices)
// was in the file; nil means "zero is absent".
func applyDefaults(d *Drill, has func(key string) bool) {
	absent := func(key string, zero bool) bool {
		if has == nil {
			return zero
		}
		return !has(key)
	}
	dur := func(v *Duration, def time.Duration) {
		if !v.Set {
			*v = Duration{D: def}
		}
	}
	str := func(v *string, def string) {
		if *v == "" {
			*v = def
		}
	}
	num := func(v *float64, key string, def float64) {
		if absent(key, *v == 0) {
			*v = def
		}
	}
	integer := func(v *int, key string, def int) {
		if absent(key, *v == 0) {
			*v = def
		}
	}

	if absent("seed", d.Seed == 0) {
		d.Seed = DefaultSeed
	}
	str(&d.Mode, DefaultMode)
	dur(&d.Drain, DefaultDrain)
	if !d.SampleInterval.Set {
		// About 720 samples whatever the drill's length: enough to see a
		// breaker flap, few enough that rates are averages, not noise.
		d.SampleInterval = Duration{D: niceInterval((d.Duration.D + d.Drain.D) / 720), Set: true}
	}
	num(&d.Speed, "speed", 1)
	if d.Mode == "external" {
		systemDefaults(&d.System, absent)
		partnerServerDefaults(&d.PartnerServer)
	}
	str(&d.Source.Arrival, "poisson")

	for i := range d.Partners {
		p := &d.Partners[i]
		key := "partners[" + strconv.Itoa(i) + "]."
		integer(&p.Count, key+"count", 1)
		str(&p.OnBusy, "queue")
		if p.Latency.isZero() {
			p.Latency = Latency{Dist: "constant", Value: Duration{D: DefaultLatency, Set: true}}
		} else if p.Latency.Dist == "" && p.Latency.Value.Set {
			p.Latency.Dist = "constant"
		}
		if p.NetworkDelay.Dist == "" && p.NetworkDelay.Value.Set {
			p.NetworkDelay.Dist = "constant"
		}
	}

	def := model.DefaultPolicySettings()
	r, dr := &d.Policy.Retry, &def.Retry
	integer(&r.MaxAttempts, "policy.retry.max_attempts", dr.MaxAttempts)
	dur(&r.Base, dr.Base.D)
	dur(&r.Cap, dr.Cap.D)
	num(&r.Multiplier, "policy.retry.multiplier", dr.Multiplier)
	str(&r.Jitter, dr.Jitter)
	num(&r.JitterRatio, "policy.retry.jitter_ratio", dr.JitterRatio)
	dur(&r.DeliveryWindow, dr.DeliveryWindow.D)
	str(&r.RetryAfter, dr.RetryAfter)
	d.Policy.FillDerived() // retry_after_max follows cap

	b, db := &d.Policy.Breaker, &def.Breaker
	str(&b.Trip, db.Trip)
	integer(&b.Threshold, "policy.breaker.threshold", db.Threshold)
	dur(&b.Window, db.Window.D)
	num(&b.Ratio, "policy.breaker.ratio", db.Ratio)
	integer(&b.MinCalls, "policy.breaker.min_calls", db.MinCalls)
	dur(&b.Cooldown, db.Cooldown.D)
	integer(&b.Probes, "policy.breaker.probes", db.Probes)
	str(&b.OnOpen, db.OnOpen)

	g, dg := &d.Policy.Budget, &def.Budget
	str(&g.Scope, dg.Scope)
	num(&g.TokenRatio, "policy.budget.token_ratio", dg.TokenRatio)
	str(&g.OnExhausted, dg.OnExhausted)

	w := &d.Dispatcher
	integer(&w.Workers, "dispatcher.workers", DefaultWorkers)
	integer(&w.QueueCapacity, "dispatcher.queue_capacity", DefaultQueueCapacity)
	str(&w.OnFull, "block")
	dur(&w.AttemptTimeout, DefaultAttemptTimeout)
	dur(&w.LeaseTimeout, 30*time.Second)
	integer(&w.ClaimBatch, "dispatcher.claim_batch", 64)
	dur(&w.AlertInterval, time.Second)
	integer(&w.Processes, "dispatcher.processes", 1)

	for i := range d.Faults {
		dur(&d.Faults[i].Down, DefaultFaultDown)
	}
	for i := range d.Actions {
		if a := &d.Actions[i]; a.Kind == ActionDLQReplay {
			integer(&a.Batch, "actions["+strconv.Itoa(i)+"].batch", model.DefaultReplayBatch)
		}
	}
	dur(&d.SLO.DeliveryLatency, DefaultSLO)
}

// isZero reports whether no key of the latency table was given.
func (l *Latency) isZero() bool {
	return l.Dist == "" && !l.Value.Set && !l.Min.Set && !l.Max.Set && !l.Mean.Set &&
		!l.Stddev.Set && !l.P50.Set && !l.P99.Set && l.Alpha == 0 && len(l.Quantiles) == 0
}

// niceInterval rounds d up to 1, 2, 5, 10, 15, 30 or 60 s (or whole
// minutes), at least DefaultSampleInterval.
func niceInterval(d time.Duration) time.Duration {
	for _, s := range []time.Duration{1, 2, 5, 10, 15, 30, 60} {
		if d <= s*time.Second {
			return max(s*time.Second, DefaultSampleInterval)
		}
	}
	return d.Round(time.Minute) + time.Minute
}
