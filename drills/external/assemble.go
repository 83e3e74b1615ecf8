package external

import (
	"fmt"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/stormdrill/stormdrill/drills"
	"github.com/stormdrill/stormdrill/fakepartner"
	"github.com/stormdrill/stormdrill/model"
	"github.com/stormdrill/stormdrill/reports"
)

// Assembly bounds.
const (
	// MaxBackoffOrdinal: gaps before attempts of this ordinal and later
	// share one row of the observed backoff.
	MaxBackoffOrdinal = 16
	// maxGapSamples bounds the gaps kept per ordinal (and for Retry-After).
	maxGapSamples = 200_000
	// retryAfterSlack forgives clock granularity when checking a retry
	// against the Retry-After it was sent.
	retryAfterSlack = 50 * time.Millisecond
	histMaxMicros   = 100 * 24 * 3600 * 1_000_000
)

const never = int64(math.MaxInt64)

// outcome of one delivery as seen from the partners.
type seen struct {
	attempts  int
	lastDone  int64 // drill ns
	lastRA    int64 // Retry-After of the last answer, ns; -1 none
	firstOK   int64 // first 2xx answer's end; never if none
	commitAt  int64 // first commit; never if none
	deadAt    int64 // dead letter reported; never if none
	deadWhy   string
	terminal  int64 // min(commitAt, deadAt)
	delivered bool
}

// parseRetryAfter reads a Retry-After sent at wall time at: delta-seconds
// or an HTTP-date. -1 when absent or unreadable.
func parseRetryAfter(v string, at time.Time) int64 {
	v = strings.TrimSpace(v)
	if v == "" {
		return -1
	}
	if n, err := strconv.Atoi(v); err == nil && n >= 0 {
		return int64(n) * int64(time.Second)
	}
	if t, err := http.ParseTime(v); err == nil {
		// An HTTP-date has whole seconds: the partner rounded down.
		return max(0, int64(t.Sub(at.Truncate(time.Second))))
	}
	return -1
}

func newHist() *hdrhistogram.Histogram { return hdrhistogram.New(1, histMaxMicros, 3) }

func micros(ns int64) int64 { return max(1, min(ns/1000, histMaxMicros)) }

func percentiles(h *hdrhistogram.Histogram) reports.Percentiles {
	if h.TotalCount() == 0 {
		return reports.Percentiles{}
	}
	v := func(q float64) float64 { return float64(h.ValueAtQuantile(q)) / 1e6 }
	return reports.Percentiles{Count: h.TotalCount(), P50: v(50), P90: v(90), P99: v(99), P999: v(99.9), Max: float64(h.Max()) / 1e6}
}

func cdf(h *hdrhistogram.Histogram) []reports.CDFPoint {
	if h.TotalCount() == 0 {
		return nil
	}
	var pts []reports.CDFPoint
	for q := 0.0; q <= 100; q += 0.5 {
		pts = append(pts, reports.CDFPoint{X: float64(h.ValueAtQuantile(q)) / 1e6, P: q / 100})
	}
	return pts
}

// quantile of sorted values.
func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

type interval struct {
	first, retries, succ, transient, timeout, reset, permanent int64
	dlqBy                                                      [len(model.Reasons)]int64
	dlq                                                        int64
}

// assemble builds the run's report from what the partners saw.
func assemble(h *harness, subs []drills.LiveSubscriber, st *injectStats) (*reports.Run, error) {
	d := h.d
	h.rec.mu.Lock()
	obs := append([]fakepartner.Observation(nil), h.rec.obs...)
	dead := append([]fakepartner.DeadLetter(nil), h.rec.dead...)
	dels := append([]delivery(nil), h.rec.dels...)
	byID := h.rec.byID
	h.rec.mu.Unlock()
	sort.SliceStable(obs, func(i, j int) bool { return obs[i].Arrived.Before(obs[j].Arrived) })
	sort.SliceStable(dead, func(i, j int) bool { return dead[i].At.Before(dead[j].At) })
	ns := func(t time.Time) int64 { return int64(t.Sub(h.start)) }
	endNs := int64(st.end)

	intervalNs := int64(d.SampleInterval.D)
	if intervalNs <= 0 {
		intervalNs = int64(time.Second)
	}
	if endNs/intervalNs > drills.MaxSamples {
		intervalNs = (endNs + drills.MaxSamples - 1) / drills.MaxSamples
	}
	nIv := int(endNs/intervalNs) + 1
	ivs := make([]interval, nIv)
	ivAt := func(t int64) *interval { return &ivs[min(max(t/intervalNs, 0), int64(nIv-1))] }

	cohortOf := map[string]int{}
	for i := range h.specs {
		cohortOf[h.specs[i].Name] = i
	}
	type cohortAcc struct {
		deliveries, delivered, dead, attempts, attempted int64
		hist                                             *hdrhistogram.Histogram
		reasons                                          map[string]int64
	}
	cohorts := make([]cohortAcc, len(h.specs))
	for i := range cohorts {
		cohorts[i] = cohortAcc{hist: newHist(), reasons: map[string]int64{}}
	}
	ext := &reports.External{
		System:               systemText(h.sys),
		DeadLetterSource:     h.sys.DeadLetters,
		LostClaimed:          h.sys.DeadLetters != "none",
		UnidentifiedByCohort: map[string]int64{},
		IngestRefusedEvents:  st.refusedEvents,
	}
	type downWin struct {
		cohort   int
		o        fakepartner.Outage
		calls    int64
		affected []int // subscriber indexes
	}
	var downs []downWin
	for ci := range h.specs {
		for _, o := range h.specs[ci].Outages {
			dw := downWin{cohort: ci, o: o}
			for si, s := range subs {
				if s.Cohort == ci && o.Hits(s.Member) {
					dw.affected = append(dw.affected, si)
				}
			}
			downs = append(downs, dw)
		}
	}
	conc := make([]int, len(h.specs))

	ss := make([]seen, len(dels))
	for i := range ss {
		ss[i] = seen{lastRA: -1, firstOK: never, commitAt: never, deadAt: never}
	}
	var attempts, first, duplicates int64
	var byOrdinal []int64
	gaps := make([][]float64, MaxBackoffOrdinal+1)
	var raGaps []float64
	type edge struct {
		t int64
		d int
	}
	flight := make([]edge, 0, 2*len(obs))
	for k := range obs {
		o := &obs[k]
		a, e := ns(o.Arrived), ns(o.Done)
		flight = append(flight, edge{a, 1}, edge{e, -1})
		ci, known := cohortOf[o.Cohort]
		if known {
			conc[ci] = max(conc[ci], o.InFlight)
		}
		if o.Down() {
			for j := range downs {
				dw := &downs[j]
				if h.specs[dw.cohort].Name == o.Cohort && dw.o.Hits(o.Member) && dw.o.ActiveAt(time.Duration(a)) {
					dw.calls++
				}
			}
		}
		iv := ivAt(a)
		switch {
		case o.Status >= 200 && o.Status < 300:
			iv.succ++
		case o.Held || o.Abandoned:
			iv.timeout++
		case o.Reset || o.DroppedAnswer:
			iv.reset++
		case o.Status == 408 || o.Status == 429 || o.Status >= 500:
			iv.transient++
		default:
			iv.permanent++
		}
		idx, ok := byID[o.Key]
		if !ok {
			ext.Unidentified++
			ext.UnidentifiedByCohort[o.Cohort]++
			continue
		}
		s := &ss[idx]
		s.attempts++
		ord := s.attempts
		attempts++
		c := &cohorts[subs[dels[idx].sub].Cohort]
		c.attempts++
		if ord == 1 {
			first++
			c.attempted++
			iv.first++
		} else {
			iv.retries++
			gap := float64(a-s.lastDone) / 1e9
			if g := &gaps[min(ord, MaxBackoffOrdinal)]; len(*g) < maxGapSamples {
				*g = append(*g, gap)
			}
			if s.lastRA >= 0 {
				ext.RetryAfter.Checked++
				if len(raGaps) < maxGapSamples {
					raGaps = append(raGaps, gap)
				}
				if a-s.lastDone < s.lastRA-int64(retryAfterSlack) {
					ext.RetryAfter.Early++
				}
			}
		}
		i := min(ord, drills.MaxOrdinals) - 1
		for len(byOrdinal) <= i {
			byOrdinal = append(byOrdinal, 0)
		}
		byOrdinal[i]++
		s.lastDone = e
		s.lastRA = -1
		if o.Status == http.StatusTooManyRequests || o.Status == http.StatusServiceUnavailable {
			s.lastRA = parseRetryAfter(o.RetryAfter, o.Done)
		}
		if o.Commit {
			if s.commitAt == never {
				s.commitAt = e
			} else {
				duplicates++
			}
		}
		if o.Status >= 200 && o.Status < 300 && s.firstOK == never {
			s.firstOK = e
		}
	}
	for _, dl := range dead {
		idx, ok := byID[dl.ID]
		if !ok {
			ext.UnknownDeadLetters++
			continue
		}
		s := &ss[idx]
		if s.deadAt == never {
			s.deadAt, s.deadWhy = ns(dl.At), dl.Reason
			if s.deadWhy == "" {
				s.deadWhy = "unknown"
			}
		}
	}

	// Outcomes, latency, the per-interval DLQ inflow.
	healthy, healthyOutage := newHist(), newHist()
	sloNs := int64(d.SLO.DeliveryLatency.D)
	var delivered, deadN, unresolved, healthyCreated, healthyWithin, healthyPermanent, youngPending int64
	reasons := map[string]int64{}
	var outageWindows [][2]int64
	for _, dw := range downs {
		outageWindows = append(outageWindows, [2]int64{int64(dw.o.Start), int64(dw.o.End())})
	}
	for i := range dels {
		dl, s := &dels[i], &ss[i]
		sub := subs[dl.sub]
		c := &cohorts[sub.Cohort]
		c.deliveries++
		created := int64(dl.created)
		if sub.Healthy {
			healthyCreated++
		}
		switch {
		case dl.refused:
			s.deadAt, s.deadWhy = created, string(model.ReasonQueueFull)
			fallthrough
		case s.deadAt < s.commitAt:
			s.terminal = s.deadAt
			deadN++
			c.dead++
			reasons[s.deadWhy]++
			c.reasons[s.deadWhy]++
			iv := ivAt(s.deadAt)
			iv.dlq++
			for r, rs := range model.Reasons {
				if string(rs) == s.deadWhy {
					iv.dlqBy[r]++
				}
			}
			if sub.Healthy && s.deadWhy == string(model.ReasonPermanent) {
				healthyPermanent++
			}
		case s.commitAt != never:
			s.terminal, s.delivered = s.commitAt, true
			delivered++
			c.delivered++
			end := s.firstOK
			if end == never {
				end = s.commitAt
			}
			lat := end - created
			_ = c.hist.RecordValue(micros(lat))
			if sub.Healthy {
				_ = healthy.RecordValue(micros(lat))
				if lat <= sloNs {
					healthyWithin++
				}
				for _, w := range outageWindows {
					if created >= w[0] && created < w[1] {
						_ = healthyOutage.RecordValue(micros(lat))
						break
					}
				}
			}
		default:
			s.terminal = never
			unresolved++
			if sub.Healthy && endNs-created < sloNs {
				youngPending++
			}
		}
	}
	ext.Unresolved = unresolved

	// Levels over time: in flight, unresolved, the oldest unresolved age.
	sort.Slice(flight, func(i, j int) bool { return flight[i].t < flight[j].t })
	order := make([]int, len(dels))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(i, j int) bool { return dels[order[i]].created < dels[order[j]].created })
	terms := make([]int64, 0, len(dels))
	for i := range ss {
		if ss[i].terminal != never {
			terms = append(terms, ss[i].terminal)
		}
	}
	sort.Slice(terms, func(i, j int) bool { return terms[i] < terms[j] })
	sec := float64(intervalNs) / 1e9
	samples := make([]reports.Sample, 0, nIv)
	var inFlight, runAttempts, runFirst int64
	var peakAttempts, maxAge float64
	var peakPending int64
	fi, ci, ti, oi := 0, 0, 0, 0
	for k := 0; k < nIv; k++ {
		t := int64(k+1) * intervalNs
		if t > endNs {
			t = endNs
		}
		for fi < len(flight) && flight[fi].t <= t {
			inFlight += int64(flight[fi].d)
			fi++
		}
		for ci < len(order) && int64(dels[order[ci]].created) <= t {
			ci++
		}
		for ti < len(terms) && terms[ti] <= t {
			ti++
		}
		for oi < len(order) && int64(dels[order[oi]].created) <= t && ss[order[oi]].terminal <= t {
			oi++
		}
		open := int64(ci - ti)
		iv := &ivs[k]
		runAttempts += iv.first + iv.retries
		runFirst += iv.first
		smp := reports.Sample{
			T:                 float64(t) / 1e9,
			FirstAttemptsPerS: float64(iv.first) / sec,
			RetriesPerS:       float64(iv.retries) / sec,
			SuccessesPerS:     float64(iv.succ) / sec,
			TransientPerS:     float64(iv.transient) / sec,
			TimeoutPerS:       float64(iv.timeout) / sec,
			ResetPerS:         float64(iv.reset) / sec,
			PermanentPerS:     float64(iv.permanent) / sec,
			InFlight:          float64(inFlight),
			Delayed:           float64(max(0, open-inFlight)),
			DLQPerS:           float64(iv.dlq) / sec,
		}
		if oi < len(order) && int64(dels[order[oi]].created) <= t {
			smp.OldestDelayedAgeS = float64(t-int64(dels[order[oi]].created)) / 1e9
		}
		if iv.first > 0 {
			smp.Amplification = float64(iv.first+iv.retries) / float64(iv.first)
		}
		if runFirst > 0 {
			smp.RunningAmplification = float64(runAttempts) / float64(runFirst)
		}
		smp.DLQByReason = make([]float64, len(model.Reasons))
		for r := range iv.dlqBy {
			smp.DLQByReason[r] = float64(iv.dlqBy[r])
		}
		peakAttempts = max(peakAttempts, smp.FirstAttemptsPerS+smp.RetriesPerS)
		peakPending = max(peakPending, open)
		maxAge = max(maxAge, smp.OldestDelayedAgeS)
		samples = append(samples, smp)
	}

	// Observed backoff and Retry-After.
	for ord := 2; ord <= MaxBackoffOrdinal; ord++ {
		g := gaps[ord]
		if len(g) == 0 {
			continue
		}
		sort.Float64s(g)
		ext.Backoff = append(ext.Backoff, reports.BackoffGap{Ordinal: ord, Count: int64(len(g)),
			P50S: quantile(g, 0.5), P90S: quantile(g, 0.9), MinS: g[0], MaxS: g[len(g)-1]})
	}
	if len(raGaps) > 0 {
		sort.Float64s(raGaps)
		lo, med := raGaps[0], quantile(raGaps, 0.5)
		ext.RetryAfter.ShortestGapS, ext.RetryAfter.MedianGapS = &lo, &med
	}
	ext.CallsWhileDown = []reports.DownCalls{}
	for _, dw := range downs {
		if dw.o.Kind == fakepartner.OutageSlow {
			continue
		}
		ext.CallsWhileDown = append(ext.CallsWhileDown, reports.DownCalls{Partner: h.specs[dw.cohort].Name, Kind: dw.o.Kind.String(),
			StartS: dw.o.Start.Seconds(), EndS: dw.o.End().Seconds(), Calls: dw.calls})
	}
	for i := range h.specs {
		ext.Concurrency = append(ext.Concurrency, reports.Concurrency{Partner: h.specs[i].Name, Max: conc[i]})
	}
	if len(ext.UnidentifiedByCohort) == 0 {
		ext.UnidentifiedByCohort = nil
	}

	s := &reports.Summary{
		Drill: d.Name, Description: d.Description, Seed: d.Seed, Mode: "external",
		DurationS: d.Duration.D.Seconds(), DrillTimeS: float64(endNs) / 1e9, Speed: 1,
		Deliveries:            reports.Deliveries{Created: int64(len(dels)), Delivered: delivered, DeadLettered: deadN, Pending: unresolved},
		Attempts:              reports.Attempts{Total: attempts, First: first, Retries: attempts - first, ByOrdinal: byOrdinal},
		OldestDelayedAgeMaxS:  maxAge,
		HealthyLatencyS:       percentiles(healthy),
		HealthyLatencyOutageS: percentiles(healthyOutage),
		SLOS:                  float64(sloNs) / 1e9,
		DeadLetterReasons:     reasons,
		Duplicates:            duplicates,
		BreakerTransitions:    []reports.BreakerTransition{},
		SourceHeldBackS:       st.heldSum.Seconds(),
		SourceHeldBackMaxS:    st.heldMax.Seconds(),
		PeakAttemptsPerS:      peakAttempts,
		PeakPending:           peakPending,
		External:              ext,
	}
	if s.Attempts.ByOrdinal == nil {
		s.Attempts.ByOrdinal = []int64{}
	}
	s.Deliveries.Lost = s.Deliveries.Created - delivered - deadN - unresolved
	if first > 0 {
		s.Amplification = float64(attempts) / float64(first)
	}
	if denom := healthyCreated - youngPending - healthyPermanent; denom > 0 {
		s.HealthyWithinSLO = float64(healthyWithin) / float64(denom)
	} else {
		s.HealthyWithinSLO = 1
	}
	if len(st.lateness) > 0 {
		l := append([]float64(nil), st.lateness...)
		sort.Float64s(l)
		s.Lateness = &reports.Percentiles{Count: int64(len(l)), P50: quantile(l, 0.5), P90: quantile(l, 0.9),
			P99: quantile(l, 0.99), P999: quantile(l, 0.999), Max: l[len(l)-1]}
	}

	// Drain time per outage, from the outage's end until every delivery
	// to the subscribers it hit, created before that end, was resolved.
	s.Outages = []reports.Outage{}
	allDrained, worst := true, 0.0
	subDels := make([][]int, len(subs))
	for i := range dels {
		subDels[dels[i].sub] = append(subDels[dels[i].sub], i)
	}
	for _, dw := range downs {
		end := int64(dw.o.End())
		ro := reports.Outage{Partner: h.specs[dw.cohort].Name, Kind: dw.o.Kind.String(), StartS: dw.o.Start.Seconds(), EndS: dw.o.End().Seconds()}
		drained, last := true, int64(0)
		for _, si := range dw.affected {
			for _, i := range subDels[si] {
				if int64(dels[i].created) >= end {
					continue
				}
				if ss[i].terminal == never {
					drained = false
				} else {
					last = max(last, ss[i].terminal-end)
				}
			}
		}
		if drained {
			v := float64(last) / 1e9
			ro.DrainTimeS = &v
			worst = max(worst, v)
		} else {
			allDrained = false
		}
		s.Outages = append(s.Outages, ro)
	}
	if allDrained && len(downs) > 0 {
		s.DrainTimeS = &worst
	}
	for i, c := range cohorts {
		rc := reports.Cohort{Name: h.specs[i].Name, Subscribers: h.specs[i].Count, Faulty: h.specs[i].Faulty(),
			Deliveries: c.deliveries, Delivered: c.delivered, DeadLettered: c.dead, Attempts: c.attempts,
			Pending: c.deliveries - c.delivered - c.dead, LatencyS: percentiles(c.hist)}
		if c.attempted > 0 {
			rc.Amplification = float64(c.attempts) / float64(c.attempted)
		}
		if len(c.reasons) > 0 {
			rc.DeadLetters = c.reasons
		}
		s.Cohorts = append(s.Cohorts, rc)
	}
	for _, rs := range st.restarts {
		at := int64(rs.AtS * 1e9)
		for k := range obs {
			if a, e := ns(obs[k].Arrived), ns(obs[k].Done); a <= at && at < e {
				rs.InFlight++
			}
		}
		s.Restarts = append(s.Restarts, rs)
	}
	for _, a := range h.srv.Alerts() {
		s.Alerts = append(s.Alerts, reports.Alert{AtS: a.At.Sub(h.start).Seconds(), Partner: a.Partner, Reason: a.Reason, Count: int64(a.Count)})
	}
	gates, err := reports.ParseGates(d.Gates)
	if err != nil {
		return nil, err
	}
	reports.EvalGates(s, gates)
	ts := &reports.Timeseries{IntervalS: sec, Samples: samples}
	for _, rs := range model.Reasons {
		ts.Reasons = append(ts.Reasons, string(rs))
	}
	run := &reports.Run{Summary: s, Timeseries: ts, HealthyCDF: cdf(healthy), HealthyOutageCDF: cdf(healthyOutage)}
	run.Policy = []reports.KV{{Key: "system", Value: ext.System}, {Key: "system.dead_letters", Value: h.sys.DeadLetters},
		{Key: "system.key_header", Value: h.sys.KeyHeader}}
	if st.deadLetterListError != nil {
		return run, st.deadLetterListError
	}
	if s.Deliveries.Lost != 0 {
		return run, fmt.Errorf("%w: created %d = delivered %d + dead-lettered %d + unresolved %d + lost %d",
			drills.ErrAccounting, s.Deliveries.Created, delivered, deadN, unresolved, s.Deliveries.Lost)
	}
	return run, nil
}

// systemText says how the system was driven, for the report.
func systemText(s *drills.System) string {
	var b strings.Builder
	if len(s.Start) > 0 {
		b.WriteString("started: " + strings.Join(s.Start, " "))
	} else {
		b.WriteString("already running")
	}
	b.WriteString("; ingest " + s.Ingest)
	return b.String()
}
