package drills

import (
	"fmt"
	"math"
	"strconv"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/stormdrill/stormdrill/model"
	"github.com/stormdrill/stormdrill/model/dispatch"
	"github.com/stormdrill/stormdrill/reports"
)

// Latency histograms: microseconds from 1µs to 100 days, 3 significant
// figures. Memory is fixed per histogram, whatever the drill's length.
const (
	histMaxMicros = 100 * 24 * 3600 * 1_000_000
	histSigFigs   = 3
	// MaxOrdinals bounds attempts.by_ordinal; later ordinals share the last.
	MaxOrdinals = 1000
	// MaxCohortColumns bounds the per-cohort columns of the series
	// (amplification and oldest age): the first cohorts of the drill.
	MaxCohortColumns = 8
	// MaxStatusCodes bounds the distinct status codes counted per cohort;
	// further codes count as "other".
	MaxStatusCodes = 32
)

func newHist() *hdrhistogram.Histogram { return hdrhistogram.New(1, histMaxMicros, histSigFigs) }

// newCohortHist is a cohort's latency histogram: 2 significant figures
// (percentiles within 1%), about 37 KiB instead of 272 KiB, since a drill
// may have up to limits.cohorts of them. The healthy-subscriber
// histograms, which the SLO gates read, keep 3.
func newCohortHist() *hdrhistogram.Histogram { return hdrhistogram.New(1, histMaxMicros, 2) }

type cohortRec struct {
	name                                 string
	subscribers                          int
	faulty                               bool
	deliveries, delivered, dlq, attempts int64
	attempted                            int64 // deliveries that made at least one attempt
	hist                                 *hdrhistogram.Histogram
	reasons                              map[string]int64
	codes                                map[string]int64 // attempt outcomes by status code
	oldestMaxS                           float64          // largest age of its oldest waiting delivery
}

// interval counters, reset at each sample.
type intervalRec struct {
	first, retries, succ, transient, timeout, reset, permanent, dlq int64
	dlqBy                                                           [len(model.Reasons)]int64
	// Per cohort column: first attempts and all attempts.
	cohortFirst, cohortAttempts [MaxCohortColumns]int64
}

// recorder turns what happens in a run into the summary and the series.
type recorder struct {
	intervalNs int64
	endNs      int64
	sloNs      int64

	events, created, deliveredN, dlqTotal int64
	attempts, first                       int64
	byOrdinal                             []int64
	duplicates                            int64
	retryAfterIgnored                     int64
	dlq                                   map[model.Reason]int64
	cohorts                               []cohortRec

	healthy, healthyOutage *hdrhistogram.Histogram
	healthyInterval        *hdrhistogram.Histogram // healthy latencies since the last sample
	healthyCreated         int64
	healthyWithin          int64
	healthyPermanent       int64      // healthy deliveries dead-lettered as permanent (bad data)
	outageWindows          [][2]int64 // drill ns

	transitions        []reports.BreakerTransition
	transitionsDropped int64
	breakerCols        []int // subscriber indexes with a column in the series
	breakerColOf       map[int]int
	restarts           []reports.Restart

	iv      intervalRec
	samples []reports.Sample

	peakAttemptsPerS float64
	peakPending      int64
	maxReadyAge      float64
	maxDelayedAge    float64

	// permanentByAttempt[i]: permanent dead letters whose (i+1)-th attempt
	// was rejected; later attempts share the last entry (MaxOrdinals).
	permanentByAttempt []int64

	r *simRun
}

func newRecorder(r *simRun) *recorder {
	d := r.d
	rec := &recorder{
		intervalNs:    int64(d.SampleInterval.D),
		sloNs:         int64(d.SLO.DeliveryLatency.D),
		dlq:           map[model.Reason]int64{},
		healthy:       newHist(),
		healthyOutage: newHist(),
		breakerColOf:  map[int]int{},
		// One more fixed-size histogram, reset at every sample.
		healthyInterval: newHist(),
		r:               r,
	}
	total := int64(d.Duration.D + d.Drain.D)
	if rec.intervalNs <= 0 {
		rec.intervalNs = int64(1e9)
	}
	if total/rec.intervalNs > MaxSamples {
		rec.intervalNs = (total + MaxSamples - 1) / MaxSamples
	}
	for i := range r.specs {
		sp := &r.specs[i]
		rec.cohorts = append(rec.cohorts, cohortRec{name: sp.Name, subscribers: sp.Count, faulty: sp.Faulty(), hist: newCohortHist(), reasons: map[string]int64{}})
		for _, o := range sp.Outages {
			rec.outageWindows = append(rec.outageWindows, [2]int64{int64(o.Start), int64(o.Start + o.For)})
		}
	}
	for i := range r.subs {
		if !r.subs[i].healthy && len(rec.breakerCols) < MaxBreakerColumns && d.BreakerEnabled() {
			rec.breakerColOf[i] = len(rec.breakerCols)
			rec.breakerCols = append(rec.breakerCols, i)
		}
	}
	return rec
}

func (rec *recorder) transitionHook(sub int) func(model.Transition) {
	name := rec.r.subs[sub].name
	return func(tr model.Transition) {
		if len(rec.transitions) >= MaxTransitions {
			rec.transitionsDropped++
			return
		}
		rec.transitions = append(rec.transitions, reports.BreakerTransition{
			Partner: name, AtS: float64(tr.At.UnixNano()-rec.r.epoch0) / 1e9, From: tr.From.String(), To: tr.To.String(),
		})
	}
}

func (rec *recorder) attemptStarted(t int64, it *dispatch.Item) {
	rec.attempts++
	rec.cohorts[it.Cohort].attempts++
	col := int(it.Cohort)
	if col < MaxCohortColumns {
		rec.iv.cohortAttempts[col]++
	}
	ord := it.Attempts
	if ord == 1 {
		rec.cohorts[it.Cohort].attempted++
		rec.first++
		rec.iv.first++
		if col < MaxCohortColumns {
			rec.iv.cohortFirst[col]++
		}
	} else {
		rec.iv.retries++
	}
	i := min(ord, MaxOrdinals) - 1
	for len(rec.byOrdinal) <= i {
		rec.byOrdinal = append(rec.byOrdinal, 0)
	}
	rec.byOrdinal[i]++
}

func (rec *recorder) attemptEnded(t int64, it *dispatch.Item, o model.Outcome, dec model.Decision) {
	if dec.RetryAfterIgnored {
		rec.retryAfterIgnored++
	}
	c := &rec.cohorts[it.Cohort]
	if c.codes == nil {
		c.codes = map[string]int64{}
	}
	key := statusKey(o)
	if _, ok := c.codes[key]; !ok && len(c.codes) >= MaxStatusCodes {
		key = "other"
	}
	c.codes[key]++
	switch {
	case dec.Class == model.ClassSuccess:
		rec.iv.succ++
	case dec.Class == model.ClassPermanent:
		rec.iv.permanent++
	case o.Err == model.ErrTimeout:
		rec.iv.timeout++
	case o.Err == model.ErrReset || o.Err == model.ErrRefused:
		rec.iv.reset++
	default:
		rec.iv.transient++
	}
}

// statusKey names an attempt's outcome for the status-code counts: the
// HTTP status, or the kind of failure when there was no answer.
func statusKey(o model.Outcome) string {
	if o.Status != 0 {
		return strconv.Itoa(o.Status)
	}
	switch o.Err {
	case model.ErrTimeout:
		return "timeout"
	case model.ErrReset, model.ErrRefused:
		return "reset"
	}
	return "no answer"
}

func micros(ns int64) int64 { return max(1, min(ns/1000, histMaxMicros)) }

func (rec *recorder) delivered(t int64, it *dispatch.Item) {
	rec.deliveredN++
	c := &rec.cohorts[it.Cohort]
	c.delivered++
	created := it.FirstSeen - rec.r.epoch0
	lat := t - created
	_ = c.hist.RecordValue(micros(lat))
	if rec.r.subs[it.Partner].healthy {
		_ = rec.healthy.RecordValue(micros(lat))
		_ = rec.healthyInterval.RecordValue(micros(lat))
		if lat <= rec.sloNs {
			rec.healthyWithin++
		}
		for _, w := range rec.outageWindows {
			if created >= w[0] && created < w[1] {
				_ = rec.healthyOutage.RecordValue(micros(lat))
				break
			}
		}
	}
}

func (rec *recorder) deadLettered(t int64, it *dispatch.Item, reason model.Reason) {
	rec.dlqTotal++
	rec.dlq[reason]++
	c := &rec.cohorts[it.Cohort]
	c.dlq++
	c.reasons[string(reason)]++
	rec.iv.dlq++
	if reason == model.ReasonPermanent {
		if rec.r.subs[it.Partner].healthy {
			rec.healthyPermanent++
		}
		i := min(max(it.Attempts, 1), MaxOrdinals) - 1
		for len(rec.permanentByAttempt) <= i {
			rec.permanentByAttempt = append(rec.permanentByAttempt, 0)
		}
		rec.permanentByAttempt[i]++
	}
	for i, rs := range model.Reasons {
		if rs == reason {
			rec.iv.dlqBy[i]++
		}
	}
}

func (rec *recorder) sample(r *simRun, t int64) {
	iv := rec.iv
	rec.iv = intervalRec{}
	sec := float64(rec.intervalNs) / 1e9
	st := r.core.Snapshot(r.wall(t))
	heldDeliveries := r.heldDeliveries()
	s := reports.Sample{
		T:                 float64(t) / 1e9,
		FirstAttemptsPerS: float64(iv.first) / sec,
		RetriesPerS:       float64(iv.retries) / sec,
		SuccessesPerS:     float64(iv.succ) / sec,
		TransientPerS:     float64(iv.transient) / sec,
		TimeoutPerS:       float64(iv.timeout) / sec,
		ResetPerS:         float64(iv.reset) / sec,
		PermanentPerS:     float64(iv.permanent) / sec,
		Ready:             float64(st.Ready),
		Delayed:           float64(st.Delayed),
		InFlight:          float64(st.InFlight),
		OldestReadyAgeS:   st.OldestReadyAge.Seconds(),
		OldestDelayedAgeS: st.OldestDelayedAge.Seconds(),
		DLQPerS:           float64(iv.dlq) / sec,
		SourceHeldBack:    heldDeliveries,
	}
	if iv.first > 0 {
		s.Amplification = float64(iv.first+iv.retries) / float64(iv.first)
	}
	if rec.first > 0 {
		s.RunningAmplification = float64(rec.attempts) / float64(rec.first)
	}
	if h := rec.healthyInterval; h.TotalCount() > 0 {
		s.HealthyLatencyP50S = float64(h.ValueAtQuantile(50)) / 1e6
		s.HealthyLatencyP99S = float64(h.ValueAtQuantile(99)) / 1e6
		h.Reset()
	}
	// Per cohort: attempts ÷ first attempts in the interval (NaN when it
	// made no first attempt), and the age of its oldest waiting delivery,
	// ready or delayed: the faulty cohort's backlog ages while the healthy
	// ones' do not.
	if n := min(len(rec.cohorts), MaxCohortColumns); n > 0 {
		s.CohortAmplification = make([]float64, n)
		for c := range n {
			s.CohortAmplification[c] = math.NaN()
			if iv.cohortFirst[c] > 0 {
				s.CohortAmplification[c] = float64(iv.cohortAttempts[c]) / float64(iv.cohortFirst[c])
			}
		}
		oldest := make([]int64, n)
		now := r.wall(t).UnixNano()
		r.core.Each(func(it *dispatch.Item) {
			if c := int(it.Cohort); c < n && (oldest[c] == 0 || it.FirstSeen < oldest[c]) {
				oldest[c] = it.FirstSeen
			}
		})
		s.CohortOldestAgeS = make([]float64, n)
		for c, first := range oldest {
			if first != 0 {
				s.CohortOldestAgeS[c] = float64(max(0, now-first)) / 1e9
			}
			rec.cohorts[c].oldestMaxS = max(rec.cohorts[c].oldestMaxS, s.CohortOldestAgeS[c])
		}
	}
	s.DLQByReason = make([]float64, len(model.Reasons))
	// Counts, not rates: Sample.DLQByReason is documented as counts, plots
	// sum it, and the CSV writer divides by the interval itself.
	for i := range iv.dlqBy {
		s.DLQByReason[i] = float64(iv.dlqBy[i])
	}
	if len(rec.breakerCols) > 0 {
		s.Breaker = make([]float64, len(rec.breakerCols))
		for i, sub := range rec.breakerCols {
			if b := r.core.Breaker(sub); b != nil {
				switch b.State(r.wall(t)) {
				case model.StateHalfOpen:
					s.Breaker[i] = 1
				case model.StateOpen:
					s.Breaker[i] = 2
				}
			}
		}
	}
	rec.peakAttemptsPerS = max(rec.peakAttemptsPerS, s.FirstAttemptsPerS+s.RetriesPerS)
	rec.peakPending = max(rec.peakPending, int64(st.Ready+st.Delayed+st.InFlight))
	rec.maxReadyAge = max(rec.maxReadyAge, s.OldestReadyAgeS)
	rec.maxDelayedAge = max(rec.maxDelayedAge, s.OldestDelayedAgeS)
	rec.samples = append(rec.samples, s)
}

func percentiles(h *hdrhistogram.Histogram) reports.Percentiles {
	if h.TotalCount() == 0 {
		return reports.Percentiles{}
	}
	v := func(q float64) float64 { return float64(h.ValueAtQuantile(q)) / 1e6 }
	return reports.Percentiles{Count: h.TotalCount(), P50: v(50), P90: v(90), P99: v(99), P999: v(99.9), Max: float64(h.Max()) / 1e6}
}

// cdfQuantiles are where the latency CDF is read: fine in the tail, where
// SLO questions live, and bounded in number.
var cdfQuantiles = func() []float64 {
	var qs []float64
	for q := 0.0; q < 90; q += 1 {
		qs = append(qs, q)
	}
	for q := 90.0; q < 99; q += 0.25 {
		qs = append(qs, q)
	}
	for q := 99.0; q < 100; q += 0.05 {
		qs = append(qs, q)
	}
	return append(qs, 100)
}()

func cdf(h *hdrhistogram.Histogram) []reports.CDFPoint {
	if h.TotalCount() == 0 {
		return nil
	}
	pts := make([]reports.CDFPoint, 0, len(cdfQuantiles))
	for _, q := range cdfQuantiles {
		pts = append(pts, reports.CDFPoint{X: float64(h.ValueAtQuantile(q)) / 1e6, P: q / 100})
	}
	return pts
}

// finish builds the run: summary, series, CDFs and policy echo. A broken
// accounting identity is returned as an error wrapping ErrAccounting,
// together with the run so that it can still be written down.
func (rec *recorder) finish(r *simRun) (*reports.Run, error) {
	d := r.d
	pending := int64(r.core.Queued() + r.core.InFlight())
	// Deliveries the source created but still holds back (on_full = block)
	// are created and pending, though no queue has seen them yet.
	r.eachHeld(func(si int32, n int64) {
		rec.created += n
		rec.cohorts[r.subs[si].cohort].deliveries += n
		pending += n
	})
	endWall := r.wall(rec.endNs)
	// The within-SLO fraction is over healthy deliveries whose latency is a
	// question: bad data (permanent dead letters) is left out, and so are
	// deliveries still pending but younger than the SLO, which can still
	// make it. Everything else that was not delivered within the SLO —
	// dead-lettered for any other reason, or pending past the SLO — counts
	// against it.
	youngPending := int64(0)
	countYoung := func(it *dispatch.Item) {
		if r.subs[it.Partner].healthy && endWall.UnixNano()-it.FirstSeen < rec.sloNs {
			youngPending++
		}
	}
	r.core.Each(countYoung)
	for i := range r.slots {
		if r.slots[i].it != nil {
			countYoung(r.slots[i].it)
		}
	}
	healthyCreated := rec.healthyCreated

	s := &reports.Summary{
		Drill: d.Name, Description: d.Description, Seed: d.Seed, Mode: "sim",
		DurationS:  d.Duration.D.Seconds(),
		DrillTimeS: float64(rec.endNs) / 1e9,
		Deliveries: reports.Deliveries{
			Created: rec.created, Delivered: rec.deliveredN, DeadLettered: rec.dlqTotal, Pending: pending,
		},
		Attempts:              reports.Attempts{Total: rec.attempts, First: rec.first, Retries: rec.attempts - rec.first, ByOrdinal: append([]int64{}, rec.byOrdinal...)},
		OldestReadyAgeMaxS:    rec.maxReadyAge,
		OldestDelayedAgeMaxS:  rec.maxDelayedAge,
		HealthyLatencyS:       percentiles(rec.healthy),
		HealthyLatencyOutageS: percentiles(rec.healthyOutage),
		SLOS:                  float64(rec.sloNs) / 1e9,
		DeadLetterReasons:     map[string]int64{},
		Duplicates:            rec.duplicates,
		BreakerTransitions:    rec.transitions,
		RetryAfterIgnored:     rec.retryAfterIgnored,
		SourceHeldBackS:       r.heldBackSum,
		SourceHeldBackMaxS:    r.heldBackMax,
		PeakAttemptsPerS:      rec.peakAttemptsPerS,
		PeakPending:           rec.peakPending,
		Restarts:              rec.restarts,
	}
	if s.Attempts.ByOrdinal == nil {
		s.Attempts.ByOrdinal = []int64{}
	}
	if s.BreakerTransitions == nil {
		s.BreakerTransitions = []reports.BreakerTransition{}
	}
	s.Deliveries.Lost = s.Deliveries.Created - s.Deliveries.Delivered - s.Deliveries.DeadLettered - s.Deliveries.Pending
	if first := rec.first; first > 0 {
		s.Amplification = float64(rec.attempts) / float64(first)
	}
	for reason, n := range rec.dlq {
		s.DeadLetterReasons[string(reason)] = n
	}
	if denom := healthyCreated - youngPending - rec.healthyPermanent; denom > 0 {
		s.HealthyWithinSLO = float64(rec.healthyWithin) / float64(denom)
	} else {
		s.HealthyWithinSLO = 1
	}
	s.Outages = []reports.Outage{}
	allDrained := true
	var worst float64
	for _, o := range r.outages {
		ro := reports.Outage{Partner: r.specs[o.cohort].Name, Kind: o.kind, StartS: float64(o.start) / 1e9, EndS: float64(o.end) / 1e9}
		if o.drained {
			v := float64(o.drainTimeNs) / 1e9
			ro.DrainTimeS = &v
			worst = max(worst, v)
		} else {
			allDrained = false
		}
		s.Outages = append(s.Outages, ro)
	}
	if allDrained && len(r.outages) > 0 {
		s.DrainTimeS = &worst
	}
	for _, c := range rec.cohorts {
		rc := reports.Cohort{
			Name: c.name, Subscribers: c.subscribers, Faulty: c.faulty, Deliveries: c.deliveries,
			Delivered: c.delivered, DeadLettered: c.dlq, Attempts: c.attempts, LatencyS: percentiles(c.hist),
		}
		rc.Pending = c.deliveries - c.delivered - c.dlq
		if c.attempted > 0 {
			rc.Amplification = float64(c.attempts) / float64(c.attempted)
		}
		if len(c.reasons) > 0 {
			rc.DeadLetters = c.reasons
		}
		if len(c.codes) > 0 {
			rc.StatusCodes = c.codes
		}
		if len(s.Cohorts) < MaxCohortColumns {
			oldest := c.oldestMaxS
			rc.OldestAgeMaxS = &oldest
		}
		s.Cohorts = append(s.Cohorts, rc)
	}
	gates, err := reports.ParseGates(d.Gates)
	if err != nil {
		return nil, err
	}
	reports.EvalGates(s, gates)
	ts := &reports.Timeseries{IntervalS: float64(rec.intervalNs) / 1e9, Samples: rec.samples}
	for _, rs := range model.Reasons {
		ts.Reasons = append(ts.Reasons, string(rs))
	}
	for _, sub := range rec.breakerCols {
		ts.BreakerPartners = append(ts.BreakerPartners, r.subs[sub].name)
	}
	for c := range min(len(rec.cohorts), MaxCohortColumns) {
		ts.Cohorts = append(ts.Cohorts, rec.cohorts[c].name)
	}
	run := &reports.Run{Summary: s, Timeseries: ts, HealthyCDF: cdf(rec.healthy), HealthyOutageCDF: cdf(rec.healthyOutage)}
	for _, kv := range d.PolicyEcho() {
		run.Policy = append(run.Policy, reports.KV{Key: kv[0], Value: kv[1]})
	}
	if s.Deliveries.Lost != 0 {
		return run, fmt.Errorf("%w: created %d = delivered %d + dead-lettered %d + pending %d + lost %d",
			ErrAccounting, s.Deliveries.Created, s.Deliveries.Delivered, s.Deliveries.DeadLettered, s.Deliveries.Pending, s.Deliveries.Lost)
	}
	if math.IsNaN(s.Amplification) {
		s.Amplification = 0
	}
	return run, nil
}
