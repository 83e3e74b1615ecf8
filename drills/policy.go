package drills

import (
	"fmt"
	"time"

	"github.com/stormdrill/stormdrill/model"
	"github.com/stormdrill/stormdrill/reports"
)

// ModelPolicy converts the drill's retry policy into the policy core's.
func (d *Drill) ModelPolicy() (*model.Policy, error) {
	return d.Policy.Retry.Policy(&d.Policy.Breaker, &d.Policy.Budget)
}

// BreakerEnabled reports whether the drill has a circuit breaker.
func (d *Drill) BreakerEnabled() bool { return d.Policy.Breaker.Enabled() }

// ModelBreakerSettings converts the breaker settings.
func (d *Drill) ModelBreakerSettings() (model.BreakerSettings, error) {
	return d.Policy.Breaker.Settings()
}

// BudgetEnabled reports whether the drill has a retry budget.
func (d *Drill) BudgetEnabled() bool { return d.Policy.Budget.Enabled() }

// PolicyEcho is the drill's policy as rows for reports.
func (d *Drill) PolicyEcho() [][2]string {
	r, b, bu, ds := &d.Policy.Retry, &d.Policy.Breaker, &d.Policy.Budget, &d.Dispatcher
	rows := [][2]string{
		{"retry", fmt.Sprintf("max_attempts %d, base %s, cap %s, ×%g, jitter %s", r.MaxAttempts, dur(r.Base.D), dur(r.Cap.D), r.Multiplier, r.Jitter)},
		{"delivery window", windowText(dur(r.DeliveryWindow.D), r.DeliveryWindow.D == 0)},
		{"Retry-After", fmt.Sprintf("%s, at most %s", r.RetryAfter, dur(r.RetryAfterMax.D))},
	}
	if d.BreakerEnabled() {
		count := "all failures"
		if c, err := model.ParseBreakerCount(b.Count); err == nil {
			count = c.String()
		}
		rows = append(rows, [2]string{"breaker", fmt.Sprintf("%s threshold %d, window %s, ratio %g, min_calls %d, cooldown %s, probes %d, on_open %s, counts %s",
			b.Trip, b.Threshold, dur(b.Window.D), b.Ratio, b.MinCalls, dur(b.Cooldown.D), b.Probes, b.OnOpen, count)})
	} else {
		rows = append(rows, [2]string{"breaker", "none"})
	}
	if d.BudgetEnabled() {
		rows = append(rows, [2]string{"retry budget", fmt.Sprintf("%s, max_tokens %g, token_ratio %g, on_exhausted %s", bu.Scope, bu.MaxTokens, bu.TokenRatio, bu.OnExhausted)})
	} else {
		rows = append(rows, [2]string{"retry budget", "none"})
	}
	rows = append(rows,
		[2]string{"dispatcher", fmt.Sprintf("%d workers, per-partner concurrency %d, queue %d (%s), attempt timeout %s",
			ds.Workers, ds.PerPartnerConcurrency, ds.QueueCapacity, ds.OnFull, dur(ds.AttemptTimeout.D))},
		[2]string{"source", fmt.Sprintf("%s at %g/s for %s", d.Source.Arrival, d.Source.Rate.PerSecond, dur(d.Duration.D))},
		[2]string{"SLO", "delivery latency " + dur(d.SLO.DeliveryLatency.D)},
	)
	return rows
}

func windowText(s string, none bool) string {
	if none {
		return "none"
	}
	return s
}

// dur formats a duration the way the reports do ("5m", "2h", "250ms").
func dur(d time.Duration) string { return reports.FormatDuration(d.Seconds()) }
