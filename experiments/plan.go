package experiments

import (
	"errors"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/stormdrill/stormdrill/model"
	"github.com/stormdrill/stormdrill/reports"
)

// Bounds of the analytic plan.
const (
	// MaxScheduleRows is how many attempts the schedule table lists; a
	// longer (or unlimited) attempt budget is summarised by its last rows'
	// pattern and the window verdict, which look further.
	MaxScheduleRows = 30
	// MaxPlanAttempts bounds max_attempts and how far the window verdict
	// looks when attempts are unlimited.
	MaxPlanAttempts = 1_000_000
	// MaxPlanWorkers bounds the smallest-worker-count search.
	MaxPlanWorkers = 100_000
	// DefaultQueueWaitTarget is the p99 queue wait the smallest worker
	// count must meet when PlanInput.QueueWaitTarget is 0.
	DefaultQueueWaitTarget = time.Second
	// DefaultPlanMultiplier and DefaultPlanJitterRatio match the policy
	// core's defaults.
	DefaultPlanMultiplier  = model.DefaultMultiplier
	DefaultPlanJitterRatio = model.DefaultJitterRatio
	// maxDelayS is where delays saturate, as time.Duration does in the
	// policy core (about 292 years).
	maxDelayS = float64(math.MaxInt64) / 1e9
)

// PlanInput is what the analytic plan needs from a drill. The caller
// resolves the drill's defaults and fan-out before filling it in.
type PlanInput struct {
	Drill string
	// ArrivalPerS is deliveries per second: events/s × subscribers each
	// event fans out to.
	ArrivalPerS float64
	Workers     int
	// MeanService is the mean attempt duration (partner latency, capped at
	// the attempt timeout).
	MeanService    time.Duration
	AttemptTimeout time.Duration // 0: none; worst paths then use MeanService
	MaxAttempts    int           // 0 = unlimited
	Base           time.Duration
	Cap            time.Duration // 0 = no cap
	Multiplier     float64       // 0 = DefaultPlanMultiplier; otherwise ≥ 1
	Jitter         string        // a jitter kind's name (model.JitterNames)
	JitterRatio    float64       // proportional only; 0 = DefaultPlanJitterRatio
	DeliveryWindow time.Duration // 0 = none
	// FailureProb is the per-attempt failure probability in steady state
	// (transient errors), in [0, 1].
	FailureProb float64
	Outages     []PlanOutage
	// QueueWaitTarget is the p99 queue wait the smallest-worker-count
	// answer must meet; 0 = DefaultQueueWaitTarget.
	QueueWaitTarget time.Duration
	// PerPartnerConcurrency caps in-flight attempts per subscriber; 0 = no
	// limit.
	PerPartnerConcurrency int
	// PartnerMeanService is the mean attempt duration for the partners
	// affected by an outage once it is over, when Cohorts does not name
	// them; 0 = MeanService.
	PartnerMeanService time.Duration

	// What the drain model reads besides the above (plan_drain.go). Zero
	// values mean: one cohort, no breaker, an unbounded queue, Retry-After
	// ignored, the outage followed for a day after it ends.
	Cohorts          []PlanCohort
	Breaker          *PlanBreaker
	RetryAfterHonour bool
	RetryAfterMax    time.Duration // 0 = the backoff cap
	QueueCapacity    int           // 0 = unbounded
	OnFullReject     bool          // a full queue refuses deliveries instead of holding the source
	EventsPerS       float64       // source events/s; 0 = derived from ArrivalPerS and Cohorts
	// EventRate, if set, is the source's events/s at drill time t (ramps).
	EventRate  func(t time.Duration) float64 `json:"-"`
	Duration   time.Duration                 // how long the source produces
	DrainAfter time.Duration                 // how long the drill runs after that
}

// PlanOutage is one scripted outage, seen from the plan.
type PlanOutage struct {
	Partner string
	Length  time.Duration
	// ShareOfDeliveries is the fraction of deliveries that go to the
	// affected partners, in [0, 1].
	ShareOfDeliveries float64
	// Subscribers is how many subscribers the outage hits (for the
	// per-partner concurrency limit); 0 = 1.
	Subscribers int
	// Start is when the outage begins, in drill time.
	Start time.Duration
	// Kind is one of the OutageKind* names; "" is unavailable.
	Kind string
	// FailLatency is how long a failing call takes to be answered; 0 =
	// the fake partner's fast answer (timeout outages hang until the
	// attempt timeout whatever it says).
	FailLatency time.Duration
	RetryAfter  time.Duration // throttle: the Retry-After it sends; 0 = none
	Factor      float64       // slow: latency multiplier
	Period      time.Duration // flap: one down+up cycle
}

// Plan is the analytic capacity plan of one drill. Durations are seconds
// (suffix _s); a null means "unbounded" or "not applicable", never NaN or
// infinity.
type Plan struct {
	Drill         string        `json:"drill"`
	Inputs        PlanInputEcho `json:"inputs"`
	Schedule      Schedule      `json:"schedule"`
	Amplification Amplification `json:"amplification"`
	Load          Load          `json:"load"`
	Pool          Pool          `json:"pool"`
	Drains        []Drain       `json:"drains"`
	Assumptions   []string      `json:"assumptions"`
}

// PlanInputEcho is the input after defaults, in seconds.
type PlanInputEcho struct {
	ArrivalPerS           float64  `json:"arrival_per_s"`
	Workers               int      `json:"workers"`
	MeanServiceS          float64  `json:"mean_service_s"`
	AttemptTimeoutS       float64  `json:"attempt_timeout_s"`
	MaxAttempts           int      `json:"max_attempts"` // 0 = unlimited
	BaseS                 float64  `json:"base_s"`
	CapS                  *float64 `json:"cap_s"` // null: no cap
	Multiplier            float64  `json:"multiplier"`
	Jitter                string   `json:"jitter"`
	JitterRatio           float64  `json:"jitter_ratio"`
	DeliveryWindowS       *float64 `json:"delivery_window_s"` // null: none
	FailureProb           float64  `json:"failure_prob"`
	QueueWaitTargetS      float64  `json:"queue_wait_target_s"`
	PerPartnerConcurrency int      `json:"per_partner_concurrency"`
	PartnerMeanServiceS   float64  `json:"partner_mean_service_s"`
}

// Schedule is the retry schedule: one row per attempt ordinal.
type Schedule struct {
	Rows []ScheduleRow `json:"rows"`
	// Truncated: the attempt budget is longer than the rows listed.
	Truncated bool `json:"truncated"`
	// QueueWaitS is the queue wait in the worst path (the p99 wait; 0 when
	// the pool is unstable). QueueWaitMeanS is the mean wait in the typical
	// path.
	QueueWaitS     float64 `json:"queue_wait_s"`
	QueueWaitMeanS float64 `json:"queue_wait_mean_s"`
	// FitsWindow: every attempt's worst-path start is inside the delivery
	// window; null when there is no window.
	FitsWindow *bool `json:"fits_window"`
	// FirstOutsideWindow is the first attempt whose worst-path start falls
	// outside the window; 0 when none does (up to MaxPlanAttempts).
	FirstOutsideWindow int `json:"first_attempt_outside_window"`
	// LastAttemptTypicalEndS is the typical time from first-seen to the end
	// of the last attempt; null when attempts are unlimited.
	LastAttemptTypicalEndS *float64 `json:"last_attempt_typical_end_s"`
	// LastAttemptWorstStartS is the worst-path start of the last attempt;
	// null when attempts are unlimited.
	LastAttemptWorstStartS *float64 `json:"last_attempt_worst_start_s"`
}

// ScheduleRow is attempt ordinal k: the delay before it (after the
// (k−1)-th failure) and the time since first-seen at its start.
type ScheduleRow struct {
	Attempt       int     `json:"attempt"`
	BaseDelayS    float64 `json:"base_delay_s"` // min(cap, base × multiplier^(k−2)); 0 for k = 1
	DelayMinS     float64 `json:"delay_min_s"`
	DelayTypicalS float64 `json:"delay_typical_s"`
	DelayMaxS     float64 `json:"delay_max_s"`
	// Elapsed*S is the time since first-seen when the attempt starts.
	ElapsedTypicalS float64 `json:"elapsed_typical_s"`
	ElapsedWorstS   float64 `json:"elapsed_worst_s"`
	WithinWindow    *bool   `json:"within_window,omitempty"` // null: no window
}

// Amplification is attempts per delivery.
type Amplification struct {
	UpperBound  *float64 `json:"upper_bound"` // max_attempts; null: unlimited
	FailureProb float64  `json:"failure_prob"`
	Expected    *float64 `json:"expected"` // at FailureProb; null: unbounded
	// WithOutages is the drill's expected attempts per delivery with the
	// attempts its outages cost (drain model); null without outages.
	WithOutages *float64           `json:"with_outages"`
	Table       []AmplificationRow `json:"table"`
}

// AmplificationRow is the expected attempts per delivery at one failure
// probability.
type AmplificationRow struct {
	FailureProb float64  `json:"failure_prob"`
	Expected    *float64 `json:"expected"` // null: unbounded
	Drill       bool     `json:"drill"`    // the drill's own probability
}

// Load is the offered load with retries against the pool's capacity.
type Load struct {
	ArrivalPerS          float64  `json:"arrival_per_s"`
	EffectiveArrivalPerS *float64 `json:"effective_arrival_per_s"` // attempts/s; null: unbounded
	MeanServiceS         float64  `json:"mean_service_s"`
	CapacityPerS         float64  `json:"capacity_per_s"` // workers ÷ mean service
	Utilisation          *float64 `json:"utilisation"`    // null: unbounded
	Stable               bool     `json:"stable"`
}

// Pool is the worker pool as an M/M/c queue.
type Pool struct {
	Workers int  `json:"workers"`
	Stable  bool `json:"stable"`
	// MMc is the steady state; null when unstable.
	MMc              *MMc    `json:"mmc"`
	QueueWaitTargetS float64 `json:"queue_wait_target_s"`
	// MinWorkers is the smallest worker count whose p99 queue wait meets
	// the target; null when none up to MaxPlanWorkers does.
	MinWorkers *int `json:"min_workers"`
}

// Drain is the drain-time estimate for one outage, from the drain model.
type Drain struct {
	Partner     string  `json:"partner"`
	Kind        string  `json:"kind"`
	StartS      float64 `json:"start_s"`
	OutageS     float64 `json:"outage_s"`
	Share       float64 `json:"share_of_deliveries"`
	Subscribers int     `json:"subscribers"`
	// AffectedArrivalPerS is deliveries/s to the affected partners.
	AffectedArrivalPerS float64 `json:"affected_arrival_per_s"`
	// ExhaustS is the typical time for a delivery to run out of attempts
	// (or window) when every attempt fails; null: never (unlimited
	// attempts, no window).
	ExhaustS *float64 `json:"exhaust_s"`
	// BacklogDeliveries is deliveries to the affected partners still
	// pending when the outage ends (held by the source, queued, waiting
	// out a delay or the breaker, or in flight).
	BacklogDeliveries float64 `json:"backlog_deliveries"`
	// CapacityPerS is attempts/s the affected partners get once they
	// answer as usual.
	CapacityPerS float64 `json:"capacity_per_s"`
	// Attempts is the attempts made to the affected partners from
	// ModelledFromS to ModelledToS.
	Attempts float64 `json:"attempts"`
	// DeadLetters is deliveries to the affected partners dead-lettered in
	// that span, by reason.
	DeadLetters map[string]float64 `json:"dead_letters"`
	// BreakerOpenS is how long their breaker was open; Probes is the
	// half-open calls made.
	BreakerOpenS float64 `json:"breaker_open_s"`
	Probes       float64 `json:"probes"`
	// SourceHeldMax is the most affected deliveries the source held back
	// at once because the queue was full.
	SourceHeldMax float64 `json:"source_held_max"`
	ModelledFromS float64 `json:"modelled_from_s"`
	ModelledToS   float64 `json:"modelled_to_s"`
	// DrainS is the time from the outage's end until every delivery to the
	// affected partners created before it is delivered or dead-lettered;
	// null: not before the drill ends.
	DrainS *float64 `json:"drain_s"`
	Drains bool     `json:"drains"`
	// extraAttempts is Attempts beyond what the same deliveries would make
	// in steady state, for the amplification with outages.
	extraAttempts, noAttempt float64
}

// planParams is PlanInput validated, defaulted and in seconds.
type planParams struct {
	in                                PlanInput
	meanS, timeoutS, worstAttemptS    float64
	baseS, capS, mult, ratio, windowS float64
	targetS, partnerS                 float64
	capped, hasWindow                 bool
	bo                                model.Backoff
}

func finiteNonNeg(v float64) bool { return v >= 0 && !math.IsInf(v, 0) } // NaN fails v >= 0

func validatePlanInput(in PlanInput) (planParams, error) {
	var errs []error
	bad := func(key, format string, a ...any) {
		errs = append(errs, fmt.Errorf("%s: "+format, append([]any{key}, a...)...))
	}
	validatePoolInput(&in, bad)
	validatePolicyInput(&in, bad)
	validateLoadInput(&in, bad)
	validateDrainInput(&in, bad)
	if len(errs) > 0 {
		return planParams{}, errors.Join(errs...)
	}
	return newPlanParams(in), nil
}

// nonNegative reports a negative duration.
func nonNegative(bad func(key, format string, a ...any), key string, d time.Duration) {
	if d < 0 {
		bad(key, "%v is negative", d)
	}
}

// validatePoolInput checks the load and the worker pool.
func validatePoolInput(in *PlanInput, bad func(key, format string, a ...any)) {
	if !finiteNonNeg(in.ArrivalPerS) {
		bad("arrival_per_s", "%v, want a finite number ≥ 0", in.ArrivalPerS)
	}
	if in.Workers < 1 || in.Workers > MaxErlangServers {
		bad("workers", "%d, want 1..%d", in.Workers, MaxErlangServers)
	}
	if in.MeanService <= 0 {
		bad("mean_service", "%v, want > 0", in.MeanService)
	}
	nonNegative(bad, "attempt_timeout", in.AttemptTimeout)
}

// validateLoadInput checks the partners' figures and the outages' sizes.
func validateLoadInput(in *PlanInput, bad func(key, format string, a ...any)) {
	if !(in.FailureProb >= 0 && in.FailureProb <= 1) {
		bad("failure_prob", "%v, want a number in [0, 1]", in.FailureProb)
	}
	nonNegative(bad, "queue_wait_target", in.QueueWaitTarget)
	if in.PerPartnerConcurrency < 0 {
		bad("per_partner_concurrency", "%d is negative", in.PerPartnerConcurrency)
	}
	nonNegative(bad, "partner_mean_service", in.PartnerMeanService)
	for i, o := range in.Outages {
		key := fmt.Sprintf("outages[%d]", i)
		if o.Length <= 0 {
			bad(key+".length", "%v, want > 0", o.Length)
		}
		if !(o.ShareOfDeliveries >= 0 && o.ShareOfDeliveries <= 1) {
			bad(key+".share_of_deliveries", "%v, want a number in [0, 1]", o.ShareOfDeliveries)
		}
		if o.Subscribers < 0 {
			bad(key+".subscribers", "%d is negative", o.Subscribers)
		}
	}
}

// validatePolicyInput checks the retry schedule's settings.
func validatePolicyInput(in *PlanInput, bad func(key, format string, a ...any)) {
	if in.MaxAttempts < 0 || in.MaxAttempts > MaxPlanAttempts {
		bad("max_attempts", "%d, want 0 (unlimited) or 1..%d", in.MaxAttempts, MaxPlanAttempts)
	}
	nonNegative(bad, "base", in.Base)
	nonNegative(bad, "cap", in.Cap)
	if in.Multiplier != 0 && !(in.Multiplier >= 1 && !math.IsInf(in.Multiplier, 0)) {
		bad("multiplier", "%v, want a finite number ≥ 1 (0 for the default %g)", in.Multiplier, DefaultPlanMultiplier)
	}
	if _, err := model.ParseJitter(in.Jitter); err != nil {
		bad("jitter", "%q, want one of %v", in.Jitter, model.JitterNames())
	}
	if !(in.JitterRatio >= 0 && in.JitterRatio <= 1) {
		bad("jitter_ratio", "%v, want a number in [0, 1]", in.JitterRatio)
	}
	nonNegative(bad, "delivery_window", in.DeliveryWindow)
}

// newPlanParams derives the plan's working figures from a valid input.
func newPlanParams(in PlanInput) planParams {
	jitter, _ := model.ParseJitter(in.Jitter) // validated
	p := planParams{in: in}
	p.meanS = in.MeanService.Seconds()
	p.timeoutS = in.AttemptTimeout.Seconds()
	if p.timeoutS > 0 && p.meanS > p.timeoutS {
		p.meanS = p.timeoutS // an attempt never outlasts its timeout
	}
	p.worstAttemptS = p.timeoutS
	if p.timeoutS == 0 {
		p.worstAttemptS = p.meanS
	}
	p.baseS = in.Base.Seconds()
	p.capped = in.Cap > 0
	p.capS = maxDelayS
	if p.capped {
		p.capS = in.Cap.Seconds()
	}
	p.mult = in.Multiplier
	if p.mult == 0 {
		p.mult = DefaultPlanMultiplier
	}
	p.ratio = in.JitterRatio
	if p.ratio == 0 {
		p.ratio = DefaultPlanJitterRatio
	}
	// The schedule's delays are the policy core's own: model.Backoff and
	// the jitter kind's declared range.
	p.bo = model.Backoff{Base: in.Base, Cap: in.Cap, Multiplier: p.mult, Jitter: jitter, JitterRatio: p.ratio}
	p.hasWindow = in.DeliveryWindow > 0
	p.windowS = in.DeliveryWindow.Seconds()
	p.targetS = in.QueueWaitTarget.Seconds()
	if in.QueueWaitTarget == 0 {
		p.targetS = DefaultQueueWaitTarget.Seconds()
	}
	p.partnerS = in.PartnerMeanService.Seconds()
	if p.partnerS == 0 {
		p.partnerS = p.meanS
	}
	if p.timeoutS > 0 && p.partnerS > p.timeoutS {
		p.partnerS = p.timeoutS
	}
	return p
}

// ExpectedAttempts is the mean number of attempts a delivery makes when
// each attempt fails independently with probability p and at most k
// attempts are made (k = 0: unlimited): (1 − p^k)/(1 − p), k at p = 1;
// 1/(1 − p) when unlimited. It returns false when the mean is unbounded
// (unlimited attempts at p = 1) or the arguments are out of range.
func ExpectedAttempts(p float64, k int) (float64, bool) {
	if !(p >= 0 && p <= 1) || k < 0 {
		return 0, false
	}
	if k == 0 {
		if p == 1 {
			return 0, false
		}
		return 1 / (1 - p), true
	}
	if p == 1 {
		return float64(k), true
	}
	return (1 - math.Pow(p, float64(k))) / (1 - p), true
}

// delayStep is one delay of the schedule, in seconds; saturated: every
// later delay has the same range (the delay reached the cap).
type delayStep struct {
	d, lo, typ, hi float64
	saturated      bool
}

// scheduler walks the schedule attempt by attempt, so that long or
// unlimited budgets need no table of their own.
type scheduler struct {
	p    *planParams
	k    int
	prev model.DelayRange // the range of the previous delay (decorrelated)
}

// next returns the delay before attempt s.k+1 and advances to it: the
// capped delay and the jitter kind's range after the (k−1)-th failure.
func (s *scheduler) next() delayStep {
	s.k++
	if s.k == 1 {
		return delayStep{}
	}
	n := s.k - 1
	bo := &s.p.bo
	d := bo.Capped(n)
	r := bo.DelayRange(n, s.prev)
	capD := bo.Cap
	if capD <= 0 {
		capD = model.MaxDuration
	}
	// A jitter that follows the previous delay (decorrelated) does not
	// follow d; its range stops growing once both its typical and largest
	// values reach the cap.
	saturated := d >= capD
	if bo.Jitter.Info().FollowsPrevious {
		saturated = r.Typical >= capD && r.Max >= capD
	}
	s.prev = r
	return delayStep{d: d.Seconds(), lo: r.Min.Seconds(), typ: r.Typical.Seconds(), hi: r.Max.Seconds(), saturated: saturated}
}

// MakePlan builds the analytic capacity plan. It refuses out-of-range input
// with an error naming every bad field.
func MakePlan(in PlanInput) (*Plan, error) {
	p, err := validatePlanInput(in)
	if err != nil {
		return nil, err
	}
	plan := &Plan{Drill: in.Drill, Drains: []Drain{}}
	plan.Inputs = PlanInputEcho{
		ArrivalPerS: in.ArrivalPerS, Workers: in.Workers, MeanServiceS: p.meanS,
		AttemptTimeoutS: p.timeoutS, MaxAttempts: in.MaxAttempts, BaseS: p.baseS,
		Multiplier: p.mult, Jitter: in.Jitter, JitterRatio: p.ratio,
		FailureProb: in.FailureProb, QueueWaitTargetS: p.targetS,
		PerPartnerConcurrency: in.PerPartnerConcurrency, PartnerMeanServiceS: p.partnerS,
	}
	if p.capped {
		plan.Inputs.CapS = ptr(p.capS)
	}
	if p.hasWindow {
		plan.Inputs.DeliveryWindowS = ptr(p.windowS)
	}

	plan.makeAmplification(&p)
	plan.makeLoadAndPool(&p)
	plan.makeSchedule(&p)
	plan.makeDrains(&p)
	plan.makeAssumptions(&p)
	return plan, nil
}

func ptr[T any](v T) *T { return &v }

func (plan *Plan) makeAmplification(p *planParams) {
	a := &plan.Amplification
	a.FailureProb = p.in.FailureProb
	if p.in.MaxAttempts > 0 {
		a.UpperBound = ptr(float64(p.in.MaxAttempts))
	}
	if e, ok := ExpectedAttempts(p.in.FailureProb, p.in.MaxAttempts); ok {
		a.Expected = ptr(e)
	}
	a.Table = []AmplificationRow{}
	drillListed := false
	for _, prob := range []float64{0, 0.1, 0.5, 1} {
		row := AmplificationRow{FailureProb: prob, Drill: prob == p.in.FailureProb}
		drillListed = drillListed || row.Drill
		if e, ok := ExpectedAttempts(prob, p.in.MaxAttempts); ok {
			row.Expected = ptr(e)
		}
		a.Table = append(a.Table, row)
	}
	if !drillListed {
		a.Table = append(a.Table, AmplificationRow{FailureProb: p.in.FailureProb, Expected: a.Expected, Drill: true})
	}
}

func (plan *Plan) makeLoadAndPool(p *planParams) {
	l := &plan.Load
	l.ArrivalPerS = p.in.ArrivalPerS
	l.MeanServiceS = p.meanS
	l.CapacityPerS = float64(p.in.Workers) / p.meanS
	pool := &plan.Pool
	pool.Workers = p.in.Workers
	pool.QueueWaitTargetS = p.targetS
	amp := plan.Amplification.Expected
	if amp == nil {
		return // unbounded attempts: unstable, no steady state
	}
	lambdaEff := p.in.ArrivalPerS * *amp
	l.EffectiveArrivalPerS = ptr(lambdaEff)
	l.Utilisation = ptr(lambdaEff / l.CapacityPerS)
	l.Stable = *l.Utilisation < 1
	mu := 1 / p.meanS
	if m, err := SolveMMc(p.in.Workers, lambdaEff, mu); err == nil {
		pool.Stable = true
		pool.MMc = &m
	}
	if c, ok := MinWorkers(lambdaEff, mu, p.targetS, MaxPlanWorkers); ok {
		pool.MinWorkers = ptr(c)
	}
}

func (plan *Plan) makeSchedule(p *planParams) {
	s := &plan.Schedule
	if plan.Pool.MMc != nil {
		s.QueueWaitS = plan.Pool.MMc.WqP99
		s.QueueWaitMeanS = plan.Pool.MMc.Wq
	}
	limit := p.in.MaxAttempts
	if limit == 0 {
		limit = MaxPlanAttempts
	}
	rows := min(limit, MaxScheduleRows)
	s.Truncated = p.in.MaxAttempts == 0 || p.in.MaxAttempts > MaxScheduleRows
	s.Rows = make([]ScheduleRow, 0, rows)
	if p.hasWindow {
		s.FitsWindow = ptr(true)
	}
	sch := scheduler{p: p}
	var typ, worst float64
	for k := 1; k <= limit; k++ {
		st := sch.next()
		// Attempt k starts after k queue waits (typical) or one p99 wait
		// (worst), k−1 earlier attempts and the delays before it.
		if k == 1 {
			typ, worst = s.QueueWaitMeanS, s.QueueWaitS
		} else {
			typ += s.QueueWaitMeanS + p.meanS + st.typ
			worst += p.worstAttemptS + st.hi
		}
		var within *bool
		if p.hasWindow {
			within = ptr(worst <= p.windowS)
			if !*within && s.FirstOutsideWindow == 0 {
				s.FirstOutsideWindow = k
				s.FitsWindow = ptr(false)
			}
		}
		if k <= rows {
			s.Rows = append(s.Rows, ScheduleRow{
				Attempt: k, BaseDelayS: st.d, DelayMinS: st.lo, DelayTypicalS: st.typ, DelayMaxS: st.hi,
				ElapsedTypicalS: typ, ElapsedWorstS: worst, WithinWindow: within,
			})
		}
		if k >= rows && (!p.hasWindow || s.FirstOutsideWindow != 0) && p.in.MaxAttempts == 0 {
			break // nothing more to learn from an unlimited budget
		}
	}
	if p.in.MaxAttempts > 0 {
		s.LastAttemptTypicalEndS = ptr(typ + p.meanS)
		s.LastAttemptWorstStartS = ptr(worst)
	} else if p.hasWindow {
		// Unlimited attempts: the window is what ends retrying.
		s.FitsWindow = ptr(false)
	}
}

func (plan *Plan) makeAssumptions(p *planParams) {
	add := func(format string, a ...any) { plan.Assumptions = append(plan.Assumptions, fmt.Sprintf(format, a...)) }
	add("Failures are independent from attempt to attempt with probability %g (steady state, transient errors); permanent errors and the retry budget are not modelled, and the breaker only in the outage drain model.", p.in.FailureProb)
	add("The worker pool is an M/M/c queue: attempts (first tries and retries) arrive as a Poisson stream and service times are exponential with the mean attempt duration.")
	if p.timeoutS > 0 && p.in.MeanService.Seconds() > p.timeoutS {
		add("The mean service time is capped at the attempt timeout (%s).", fmtSeconds(p.timeoutS))
	}
	if note := p.bo.PlanNote(); note != "" {
		add("%s", note)
	}
	if !p.capped {
		add("There is no backoff cap: delays grow without bound (saturating at about 292 years).")
	}
	if plan.Pool.MMc != nil {
		add("Elapsed times: the typical path waits the mean queue wait before every attempt and takes the mean service time per attempt; the worst path waits the p99 queue wait once and takes the full attempt timeout per failed attempt with the largest delays.")
	} else {
		add("The pool is unstable, so the queue wait grows without bound; the schedule's elapsed times leave it out.")
	}
	if p.timeoutS == 0 {
		add("There is no attempt timeout: the worst path uses the mean service time per attempt.")
	}
	if p.hasWindow {
		add("An attempt is inside the delivery window when its worst-path start is no later than the window.")
	}
	if p.in.MaxAttempts == 0 {
		add("Attempts are unlimited: the schedule lists the first %d; the window verdict looks up to attempt %d.", MaxScheduleRows, MaxPlanAttempts)
	} else if p.in.MaxAttempts > MaxScheduleRows {
		add("The schedule lists the first %d of %d attempts.", MaxScheduleRows, p.in.MaxAttempts)
	}
	if len(p.in.Outages) > 0 {
		add("Each outage is followed by a deterministic fluid model of the dispatcher, one outage at a time, from %gs before it until its backlog drains or the drill ends: deliveries to the affected subscribers move as masses between held by the source, ready, in flight, waiting out a delay or the breaker, delivered and dead-lettered; the other subscribers are one steady stream of attempts competing for the workers.", drainWarmupS)
		add("During an outage every call to the affected subscribers fails after the outage's own answer time (fast for unavailable, reset, throttle and a flap's down half; the attempt timeout for timeout), except slow, which multiplies the latency behind the partner's own capacity; a throttle's Retry-After lengthens the delay unless Retry-After is ignored. Each attempt takes the mean latency of its cohort.")
		add("Delays are spread uniformly over the jitter's range. Max-attempts and circuit-open dead letters follow the policy; a delivery is window-expired when its typical path's next attempt starts after the window.")
		add("The breaker of each affected subscriber opens, holds or dead-letters, admits its probes after the cooldown and closes on their success, as the policy core does; steady transient errors never trip a consecutive rule.")
		add("An affected subscriber whose attempt ends rejoins the round robin behind the subscribers an event's fan-out made due; the wait is that of an M/D/1 queue of fan-outs, bounded by one pass over the other subscribers.")
		add("Drain time is the time from the outage's end until less than one delivery to the affected subscribers created before it is still pending.")
	}
}

// CheckTolerancePct is how far (in percent of the simulated value) an
// analytic figure may be from the simulated one: beyond it `plan --check`
// gives a likely reason and `plan --check --strict` fails.
const CheckTolerancePct = 25.0

// CheckMinDiffS is the smallest difference, in seconds, between time
// figures worth explaining: a p99 wait of 0.01s against 0.05s is 400% off
// and means nothing.
const CheckMinDiffS = 1.0

// Figure is one analytic figure that a simulation also measures. Name is
// the simulation summary's key (summary.json) where there is one.
type Figure struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	Unit  string  `json:"unit"` // "" for ratios, "s" for seconds
}

// CheckRow compares one analytic figure with its simulated counterpart.
type CheckRow struct {
	Name      string  `json:"name"`
	Unit      string  `json:"unit"`
	Analytic  float64 `json:"analytic"`
	Simulated float64 `json:"simulated"`
	// DiffPct is 100 × (simulated − analytic) ÷ |analytic|; ±100 when the
	// analytic value is 0 and the simulated one is not.
	DiffPct float64 `json:"diff_pct"`
	// Ratio is analytic ÷ simulated; null when the simulated value is 0.
	Ratio *float64 `json:"ratio"`
	// Off: the analytic figure is more than CheckTolerancePct of the
	// simulated one away from it (and, for times, at least CheckMinDiffS),
	// or the simulation has no such figure.
	Off bool `json:"off"`
	// Missing: the simulation summary has no such figure.
	Missing bool `json:"missing,omitempty"`
	// Why is a likely reason when the two differ by more than
	// CheckTolerancePct; empty when they agree.
	Why string `json:"why,omitempty"`
}

// Figure names shared with the simulation summary.
const (
	FigureAmplification  = "amplification"
	FigureOldestReadyAge = "oldest_ready_age_max_s"
	FigureDrainTime      = "drain_time_s"
)

// Figures lists the plan's figures that a simulation of the same drill
// measures: expected amplification, the p99 queue wait (against the
// largest oldest-ready age) and the largest outage drain time. Figures the
// plan cannot state (unbounded, unstable, not drained, no outage) are left
// out.
func (p *Plan) Figures() []Figure {
	figs := []Figure{}
	if a := p.Amplification.WithOutages; a != nil {
		figs = append(figs, Figure{Name: FigureAmplification, Value: *a})
	} else if a := p.Amplification.Expected; a != nil {
		figs = append(figs, Figure{Name: FigureAmplification, Value: *a})
	}
	if p.Pool.MMc != nil {
		figs = append(figs, Figure{Name: FigureOldestReadyAge, Value: p.Pool.MMc.WqP99, Unit: "s"})
	}
	if len(p.Drains) > 0 {
		worst, ok := 0.0, true
		for _, d := range p.Drains {
			if d.DrainS == nil {
				ok = false
				break
			}
			worst = math.Max(worst, *d.DrainS)
		}
		if ok {
			figs = append(figs, Figure{Name: FigureDrainTime, Value: worst, Unit: "s"})
		}
	}
	return figs
}

// CheckRows compares the plan's figures with a simulation's, keyed by
// summary name.
func (p *Plan) CheckRows(sim map[string]float64) []CheckRow {
	return CompareCheck(p.Figures(), sim)
}

// CompareCheck pairs each analytic figure with the simulated value of the
// same name and explains differences beyond CheckTolerancePct.
func CompareCheck(figs []Figure, sim map[string]float64) []CheckRow {
	rows := make([]CheckRow, 0, len(figs))
	for _, f := range figs {
		row := CheckRow{Name: f.Name, Unit: f.Unit, Analytic: f.Value}
		s, ok := sim[f.Name]
		if !ok || math.IsNaN(s) || math.IsInf(s, 0) {
			row.Missing, row.Off = true, true
			row.Why = "the simulation reports no finite value for this figure"
			rows = append(rows, row)
			continue
		}
		row.Simulated = s
		diff := s - f.Value
		switch {
		case f.Value != 0:
			row.DiffPct = 100 * diff / math.Abs(f.Value)
		case diff > 0:
			row.DiffPct = 100
		case diff < 0:
			row.DiffPct = -100
		}
		if s != 0 {
			row.Ratio = ptr(f.Value / s)
		}
		row.Off = math.Abs(diff) > CheckTolerancePct/100*math.Abs(s) && (f.Unit != "s" || math.Abs(diff) >= CheckMinDiffS)
		if row.Off {
			row.Why = checkReason(f.Name, diff > 0)
		}
		rows = append(rows, row)
	}
	return rows
}

// checkReason is the likely reason a simulated figure is above (higher) or
// below the analytic one.
func checkReason(name string, higher bool) string {
	switch {
	case name == FigureAmplification && higher:
		return "amplification: the analytic figure assumes independent failures; an outage makes failures correlated (every attempt in it fails), so deliveries use more attempts"
	case name == FigureAmplification:
		return "amplification: the breaker, retry budget, delivery window and permanent errors stop deliveries before max_attempts, which the analytic figure ignores"
	case name == FigureOldestReadyAge && higher:
		return "oldest ready age: the simulation reports the largest age over the drill, not a p99, and outage backlogs and retry bursts arrive in clumps, not as a Poisson stream"
	case name == FigureOldestReadyAge:
		return "oldest ready age: M/M/c assumes exponential service times and Poisson arrivals; steadier latency or per-partner limits holding work back keep the ready queue shorter"
	case name == FigureDrainTime && higher:
		return "drain time: per-partner concurrency, breaker cooldowns and retries that wait out long backoff delays after the outage slow the drain beyond the analytic estimate"
	case name == FigureDrainTime:
		return "drain time: the breaker, the retry budget or the delivery window dead-lettered part of the backlog, or retries succeeded earlier than the worst-case backoff tail"
	case higher:
		return name + ": the simulation is higher than the analytic model predicts"
	}
	return name + ": the simulation is lower than the analytic model predicts"
}

// fmtSeconds renders seconds for people: "250ms", "7.82s", "2m30s",
// "1h05m", "3.5d".
func fmtSeconds(s float64) string {
	switch {
	case s == 0:
		return "0s"
	case s < 0:
		return "-" + fmtSeconds(-s)
	case s < 1e-6:
		return "<1µs"
	case s < 0.9995e-3:
		return fmt.Sprintf("%.3gµs", s*1e6)
	case s < 0.9995:
		return fmt.Sprintf("%.3gms", s*1000)
	case s < 60:
		return fmt.Sprintf("%.3gs", s)
	case s < 3600:
		m := math.Floor(s / 60)
		return fmt.Sprintf("%.0fm%02.0fs", m, math.Floor(s-60*m))
	case s < 86400:
		h := math.Floor(s / 3600)
		return fmt.Sprintf("%.0fh%02.0fm", h, math.Floor((s-3600*h)/60))
	}
	return fmt.Sprintf("%.4gd", s/86400)
}

// fmtNum renders a plain number with about four significant digits and no
// exponent below a million.
func fmtNum(v float64) string {
	if a := math.Abs(v); a >= 1000 && a < 1e6 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.4g", v)
}

func fmtOpt(v *float64, f func(float64) string, none string) string {
	if v == nil {
		return none
	}
	return f(*v)
}

// mdWriter keeps the first write error so the Markdown code reads straight.
type mdWriter struct {
	w   io.Writer
	err error
}

func (m *mdWriter) f(format string, a ...any) {
	if m.err == nil {
		_, m.err = fmt.Fprintf(m.w, format, a...)
	}
}

// WriteMarkdown writes the plan as a Markdown document with one section
// per part and the assumptions last.
func (p *Plan) WriteMarkdown(w io.Writer) error {
	m := &mdWriter{w: w}
	in := p.Inputs
	m.f("# Capacity plan: %s\n\n", p.Drill)

	m.f("## Inputs\n\n| input | value |\n| --- | --- |\n")
	m.f("| deliveries/s (events/s × fan-out) | %s |\n", fmtNum(in.ArrivalPerS))
	m.f("| workers | %d |\n", in.Workers)
	m.f("| mean attempt duration | %s |\n", fmtSeconds(in.MeanServiceS))
	m.f("| attempt timeout | %s |\n", noneIfZero(in.AttemptTimeoutS))
	if in.MaxAttempts == 0 {
		m.f("| max attempts | unlimited |\n")
	} else {
		m.f("| max attempts | %d |\n", in.MaxAttempts)
	}
	m.f("| backoff | base %s, cap %s, multiplier %g, jitter %s", fmtSeconds(in.BaseS), fmtOpt(in.CapS, fmtSeconds, "none"), in.Multiplier, in.Jitter)
	if j, err := model.ParseJitter(in.Jitter); err == nil && j.Info().UsesRatio {
		m.f(" (ratio %g)", in.JitterRatio)
	}
	m.f(" |\n")
	m.f("| delivery window | %s |\n", fmtOpt(in.DeliveryWindowS, fmtSeconds, "none"))
	m.f("| per-attempt failure probability | %g |\n", in.FailureProb)
	m.f("| per-partner concurrency | %s |\n", limitOrNone(in.PerPartnerConcurrency))
	m.f("| p99 queue wait target | %s |\n\n", fmtSeconds(in.QueueWaitTargetS))

	s := p.Schedule
	m.f("## Retry schedule\n\n")
	m.f("Delay before attempt k is jittered from d = min(cap, base × multiplier^(k−2)). Elapsed is the time since first-seen when the attempt starts; the worst path adds a p99 queue wait of %s, a full attempt timeout per failed attempt and the largest delays.", fmtSeconds(s.QueueWaitS))
	if s.Truncated {
		m.f(" Only the first %d attempts are listed.", len(s.Rows))
	}
	m.f("\n\n| attempt | d | delay min | delay typical | delay max | elapsed typical | elapsed worst | in window |\n")
	m.f("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | :---: |\n")
	for _, r := range s.Rows {
		within := "–"
		if r.WithinWindow != nil {
			within = map[bool]string{true: "yes", false: "**no**"}[*r.WithinWindow]
		}
		if r.Attempt == 1 {
			m.f("| 1 | – | – | – | – | %s | %s | %s |\n", fmtSeconds(r.ElapsedTypicalS), fmtSeconds(r.ElapsedWorstS), within)
			continue
		}
		m.f("| %d | %s | %s | %s | %s | %s | %s | %s |\n", r.Attempt, fmtSeconds(r.BaseDelayS),
			fmtSeconds(r.DelayMinS), fmtSeconds(r.DelayTypicalS), fmtSeconds(r.DelayMaxS),
			fmtSeconds(r.ElapsedTypicalS), fmtSeconds(r.ElapsedWorstS), within)
	}
	m.f("\n**Window verdict:** %s\n\n", p.windowVerdict())

	a := p.Amplification
	m.f("## Retry amplification\n\n")
	m.f("Upper bound: %s attempts per delivery. With independent failures at probability p and k = max attempts, the expected attempts are (1 − p^k) ÷ (1 − p)", fmtOpt(a.UpperBound, fmtNum, "unbounded"))
	if in.MaxAttempts == 0 {
		m.f(", here 1 ÷ (1 − p) since attempts are unlimited")
	}
	m.f(".\n\n| failure probability p | expected attempts |\n| ---: | ---: |\n")
	for _, r := range a.Table {
		mark := ""
		if r.Drill {
			mark = " (this drill)"
		}
		m.f("| %g%s | %s |\n", r.FailureProb, mark, fmtOpt(r.Expected, fmtNum, "unbounded"))
	}
	m.f("\n")

	l := p.Load
	m.f("## Offered load\n\n| figure | value |\n| --- | ---: |\n")
	m.f("| deliveries/s λ | %s |\n", fmtNum(l.ArrivalPerS))
	m.f("| attempts/s with retries λ_eff = λ × expected attempts | %s |\n", fmtOpt(l.EffectiveArrivalPerS, fmtNum, "unbounded"))
	m.f("| capacity, attempts/s = workers ÷ mean attempt duration | %s |\n", fmtNum(l.CapacityPerS))
	m.f("| utilisation ρ = λ_eff ÷ capacity | %s |\n\n", fmtOpt(l.Utilisation, fmtNum, "unbounded"))
	if l.Stable {
		m.f("**Stable:** ρ < 1.\n\n")
	} else {
		m.f("**Unstable:** the attempts offered reach or exceed the pool's capacity; the queue grows without bound.\n\n")
	}

	pool := p.Pool
	m.f("## Worker pool (M/M/c, Erlang C)\n\n")
	if mm := pool.MMc; mm != nil {
		m.f("| workers c | ρ | P(wait) | Lq | Wq | W | L | Wq p99 |\n| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
		m.f("| %d | %s | %s | %s | %s | %s | %s | %s |\n\n", mm.C, fmtNum(mm.Rho), reports.FormatProbability(mm.PWait), fmtNum(mm.Lq),
			fmtSeconds(mm.Wq), fmtSeconds(mm.W), fmtNum(mm.L), fmtSeconds(mm.WqP99))
	} else {
		m.f("The pool of %d workers is unstable at this load: no steady-state queue wait.\n\n", pool.Workers)
	}
	if pool.MinWorkers != nil {
		m.f("Smallest worker count with a p99 queue wait ≤ %s: **%d**.\n\n", fmtSeconds(pool.QueueWaitTargetS), *pool.MinWorkers)
	} else {
		m.f("No worker count up to %d meets a p99 queue wait ≤ %s at this load.\n\n", MaxPlanWorkers, fmtSeconds(pool.QueueWaitTargetS))
	}

	m.f("## Outage drain\n\n")
	if len(p.Drains) == 0 {
		m.f("The drill scripts no outage.\n\n")
	} else {
		m.f("| partner | kind | outage | deliveries/s | attempts | dead letters | breaker open | backlog at end | capacity after, attempts/s | drain time |\n")
		m.f("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
		for _, d := range p.Drains {
			m.f("| %s | %s | %s from %s | %s | %s | %s | %s | %s | %s | %s |\n", d.Partner, d.Kind, fmtSeconds(d.OutageS), fmtSeconds(d.StartS),
				fmtNum(d.AffectedArrivalPerS), fmtNum(d.Attempts), deadLetterText(d.DeadLetters), fmtSeconds(d.BreakerOpenS),
				fmtNum(d.BacklogDeliveries), fmtNum(d.CapacityPerS), fmtOpt(d.DrainS, fmtSeconds, "**does not drain**"))
		}
		m.f("\n")
	}

	m.f("## Assumptions\n\n")
	for _, s := range p.Assumptions {
		m.f("- %s\n", s)
	}
	return m.err
}

func noneIfZero(s float64) string {
	if s == 0 {
		return "none"
	}
	return fmtSeconds(s)
}

func limitOrNone(n int) string {
	if n == 0 {
		return "no limit"
	}
	return fmt.Sprint(n)
}

// windowVerdict says in a sentence whether the attempts fit the window.
func (p *Plan) windowVerdict() string {
	s := p.Schedule
	switch {
	case s.FitsWindow == nil:
		return "no delivery window: every attempt is allowed."
	case *s.FitsWindow && s.LastAttemptWorstStartS != nil:
		return fmt.Sprintf("all %d attempts start inside the delivery window of %s on the worst path (the last at %s).",
			p.Inputs.MaxAttempts, fmtSeconds(*p.Inputs.DeliveryWindowS), fmtSeconds(*s.LastAttemptWorstStartS))
	case s.FirstOutsideWindow > 0:
		return fmt.Sprintf("attempt %d is the first whose worst-path start falls outside the delivery window of %s; on that path it and later attempts are dead-lettered as window-expired.",
			s.FirstOutsideWindow, fmtSeconds(*p.Inputs.DeliveryWindowS))
	}
	return fmt.Sprintf("attempts are unlimited and none up to attempt %d leaves the delivery window of %s on the worst path.",
		MaxPlanAttempts, fmtSeconds(*p.Inputs.DeliveryWindowS))
}
