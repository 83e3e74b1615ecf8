package external

import (
	"container/heap"
	"fmt"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/stormdrill/stormdrill/drills"
	"github.com/stormdrill/stormdrill/fakepartner"
	"github.com/stormdrill/stormdrill/model"
	"github.com/stormdrill/stormdrill/reports"
	"github.com/stormdrill/stormdrill/reports/tally"
)

// Bounds of the external-only figures.
const (
	// MaxBackoffOrdinal: gaps before attempts of this ordinal and later
	// share one row of the observed backoff.
	MaxBackoffOrdinal = 16
	// maxGapSamples bounds the gaps kept per ordinal (and for Retry-After).
	maxGapSamples = 200_000
	// retryAfterSlack forgives clock granularity when checking a retry
	// against the Retry-After it was sent.
	retryAfterSlack = 50 * time.Millisecond
)

const never = int64(math.MaxInt64)

// seen is one delivery as the partners (and the dead-letter source) saw it.
type seen struct {
	attempts int
	firstAt  int64 // first attempt's arrival; never if none
	lastDone int64 // drill ns
	lastRA   int64 // Retry-After of the last answer, ns; -1 none
	firstOK  int64 // first 2xx answer's end; never if none
	commitAt int64 // first commit; never if none
	deadAt   int64 // dead letter reported; never if none
	deadWhy  string
	terminal int64 // when it was resolved; never if it was not
}

// parseRetryAfter reads a Retry-After sent at wall time at as the
// dispatcher does (model.ParseRetryAfter): ns, or -1 when absent or not
// trusted (unreadable, in the past, or beyond model.RetryAfterAbsurd).
func parseRetryAfter(v string, at time.Time) int64 {
	d, ok := model.ParseRetryAfter(v, at)
	if !ok {
		return -1
	}
	return int64(d)
}

// quantile of sorted values.
func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// outcome is an observed attempt as the tally's classifier reads it: a
// held or abandoned request timed out, a reset or dropped answer is a
// reset.
func outcome(o *fakepartner.Observation) model.Outcome {
	switch {
	case o.Held || o.Abandoned:
		return model.Outcome{Err: model.ErrTimeout}
	case o.Reset || o.DroppedAnswer:
		return model.Outcome{Err: model.ErrReset}
	}
	return model.Outcome{Status: o.Status}
}

// fact is one thing the tally is told, at drill time at.
type fact struct {
	at   int64
	kind int8 // factStart, factEnd, factDelivered, factDead
	sub  int32
	// n is the ordinal (factStart), the observation (factEnd) or the
	// delivery (factDelivered, factDead).
	n int32
}

const (
	factStart int8 = iota
	factEnd
	factDelivered
	factDead
)

// assemble feeds the tally what the injector created and what the
// partners saw, in drill-time order with a sample at every interval, and
// adds what only an external run can show. The tally assembles every
// figure that sim and live report as well.
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

	t := d.NewTally(h.specs, "external", 1, tally.Interval(d.SampleInterval.D, st.end))
	l := t.Layout()
	ext := &reports.External{
		System:               systemText(h.sys),
		RunID:                h.runID,
		DeadLetterSource:     h.sys.DeadLetters,
		LostClaimed:          h.sys.DeadLetters != "none",
		UnidentifiedByCohort: map[string]int64{},
		IngestRefusedEvents:  st.refusedEvents,
	}

	// The partners' records, in arrival order: what the tally counts, and
	// the gaps, Retry-After checks, calls while down and concurrency that
	// only the partner side sees.
	type downWin struct {
		w     tally.OutageWindow
		o     fakepartner.Outage
		calls int64
	}
	var downs []downWin
	for ci := range h.specs {
		for _, o := range h.specs[ci].Outages {
			downs = append(downs, downWin{o: o, w: l.Outages[len(downs)]})
		}
	}
	conc := make([]int, len(h.specs))
	ss := make([]seen, len(dels))
	for i := range ss {
		ss[i] = seen{lastRA: -1, firstAt: never, firstOK: never, commitAt: never, deadAt: never, terminal: never}
	}
	gaps := make([][]float64, MaxBackoffOrdinal+1)
	var raGaps []float64
	var duplicates int64
	// Attempts the harness could not tie to a delivery, by what was wrong:
	// no key at all, or a key it never issued; and the cohorts they hit.
	var noKey, badKey unidentified
	unidentCohorts := map[int]bool{}
	type edge struct {
		t int64
		d int
	}
	flight := make([]edge, 0, 2*len(obs))
	facts := make([]fact, 0, 2*len(obs)+len(dels))
	for k := range obs {
		o := &obs[k]
		a, e := ns(o.Arrived), ns(o.Done)
		flight = append(flight, edge{a, 1}, edge{e, -1})
		sub, known := l.Index(o.Cohort + "-" + strconv.Itoa(o.Member))
		if known {
			ci := l.Subscribers[sub].Cohort
			conc[ci] = max(conc[ci], o.InFlight)
		}
		if o.Down() {
			for j := range downs {
				dw := &downs[j]
				if known && sub >= dw.w.Lo && sub < dw.w.Hi && dw.o.ActiveAt(time.Duration(a)) {
					dw.calls++
				}
			}
		}
		idx, ok := byID[o.Key]
		if !ok || !known {
			ext.Unidentified++
			ext.UnidentifiedByCohort[o.Cohort]++
			if known {
				unidentCohorts[l.Subscribers[sub].Cohort] = true
			}
			if o.Key == "" {
				noKey.add(a, "")
			} else {
				badKey.add(a, o.Key)
			}
			continue
		}
		s := &ss[idx]
		s.attempts++
		s.firstAt = min(s.firstAt, a)
		ord := s.attempts
		facts = append(facts, fact{at: a, kind: factStart, sub: int32(sub), n: int32(ord)},
			fact{at: e, kind: factEnd, sub: int32(sub), n: int32(k)})
		if ord > 1 {
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
	var unknownDead unidentified
	for _, dl := range dead {
		idx, ok := byID[dl.ID]
		if !ok {
			ext.UnknownDeadLetters++
			unknownDead.add(ns(dl.At), dl.ID)
			continue
		}
		if s := &ss[idx]; s.deadAt == never {
			s.deadAt, s.deadWhy = ns(dl.At), dl.Reason
			if s.deadWhy == "" {
				s.deadWhy = "unknown"
			}
		}
	}

	// A delivery whose event the ingest refused for good, and that no
	// partner and no dead letter ever showed, was never taken by the
	// system: it is refused, not created (it ends at its arrival, so that
	// no level counts it as waiting). Every other delivery was created at
	// its scheduled arrival; it ended dead-lettered, delivered (the partner
	// committed it; its latency runs to the first 2xx), or unresolved.
	var refused, refusedSeen int64
	for i := range dels {
		dl, s := &dels[i], &ss[i]
		if dl.refused {
			if s.attempts == 0 && s.commitAt == never && s.deadAt == never {
				refused++
				s.terminal = int64(dl.created)
				continue
			}
			refusedSeen++
		}
		t.Created(int(dl.sub), 1)
		switch {
		case s.deadAt < s.commitAt:
			s.terminal = s.deadAt
			facts = append(facts, fact{at: s.deadAt, kind: factDead, sub: dl.sub, n: int32(i)})
		case s.commitAt != never:
			s.terminal = s.commitAt
			at := s.firstOK
			if at == never {
				at = s.commitAt
			}
			facts = append(facts, fact{at: at, kind: factDelivered, sub: dl.sub, n: int32(i)})
		}
	}
	t.Duplicates(duplicates)

	// Levels the partner side can see at each sample: requests in flight,
	// deliveries created and not resolved, and the oldest of those (the
	// partner-side view of the oldest message's age), overall and per
	// cohort.
	sort.SliceStable(facts, func(i, j int) bool { return facts[i].at < facts[j].at })
	sort.Slice(flight, func(i, j int) bool { return flight[i].t < flight[j].t })
	byCreated := make([]int, len(dels)) // deliveries in creation order
	for i := range byCreated {
		byCreated[i] = i
	}
	sort.SliceStable(byCreated, func(i, j int) bool { return dels[byCreated[i]].created < dels[byCreated[j]].created })
	ncol := min(len(h.specs), tally.MaxCohortColumns)
	cohortOrder := make([][]int, ncol)
	for _, i := range byCreated {
		if c := l.Subscribers[dels[i].sub].Cohort; c < ncol {
			cohortOrder[c] = append(cohortOrder[c], i)
		}
	}
	terms := make([]int64, 0, len(dels))
	for i := range ss {
		if ss[i].terminal != never {
			terms = append(terms, ss[i].terminal)
		}
	}
	sort.Slice(terms, func(i, j int) bool { return terms[i] < terms[j] })
	// The partner side splits the waiting deliveries as the queue does,
	// by what it can see: ready = created and never called yet (new work
	// waiting for a worker), delayed = called at least once and not yet
	// resolved (waiting for a retry, or in flight). left holds when each
	// delivery stopped being ready: its first call or its resolution.
	left := make([]int64, 0, len(dels))
	byFirst := make([]int, 0, len(dels)) // called deliveries, in first-call order
	for i := range ss {
		if l := min(ss[i].firstAt, ss[i].terminal); l != never {
			left = append(left, l)
		}
		if ss[i].firstAt != never {
			byFirst = append(byFirst, i)
		}
	}
	sort.Slice(left, func(i, j int) bool { return left[i] < left[j] })
	sort.SliceStable(byFirst, func(i, j int) bool { return ss[byFirst[i]].firstAt < ss[byFirst[j]].firstAt })
	// oldestReady advances p past the deliveries of byCreated called or
	// resolved by tm (neither can become ready again) and returns the age
	// at tm of the first one still waiting for its first call, 0 if none.
	oldestReady := func(p *int, tm int64) time.Duration {
		for *p < len(byCreated) && int64(dels[byCreated[*p]].created) <= tm && min(ss[byCreated[*p]].firstAt, ss[byCreated[*p]].terminal) <= tm {
			*p++
		}
		if *p < len(byCreated) && int64(dels[byCreated[*p]].created) <= tm {
			return time.Duration(tm - int64(dels[byCreated[*p]].created))
		}
		return 0
	}
	// called holds the called deliveries not known to be resolved, oldest
	// created on top: each is pushed once at its first call and popped
	// once resolved, so the samples cost O(n log n) in all.
	called := &createdHeap{dels: dels}
	// oldest advances p past the deliveries of order resolved by tm and
	// returns the age at tm of the first one still open, 0 if none.
	oldest := func(order []int, p *int, tm int64) time.Duration {
		for *p < len(order) && int64(dels[order[*p]].created) <= tm && ss[order[*p]].terminal <= tm {
			*p++
		}
		if *p < len(order) && int64(dels[order[*p]].created) <= tm {
			return time.Duration(tm - int64(dels[order[*p]].created))
		}
		return 0
	}
	cohortP := make([]int, ncol)
	var inFlight int64
	fi, fl, ci, ti, ri, li, bi := 0, 0, 0, 0, 0, 0, 0
	iv := int64(t.Interval())
	for k := int64(1); ; k++ {
		tm := min(k*iv, endNs)
		for ; fi < len(facts) && facts[fi].at < tm; fi++ {
			feed(t, &facts[fi], obs, dels, ss)
		}
		for fl < len(flight) && flight[fl].t <= tm {
			inFlight += int64(flight[fl].d)
			fl++
		}
		for ci < len(byCreated) && int64(dels[byCreated[ci]].created) <= tm {
			ci++
		}
		for ti < len(terms) && terms[ti] <= tm {
			ti++
		}
		for li < len(left) && left[li] <= tm {
			li++
		}
		for ; bi < len(byFirst) && ss[byFirst[bi]].firstAt <= tm; bi++ {
			heap.Push(called, byFirst[bi])
		}
		for called.Len() > 0 && ss[called.idx[0]].terminal <= tm {
			heap.Pop(called)
		}
		var oldestDelayed time.Duration
		if called.Len() > 0 {
			oldestDelayed = time.Duration(tm - int64(dels[called.idx[0]].created))
		}
		open, ready := int64(ci-ti), max(0, int64(ci-li))
		g := tally.Gauges{InFlight: inFlight, Ready: ready, Delayed: max(0, open-ready-inFlight),
			OldestReadyAge: oldestReady(&ri, tm), OldestDelayedAge: oldestDelayed, CohortOldestAge: make([]time.Duration, ncol)}
		for c := range ncol {
			g.CohortOldestAge[c] = oldest(cohortOrder[c], &cohortP[c], tm)
		}
		t.Sample(time.Duration(tm), g)
		if tm >= endNs {
			break
		}
	}
	// What ended after the last sample (a dead-letter command lists its
	// dead letters after the run) counts in the last interval.
	for ; fi < len(facts); fi++ {
		feed(t, &facts[fi], obs, dels, ss)
	}
	t.End(st.end)
	var unresolved int64
	for i := range dels {
		if ss[i].terminal == never {
			t.Pending(int(dels[i].sub), dels[i].created, 1)
			unresolved++
		}
	}
	ext.Unresolved = unresolved

	lateness := tally.NewLatencyHist()
	for _, v := range st.lateness {
		lateness.Record(int64(v * 1e9))
	}
	if lateness.Count() > 0 {
		t.Lateness(lateness.Percentiles())
	}
	t.SourceHeldBack(st.heldSum.Seconds(), st.heldMax.Seconds())
	for _, rs := range st.restarts {
		at := int64(rs.AtS * 1e9)
		for k := range obs {
			if a, e := ns(obs[k].Arrived), ns(obs[k].Done); a <= at && at < e {
				rs.InFlight++
			}
		}
		t.Restart(rs)
	}
	for _, a := range h.srv.Alerts() {
		t.Alert(reports.Alert{AtS: a.At.Sub(h.start).Seconds(), Partner: a.Partner, Reason: a.Reason, Count: int64(a.Count)})
	}

	// Observed backoff, Retry-After, calls while down, concurrency.
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
		if dw.o.Kind.Info().Up {
			continue
		}
		ext.CallsWhileDown = append(ext.CallsWhileDown, reports.DownCalls{Partner: h.specs[dw.w.Cohort].Name, Kind: dw.w.Kind,
			StartS: dw.w.Start.Seconds(), EndS: dw.w.End.Seconds(), Calls: dw.calls})
	}
	for i := range h.specs {
		ext.Concurrency = append(ext.Concurrency, reports.Concurrency{Partner: h.specs[i].Name, Max: conc[i]})
	}
	if len(ext.UnidentifiedByCohort) == 0 {
		ext.UnidentifiedByCohort = nil
	}

	run, err := t.Run()
	if run == nil {
		return nil, err
	}
	s := run.Summary
	s.External = ext
	s.Deliveries.Refused = refused
	// What the harness could not tie to a delivery leaves amplification
	// and duplicates unknown: overall, and for each cohort it hit.
	if ext.Unidentified > 0 {
		s.Amplification, s.Duplicates = nil, nil
		for ci := range s.Cohorts {
			if unidentCohorts[ci] {
				s.Cohorts[ci].Amplification = nil
				// An unidentified attempt may be a retry: the retries of
				// that cohort's outages are unknown too, never a short count.
				for oi := range s.Outages {
					if s.Outages[oi].Partner == s.Cohorts[ci].Name {
						s.Outages[oi].Retries = nil
					}
				}
			}
		}
	}
	run.Policy = append(run.Policy, reports.KV{Key: "system", Value: ext.System}, reports.KV{Key: "system.dead_letters", Value: h.sys.DeadLetters},
		reports.KV{Key: "system.key_header", Value: h.sys.KeyHeader})
	gates, gerr := reports.ParseGates(d.Gates)
	if gerr != nil {
		return nil, gerr
	}
	reports.EvalGates(s, gates)
	reports.AddFindings(s, findings(h, st, s, findingCounts{
		refused: refused, refusedSeen: refusedSeen, noKey: noKey, badKey: badKey, unknownDead: unknownDead,
		unidentCohorts: unidentCohorts,
	}), d.Expect)
	if err != nil {
		return run, fmt.Errorf("%w (unresolved counts as pending)", err)
	}
	return run, nil
}

// feed tells the tally one fact.
func feed(t *tally.Tally, f *fact, obs []fakepartner.Observation, dels []delivery, ss []seen) {
	at := time.Duration(f.at)
	switch f.kind {
	case factStart:
		t.AttemptStarted(at, int(f.sub), int(f.n))
	case factEnd:
		t.AttemptEnded(at, int(f.sub), outcome(&obs[f.n]))
		if o := &obs[f.n]; o.Commit && o.DroppedAnswer {
			t.LostAck() // the partner recorded it and dropped the answer
		}
	case factDelivered:
		t.Delivered(at, int(f.sub), dels[f.n].created)
	case factDead:
		t.DeadLettered(at, int(f.sub), dels[f.n].created, ss[f.n].deadWhy)
	}
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

// createdHeap is a min-heap of delivery indexes by creation time.
type createdHeap struct {
	dels []delivery
	idx  []int
}

func (h *createdHeap) Len() int           { return len(h.idx) }
func (h *createdHeap) Less(i, j int) bool { return h.dels[h.idx[i]].created < h.dels[h.idx[j]].created }
func (h *createdHeap) Swap(i, j int)      { h.idx[i], h.idx[j] = h.idx[j], h.idx[i] }
func (h *createdHeap) Push(x any)         { h.idx = append(h.idx, x.(int)) }
func (h *createdHeap) Pop() any {
	x := h.idx[len(h.idx)-1]
	h.idx = h.idx[:len(h.idx)-1]
	return x
}
