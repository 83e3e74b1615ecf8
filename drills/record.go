package drills

import (
	"time"

	"github.com/stormdrill/stormdrill/fakepartner"
	"github.com/stormdrill/stormdrill/reports"
	"github.com/stormdrill/stormdrill/reports/tally"
)

// NewTally returns the tally a run of d in mode measures with: the drill's
// subscriber layout, SLO, classifier (with the retryable_status and
// permanent_status overrides), gates and policy echo. interval is the
// sample interval (tally.Interval of the drill's, or longer).
func (d *Drill) NewTally(specs []fakepartner.Spec, mode string, speed float64, interval time.Duration) *tally.Tally {
	cfg := tally.Config{
		Drill: d.Name, Description: d.Description, Seed: d.Seed, Mode: mode, Speed: speed,
		Duration: d.Duration.D, Layout: tally.NewLayout(specs, d.Source.To), Interval: interval,
		SLO: d.SLO.DeliveryLatency.D, Breakers: d.BreakerEnabled(), Gates: d.Gates,
		Offered: d.Offered(specs),
	}
	if pol, err := d.ModelPolicy(); err == nil {
		cfg.Classifier = &pol.Classifier
	}
	if d.IsExternal() {
		// The system under drill has its own policy and breakers, which
		// the harness cannot see: no echo of the drill's, no breaker
		// columns.
		cfg.Breakers = false
		return tally.New(cfg)
	}
	for _, kv := range d.PolicyEcho() {
		cfg.Policy = append(cfg.Policy, reports.KV{Key: kv[0], Value: kv[1]})
	}
	cfg.Actions = d.ActionRecords()
	for _, i := range d.Replays() {
		a := &d.Actions[i]
		rc := tally.ReplayConfig{Action: i + 1, At: a.At.D, Reason: a.Reason, Cohort: a.Cohort, Batch: a.Batch, Rate: a.Rate.PerSecond}
		if a.Cohort != "" {
			rc.Cohorts = make([]bool, len(d.Partners))
			for ci := range d.Partners {
				rc.Cohorts[ci] = d.Partners[ci].Name == a.Cohort
			}
		}
		cfg.Replays = append(cfg.Replays, rc)
	}
	return tally.New(cfg)
}

// LiveSubscriber is one subscriber endpoint: member Member of cohort Cohort.
type LiveSubscriber = tally.Subscriber

// Subscribers lists every subscriber in the order every mode numbers them,
// and fanout the indexes an event fans out to (source.to).
func Subscribers(d *Drill, specs []fakepartner.Spec) (subs []LiveSubscriber, fanout []int) {
	l := tally.NewLayout(specs, d.Source.To)
	return l.Subscribers, l.Fanout()
}

// LatencyHist is the tally's latency histogram (the live injector measures
// lateness with it).
type LatencyHist = tally.LatencyHist

// NewLatencyHist returns an empty latency histogram.
func NewLatencyHist() *LatencyHist { return tally.NewLatencyHist() }
