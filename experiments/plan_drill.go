package experiments

import (
	"time"

	"github.com/stormdrill/stormdrill/drills"
)

// PlanInputFor reads what the analytic plan needs off a loaded drill:
// deliveries per second after fan-out, mean service time, the steady-state
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
	var meanSvc, fail float64 // weighted by subscribers
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
		meanSvc += float64(sp.Count) * float64(m)
		fail += float64(sp.Count) * (sp.TransientErrors)
	}
	if subs > 0 {
		meanSvc /= float64(subs)
		fail /= float64(subs)
	}
	rate, err := d.PlanRate()
	if err != nil {
		return PlanInput{}, err
	}
	r := &d.Policy.Retry
	in := PlanInput{
		Drill:                 d.Name,
		ArrivalPerS:           rate * float64(subs),
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
	if d.BreakerEnabled() {
		b, err := d.ModelBreakerSettings()
		if err != nil {
			return PlanInput{}, err
		}
		in.Breaker = &b
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
			effect := o.Kind.Info().Effect(&o)
			in.Outages = append(in.Outages, PlanOutage{
				Partner: sp.Name, Length: o.For,
				ShareOfDeliveries: float64(hit) / float64(max(subs, 1)),
				Subscribers:       hit,
				Kind:              o.Kind.String(),
				Effect:            &effect,
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
