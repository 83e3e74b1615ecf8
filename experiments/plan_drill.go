package experiments

import (
	"fmt"
	"time"

	"github.com/stormdrill/stormdrill/drills"
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
		m := sp.Latency.Expected()
		if timeout > 0 && m > timeout {
			m = timeout
		}
		share := float64(sp.Count) * d.SubscriberShare(sp.Name)
		meanSvc += share * float64(m)
		fail += share * sp.TransientErrors
	}
	rate := d.Source.Rate.PerSecond
	if d.Source.Arrival == "ramp" {
		rate = max(rate, d.Source.RateTo.PerSecond)
	}
	if d.Source.Arrival == "burst" && d.Duration.D > 0 {
		rate = float64(d.Source.Events) / d.Duration.D.Seconds()
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
	for i := range specs {
		sp := &specs[i]
		if len(targets) > 0 && !targets[sp.Name] {
			continue
		}
		for _, o := range sp.Outages {
			hit := sp.Count
			if o.Members > 0 {
				hit = min(o.Members, sp.Count)
			}
			in.Outages = append(in.Outages, PlanOutage{
				Partner: sp.Name, Length: o.For,
				ShareOfDeliveries: float64(hit) * d.SubscriberShare(sp.Name),
				Subscribers:       hit,
			})
			m := sp.Latency.Expected()
			if timeout > 0 && m > timeout {
				m = timeout
			}
			in.PartnerMeanService = m
		}
	}
	return in, nil
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
