package experiments

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/stormdrill/stormdrill/drills"
	"github.com/stormdrill/stormdrill/fakepartner"
	"github.com/stormdrill/stormdrill/model"
)

// PlanInputFor reads what the analytic plan needs off a loaded drill:
// deliveries per second after fan-out (source.fanout), mean service time, the steady-state
// failure probability and the outages with their share of deliveries.
func PlanInputFor(d *drills.Drill) (PlanInput, error) {
	specs, err := d.PartnerSpecs()
	if err != nil {
		return PlanInput{}, err
	}
	targets := map[string]bool{}
	for _, n := range d.Source.To {
		targets[n] = true
	}
	var subs int
	var meanSvc, fail float64 // weighted by each cohort's share of deliveries
	timeout := d.Dispatcher.AttemptTimeout.D
	for i := range specs {
		sp := &specs[i]
		if len(targets) > 0 && !targets[sp.Name] {
			continue
		}
		subs += sp.Count
		m := meanCall(sp)
		if timeout > 0 && m > timeout {
			m = timeout
		}
		share := float64(sp.Count) * d.SubscriberShare(sp.Name)
		meanSvc += share * float64(m)
		fail += share * sp.TransientErrors
	}
	rate, err := d.PlanRate()
	if err != nil {
		return PlanInput{}, err
	}
	r := &d.Policy.Retry
	in := PlanInput{
		Drill:                 d.Name,
		ArrivalPerS:           rate * d.FanoutMean(),
		Workers:               d.Dispatcher.Workers,
		MeanService:           time.Duration(meanSvc),
		AttemptTimeout:        timeout,
		MaxAttempts:           r.MaxAttempts,
		Base:                  r.Base.D,
		Cap:                   r.Cap.D,
		Multiplier:            r.Multiplier,
		Jitter:                r.Jitter,
		JitterRatio:           r.JitterRatio,
		DeliveryWindow:        r.DeliveryWindow.D,
		FailureProb:           fail,
		PerPartnerConcurrency: d.Dispatcher.PerPartnerConcurrency,
	}
	in.RetryAfterHonour = r.RetryAfter != "ignore"
	in.RetryAfterMax = r.RetryAfterMax.D
	in.QueueCapacity = d.Dispatcher.QueueCapacity
	in.OnFullReject = d.Dispatcher.OnFull == "reject"
	in.Duration, in.DrainAfter = d.Duration.D, d.Drain.D
	in.EventsPerS = rate
	in.EventRate = d.PlanEventRate()
	if d.BreakerEnabled() {
		bs, err := d.ModelBreakerSettings()
		if err != nil {
			return PlanInput{}, err
		}
		bs = model.NewBreaker(bs).Settings() // defaults filled in
		in.Breaker = &PlanBreaker{
			Trip: bs.Trip.String(), Threshold: bs.Threshold, Window: bs.Window, Ratio: bs.Ratio,
			MinCalls: bs.MinCalls, Cooldown: bs.Cooldown, Probes: bs.Probes,
			OnOpenDeadLetter: d.Policy.Breaker.OnOpen == "dead-letter", Count: bs.Count,
		}
	}
	for i := range specs {
		sp := &specs[i]
		if len(targets) > 0 && !targets[sp.Name] {
			continue
		}
		m := meanCall(sp)
		if timeout > 0 && m > timeout {
			m = timeout
		}
		in.Cohorts = append(in.Cohorts, PlanCohort{Name: sp.Name, Subscribers: sp.Count, MeanService: m,
			FailureProb: sp.TransientErrors, Concurrency: sp.Concurrency})
		for _, o := range sp.Outages {
			hit := sp.Count
			if o.Members > 0 {
				hit = min(o.Members, sp.Count)
			}
			in.Outages = append(in.Outages, PlanOutage{
				Partner: sp.Name, Length: o.For, Start: o.Start, Kind: o.Kind.String(),
				ShareOfDeliveries: float64(hit) * d.SubscriberShare(sp.Name),
				Subscribers:       hit,
				RetryAfter:        retryAfterSeconds(o.RetryAfter),
				FailLatency:       answerAfter(o.AnswerAfter, timeout),
				Factor:            o.Factor,
				Period:            o.Period,
			})
		}
	}
	return in, nil
}

// retryAfterSeconds is the delay a throttle's Retry-After asks for: "N"
// seconds or "date:D"; 0 for none or garbage.
func retryAfterSeconds(s string) time.Duration {
	if d, ok := strings.CutPrefix(s, "date:"); ok {
		v, err := time.ParseDuration(d)
		if err != nil {
			return 0
		}
		return v
	}
	n, err := strconv.ParseUint(s, 10, 32)
	if err != nil {
		return 0
	}
	return time.Duration(n) * time.Second
}

// answerAfter is the mean time a failing call takes to be answered,
// capped at the attempt timeout; 0 for a fast answer.
func answerAfter(d *fakepartner.Dist, timeout time.Duration) time.Duration {
	if d == nil {
		return 0
	}
	m := d.Expected()
	if timeout > 0 && m > timeout {
		m = timeout
	}
	return m
}

// WarnUtilisation is the utilisation above which PlanWarning speaks up.
const WarnUtilisation = 0.9

// PlanWarning returns a one-line warning when the analytic plan finds the
// drill's pool unstable (the attempts offered reach its capacity) or above
// WarnUtilisation busy, and "" otherwise. A drill the plan cannot read
// gets no warning: validation reports what is wrong with it.
func PlanWarning(d *drills.Drill) string {
	in, err := PlanInputFor(d)
	if err != nil {
		return ""
	}
	p, err := MakePlan(in)
	if err != nil {
		return ""
	}
	l := p.Load
	offered := fmt.Sprintf("%.4g deliveries/s (%.4g events/s × %.4g subscribers each)", in.ArrivalPerS, d.MeanEventRate(), d.FanoutMean())
	switch {
	case l.Utilisation == nil:
		return fmt.Sprintf("the plan finds this drill unstable: with no attempt limit and failures, attempts are unbounded; offered %s", offered)
	case !l.Stable:
		return fmt.Sprintf("the plan finds this drill unstable: %.1f× overloaded; offered %s need %.4g attempts/s, the %d workers serve %.4g/s",
			*l.Utilisation, offered, *l.EffectiveArrivalPerS, in.Workers, l.CapacityPerS)
	case *l.Utilisation > WarnUtilisation:
		return fmt.Sprintf("the plan finds the workers %.0f%% busy (above %.0f%%): offered %s need %.4g attempts/s, the %d workers serve %.4g/s",
			100**l.Utilisation, 100*WarnUtilisation, offered, *l.EffectiveArrivalPerS, in.Workers, l.CapacityPerS)
	}
	return ""
}

// meanCall is the mean time a call to sp takes without queueing at the
// partner: its latency, and for a contended partner the network hop before
// the read and the one before the write lands, as fakepartner.Behaviour
// times it (a contended row with zero service time still takes two hops).
func meanCall(sp *fakepartner.Spec) time.Duration {
	m := sp.Latency.Expected()
	if sp.Contended {
		m += 2 * sp.NetworkDelay.Expected()
	}
	return m
}
