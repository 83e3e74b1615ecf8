package tally

import (
	"fmt"
	"math"

	"github.com/stormdrill/stormdrill/model"
	"github.com/stormdrill/stormdrill/reports"
)

// Run assembles the report: summary (gates evaluated), series, CDFs and
// the policy echo. Call it once, after End and the Pending calls. Counts
// of the interval still open at the end go into the last row, so every
// count column of the series sums to the summary's figure. A broken
// accounting identity is returned as an error wrapping ErrAccounting,
// together with the run so that it can still be written down.
func (t *Tally) Run() (*reports.Run, error) {
	cfg := t.cfg
	if n := t.rows.len(); n > 0 {
		t.rows.lateCounts(n - 1).add(&t.open) // the cohort columns stay as sampled
		t.open = counts{}
	}
	s := &reports.Summary{
		Drill: cfg.Drill, Description: cfg.Description, Seed: cfg.Seed, Mode: cfg.Mode, Speed: cfg.Speed,
		DurationS:  cfg.Duration.Seconds(),
		DrillTimeS: float64(t.end) / 1e9,
		Offered:    cfg.Offered,
		Deliveries: reports.Deliveries{
			Created: t.created, Delivered: t.delivered, DeadLettered: t.dead, Pending: t.pending,
		},
		Attempts:              reports.Attempts{Total: t.attempts, First: t.first, Retries: t.attempts - t.first, ByOrdinal: append([]int64{}, t.byOrdinal...)},
		HealthyLatencyS:       t.healthy.Percentiles(),
		HealthyLatencyOutageS: t.healthyOutage.Percentiles(),
		SLOS:                  float64(cfg.SLO) / 1e9,
		DeadLetterReasons:     map[string]int64{},
		Duplicates:            new(t.duplicates),
		Findings:              []reports.Finding{},
		LostAcks:              t.lostAcks,
		BreakerTransitions:    t.breakerTransitions(),
		RetryAfterIgnored:     t.retryAfterIgnored,
		SourceHeldBackS:       t.heldBackS,
		SourceHeldBackMaxS:    t.heldBackMaxS,
		Restarts:              append([]reports.Restart{}, t.restarts...),
		Alerts:                append([]reports.Alert{}, t.alerts...),
		Lateness:              t.lateness,
	}
	s.Deliveries.Lost = s.Deliveries.Created - s.Deliveries.Delivered - s.Deliveries.DeadLettered - s.Deliveries.Pending
	if t.first > 0 {
		a := float64(t.attempts) / float64(t.first)
		s.Amplification = &a
	}
	for reason, n := range t.reasons {
		s.DeadLetterReasons[reason] = n
	}
	// The within-SLO fraction is over healthy deliveries whose latency is a
	// question: bad data (permanent dead letters) is left out, and so are
	// deliveries still pending but younger than the SLO, which can still
	// make it. Everything else that was not delivered within the SLO —
	// dead-lettered for any other reason, or pending past the SLO — counts
	// against it.
	if denom := t.healthyCreated - t.youngPend - t.healthyPermanent; denom > 0 {
		s.HealthyWithinSLO = float64(t.healthyWithin) / float64(denom)
	} else {
		s.HealthyWithinSLO = 1
	}
	s.Outages = []reports.Outage{}
	allDrained := true
	var worst float64
	for i, w := range t.l.Outages {
		ro := reports.Outage{Partner: t.l.Cohorts[w.Cohort].Name, Kind: w.Kind, StartS: float64(w.Start) / 1e9, EndS: float64(w.End) / 1e9}
		// Drain time: from the outage's end until the last delivery to its
		// subscribers created before that end was terminal. An outage that
		// had not ended, or whose backlog is still pending, did not drain.
		if tr := t.tracks[i]; !tr.open && int64(w.End) <= t.end {
			v := max(0, float64(tr.lastDone-int64(w.End))/1e9)
			ro.DrainTimeS = &v
			worst = max(worst, v)
		} else {
			allDrained = false
		}
		ro.RetrySpread = t.retrySpread(i)
		tr := t.tracks[i]
		retries := tr.retries // not drained: every retry until the run ended
		if ro.DrainTimeS != nil {
			retries = tr.retriesBeforeEnd
			if tr.lastDone >= int64(w.End) {
				retries = tr.retriesAtDone
			}
		}
		ro.Retries, ro.DeadLetters = &retries, &tr.dead
		s.Outages = append(s.Outages, ro)
	}
	s.Actions = append([]reports.ActionRecord{}, cfg.Actions...)
	s.Replays = t.replaysSummary()
	if allDrained && len(t.l.Outages) > 0 {
		s.DrainTimeS = &worst
	}
	for ci, c := range t.cohorts {
		co := t.l.Cohorts[ci]
		rc := reports.Cohort{
			Name: co.Name, Subscribers: co.Subscribers, Faulty: co.Faulty, Deliveries: c.deliveries,
			Delivered: c.delivered, DeadLettered: c.dead, Pending: c.pending, Attempts: c.attempts, LatencyS: c.hist.Percentiles(),
		}
		if c.attempted > 0 {
			a := float64(c.attempts) / float64(c.attempted)
			rc.Amplification = &a
		}
		if len(c.reasons) > 0 {
			rc.DeadLetters = c.reasons
		}
		rc.StatusCodes = c.codeMap()
		if t.cohortColumns() && ci < MaxCohortColumns {
			oldest := c.oldestMaxS
			rc.OldestAgeMaxS = &oldest
		}
		s.Cohorts = append(s.Cohorts, rc)
	}
	ts := t.series(s)
	gates, err := reports.ParseGates(cfg.Gates)
	if err != nil {
		return nil, err
	}
	reports.EvalGates(s, gates)
	run := &reports.Run{Summary: s, Timeseries: ts, HealthyCDF: t.healthy.CDF(), HealthyOutageCDF: t.healthyOutage.CDF()}
	run.Policy = append(run.Policy, cfg.Policy...)
	if s.Deliveries.Lost != 0 {
		return run, fmt.Errorf("%w: created %d = delivered %d + dead-lettered %d + pending %d + lost %d",
			ErrAccounting, s.Deliveries.Created, s.Deliveries.Delivered, s.Deliveries.DeadLettered, s.Deliveries.Pending, s.Deliveries.Lost)
	}
	return run, nil
}

func (c *counts) add(o *counts) {
	c.first += o.first
	c.retries += o.retries
	c.succ += o.succ
	c.transient += o.transient
	c.timeout += o.timeout
	c.reset += o.reset
	c.permanent += o.permanent
	c.dlq += o.dlq
	for i := range c.dlqBy {
		c.dlqBy[i] += o.dlqBy[i]
	}
}

// addAll is add with the per-cohort columns.
func (c *counts) addAll(o *counts) {
	c.add(o)
	for i := range c.cohortFirst {
		c.cohortFirst[i] += o.cohortFirst[i]
		c.cohortAttempts[i] += o.cohortAttempts[i]
	}
}

// series builds the time series from the rows and sets the summary's
// figures read off it (peaks and oldest ages).
func (t *Tally) series(s *reports.Summary) *reports.Timeseries {
	sec := float64(t.interval) / 1e9
	ts := &reports.Timeseries{IntervalS: sec, Samples: make([]reports.Sample, 0, t.rows.len())}
	for _, rs := range model.Reasons {
		ts.Reasons = append(ts.Reasons, string(rs))
	}
	for _, sub := range t.breakerCols {
		ts.BreakerPartners = append(ts.BreakerPartners, t.l.Subscribers[sub].Name)
	}
	ncol := 0
	if t.cohortColumns() {
		ncol = min(len(t.cohorts), MaxCohortColumns)
		for c := range ncol {
			ts.Cohorts = append(ts.Cohorts, t.l.Cohorts[c].Name)
		}
	}
	var attempts, first int64
	var r row
	for rd := t.rows.reader(); rd.next(&r); {
		iv, g := &r.c, &r.g
		attempts += iv.first + iv.retries
		first += iv.first
		x := reports.Sample{
			T:                 float64(r.t) / 1e9,
			FirstAttemptsPerS: float64(iv.first) / sec,
			RetriesPerS:       float64(iv.retries) / sec,
			SuccessesPerS:     float64(iv.succ) / sec,
			TransientPerS:     float64(iv.transient) / sec,
			TimeoutPerS:       float64(iv.timeout) / sec,
			ResetPerS:         float64(iv.reset) / sec,
			PermanentPerS:     float64(iv.permanent) / sec,
			Ready:             float64(g.Ready),
			Delayed:           float64(g.Delayed),
			InFlight:          float64(g.InFlight),
			OldestReadyAgeS:   g.OldestReadyAge.Seconds(),
			OldestDelayedAgeS: g.OldestDelayedAge.Seconds(),
			DLQPerS:           float64(iv.dlq) / sec,
			SourceHeldBack:    g.SourceHeldBack,
			Breaker:           g.Breaker,
		}
		if iv.first > 0 {
			x.Amplification = float64(iv.first+iv.retries) / float64(iv.first)
		}
		if r.hasHealthy {
			x.HealthyLatencyP50S, x.HealthyLatencyP99S = r.p50, r.p99
		}
		// Per cohort: attempts ÷ first attempts in the interval (NaN when
		// it made no first attempt), and the age of its oldest waiting
		// delivery.
		if ncol > 0 {
			x.CohortAmplification = make([]float64, ncol)
			x.CohortOldestAgeS = make([]float64, ncol)
			x.CohortFirstAttemptsPerS = make([]float64, ncol)
			x.CohortRetriesPerS = make([]float64, ncol)
			for c := range ncol {
				x.CohortFirstAttemptsPerS[c] = float64(iv.cohortFirst[c]) / sec
				x.CohortRetriesPerS[c] = float64(iv.cohortAttempts[c]-iv.cohortFirst[c]) / sec
				x.CohortAmplification[c] = math.NaN()
				if iv.cohortFirst[c] > 0 {
					x.CohortAmplification[c] = float64(iv.cohortAttempts[c]) / float64(iv.cohortFirst[c])
				}
				if c < len(g.CohortOldestAge) {
					x.CohortOldestAgeS[c] = g.CohortOldestAge[c].Seconds()
				}
			}
		}
		if first > 0 {
			x.RunningAmplification = float64(attempts) / float64(first)
		}
		// Counts, not rates: Sample.DLQByReason is documented as counts,
		// plots sum it, and the CSV writer divides by the interval itself.
		x.DLQByReason = make([]float64, len(model.Reasons))
		for i := range iv.dlqBy {
			x.DLQByReason[i] = float64(iv.dlqBy[i])
		}
		s.PeakAttemptsPerS = max(s.PeakAttemptsPerS, x.FirstAttemptsPerS+x.RetriesPerS)
		s.PeakPending = max(s.PeakPending, g.Ready+g.Delayed+g.InFlight)
		s.OldestReadyAgeMaxS = max(s.OldestReadyAgeMaxS, x.OldestReadyAgeS)
		s.OldestDelayedAgeMaxS = max(s.OldestDelayedAgeMaxS, x.OldestDelayedAgeS)
		ts.Samples = append(ts.Samples, x)
	}
	return ts
}

// cohortColumns reports whether the feeder measured per-cohort oldest ages
// (the series then has per-cohort columns).
func (t *Tally) cohortColumns() bool { return t.rows.cohortAges }
