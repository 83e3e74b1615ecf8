package live

import (
	"github.com/stormdrill/stormdrill/drills"
	"github.com/stormdrill/stormdrill/model/runtime/dispatcher"
)

// DispatcherConfig converts a validated drill into the dispatcher's
// configuration: its policy, breaker, budget and dispatcher settings, one
// partner entry per cohort (members named "<cohort>-<m>", as the drill's
// subscribers are) at the partner server's paths, resolved against
// partnersURL ("" leaves them for the dispatch command's --partners). The
// result still needs a Store and an Owner.
func DispatcherConfig(d *drills.Drill, partnersURL string) (dispatcher.Config, error) {
	pol, err := d.ModelPolicy()
	if err != nil {
		return dispatcher.Config{}, err
	}
	specs, err := d.PartnerSpecs()
	if err != nil {
		return dispatcher.Config{}, err
	}
	w := &d.Dispatcher
	c := dispatcher.Defaults()
	c.Workers = w.Workers
	c.ClaimBatch = w.ClaimBatch
	// The dispatcher holds no more than the queue may hold, and never so
	// little that one claim batch would not fit.
	c.HeldLimit = min(max(w.QueueCapacity, w.ClaimBatch), dispatcher.DefaultHeldLimit)
	c.LeaseTimeout = w.LeaseTimeout.D
	c.AttemptTimeout = w.AttemptTimeout.D
	c.AlertInterval = w.AlertInterval.D
	c.Seed = d.Seed
	c.Clock.Speed = d.Speed
	if partnersURL != "" {
		c.PartnersURL = partnersURL
		c.AlertURL = partnersURL + "/alerts"
	}
	for _, sp := range specs {
		p := dispatcher.Partner{Name: sp.Name, Members: sp.Count, URL: "/p/" + sp.Name + "/{member}",
			Concurrency: w.PerPartnerConcurrency, Policy: *pol}
		if d.BreakerEnabled() {
			bs, err := d.ModelBreakerSettings()
			if err != nil {
				return dispatcher.Config{}, err
			}
			p.Breaker = &bs
		}
		if d.BudgetEnabled() {
			p.Budget = &dispatcher.Budget{MaxTokens: d.Policy.Budget.MaxTokens, TokenRatio: d.Policy.Budget.TokenRatio}
			if d.Policy.Budget.Scope == "global" {
				p.Budget.Pool = "global"
			}
		}
		c.Partners = append(c.Partners, p)
	}
	return c, nil
}
