package drills

import (
	"errors"
	"strings"

	"github.com/stormdrill/stormdrill/model/runtime/dispatcher"
)

// DispatcherConfig converts a validated drill into the dispatcher's
// configuration: its [policy] as it is, its dispatcher settings, and one
// partner entry per cohort (members named "<cohort>-<m>", as the drill's
// subscribers are) at the partner server's paths, resolved against
// partnersURL ("" leaves them for the dispatch command's --partners). The
// result still needs a Store and an Owner.
func (d *Drill) DispatcherConfig(partnersURL string) (dispatcher.Config, error) {
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
		c.Partners = append(c.Partners, dispatcher.Partner{Name: sp.Name, Members: sp.Count, URL: "/p/" + sp.Name + "/{member}",
			Concurrency: w.PerPartnerConcurrency, Policy: d.Policy})
	}
	return c, nil
}

// dispatcherKeys maps the dispatcher's configuration keys to the drill
// keys they come from (see DispatcherConfig); a partner's keys are
// matched after their "partners[N]." prefix.
var dispatcherKeys = map[string]string{
	"workers":         "dispatcher.workers",
	"claim_batch":     "dispatcher.claim_batch",
	"held_limit":      "dispatcher.queue_capacity",
	"lease_timeout":   "dispatcher.lease_timeout",
	"attempt_timeout": "dispatcher.attempt_timeout",
	"alert_interval":  "dispatcher.alert_interval",
	"speed":           "speed",
	"seed":            "seed",
	"concurrency":     "dispatcher.per_partner_concurrency",
	"policy":          "policy",
}

// dispatcherChecks runs the dispatcher's own validation on the
// configuration a live drill gives it, so that validate refuses what the
// dispatcher would, by the same rules, at the drill's keys.
func dispatcherChecks(d *Drill) []problem {
	if d.Mode != "live" {
		return nil
	}
	cfg, err := d.DispatcherConfig("http://127.0.0.1:1")
	if err != nil {
		return []problem{{"dispatcher", err.Error()}}
	}
	cfg.Owner = "validate"
	err = cfg.Validate()
	if err == nil {
		return nil
	}
	var ps []problem
	seen := map[problem]bool{} // each cohort's entry repeats the policy's problems
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	for _, e := range errs {
		var fe *dispatcher.FieldError
		if !errors.As(e, &fe) {
			ps = append(ps, problem{"dispatcher", e.Error()})
			continue
		}
		if p := (problem{drillKeyOf(fe.Key), fe.Msg}); !seen[p] {
			seen[p] = true
			ps = append(ps, p)
		}
	}
	return ps
}

// drillKeyOf names the drill key a dispatcher configuration key comes from.
func drillKeyOf(key string) string {
	rest := key
	if strings.HasPrefix(key, "partners[") {
		if i := strings.Index(key, "]."); i >= 0 {
			rest = key[i+2:]
			if rest == "members" || rest == "name" {
				return key[:i+1] + map[string]string{"members": ".count", "name": ".name"}[rest]
			}
		}
	}
	head, tail, _ := strings.Cut(rest, ".")
	k, ok := dispatcherKeys[head]
	if !ok {
		return "dispatcher"
	}
	if tail != "" {
		return k + "." + tail
	}
	return k
}
