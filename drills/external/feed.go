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
	a := newAssembly(h, st)
	a.readAttempts()
	a.readDeadLetters()
	a.resolveDeliveries()
	a.t.Duplicates(a.duplicates)
	a.sampleLevels()
	a.endRun()
	a.externalFigures()
	run, err := a.t.Run()
	if run == nil {
		return nil, err
	}
	if gerr := a.summarize(run); gerr != nil {
		return nil, gerr
	}
	if err != nil {
		return run, fmt.Errorf("%w (unresolved counts as pending)", err)
	}
	return run, nil
}

// assembly is one assemble's state: the records it reads, the tally it
// feeds, and the figures only the partner side sees, gathered on the way.
type assembly struct {
	h    *harness
	st   *injectStats
	obs  []fakepartner.Observation // in arrival order
	dead []fakepartner.DeadLetter  // in report order
	dels []delivery
	byID map[string]int32
	t    *tally.Tally
	l    *tally.Layout
	ext  *reports.External

	ss         []seen      // per delivery
	facts      []fact      // what the tally is told
	flight     []edge      // +1 at each arrival, -1 at each answer
	downs      []downWin   // scripted outages, and the calls each took
	conc       []int       // highest concurrency seen, per cohort
	gaps       [][]float64 // gaps before a retry, by ordinal
	raGaps     []float64   // gaps before a retry sent a Retry-After
	duplicates int64

	// What went wrong outside the policy: the findings' counts.
	findingCounts
}

// downWin is a scripted outage and the calls its partners took while down.
type downWin struct {
	w     tally.OutageWindow
	o     fakepartner.Outage
	calls int64
}

// edge is a change of the requests in flight at drill time t.
type edge struct {
	t int64
	d int
}

// newAssembly takes a copy of the harness's records and sets up the tally.
func newAssembly(h *harness, st *injectStats) *assembly {
	h.rec.mu.Lock()
	a := &assembly{h: h, st: st,
		obs:  append([]fakepartner.Observation(nil), h.rec.obs...),
		dead: append([]fakepartner.DeadLetter(nil), h.rec.dead...),
		dels: append([]delivery(nil), h.rec.dels...),
		byID: h.rec.byID,
	}
	h.rec.mu.Unlock()
	sort.SliceStable(a.obs, func(i, j int) bool { return a.obs[i].Arrived.Before(a.obs[j].Arrived) })
	sort.SliceStable(a.dead, func(i, j int) bool { return a.dead[i].At.Before(a.dead[j].At) })

	a.t = h.d.NewTally(h.specs, "external", 1, tally.Interval(h.d.SampleInterval.D, st.end))
	a.l = a.t.Layout()
	a.ext = &reports.External{
		System:               systemText(h.sys),
		RunID:                h.runID,
		DeadLetterSource:     h.sys.DeadLetters,
		LostClaimed:          h.sys.DeadLetters != "none",
		UnidentifiedByCohort: map[string]int64{},
		IngestRefusedEvents:  st.refusedEvents,
	}
	for ci := range h.specs {
		for _, o := range h.specs[ci].Outages {
			a.downs = append(a.downs, downWin{o: o, w: a.l.Outages[len(a.downs)]})
		}
	}
	a.conc = make([]int, len(h.specs))
	a.ss = make([]seen, len(a.dels))
	for i := range a.ss {
		a.ss[i] = seen{lastRA: -1, firstAt: never, firstOK: never, commitAt: never, deadAt: never, terminal: never}
	}
	a.gaps = make([][]float64, MaxBackoffOrdinal+1)
	a.unidentCohorts = map[int]bool{}
	a.flight = make([]edge, 0, 2*len(a.obs))
	a.facts = make([]fact, 0, 2*len(a.obs)+len(a.dels))
	return a
}

// ns is wall time t as drill time.
func (a *assembly) ns(t time.Time) int64 { return int64(t.Sub(a.h.start)) }

// readAttempts reads the partners' records in arrival order: what the
// tally counts, and the gaps, Retry-After checks, calls while down and
// concurrency that only the partner side sees.
func (a *assembly) readAttempts() {
	for k := range a.obs {
		o := &a.obs[k]
		at, end := a.ns(o.Arrived), a.ns(o.Done)
		a.flight = append(a.flight, edge{at, 1}, edge{end, -1})
		sub, known := a.l.Index(o.Cohort + "-" + strconv.Itoa(o.Member))
		if known {
			ci := a.l.Subscribers[sub].Cohort
			a.conc[ci] = max(a.conc[ci], o.InFlight)
			if o.Down() {
				a.countDownCall(sub, at)
			}
		}
		idx, ok := a.byID[o.Key]
		if !ok || !known {
			a.unidentifiedAttempt(o, sub, known, at)
			continue
		}
		a.identifiedAttempt(k, int(idx), sub, at, end)
	}
}

// countDownCall counts a call that subscriber sub answered as down at
// drill time at against the scripted outages active then.
func (a *assembly) countDownCall(sub int, at int64) {
	for j := range a.downs {
		dw := &a.downs[j]
		if sub >= dw.w.Lo && sub < dw.w.Hi && dw.o.ActiveAt(time.Duration(at)) {
			dw.calls++
		}
	}
}

// unidentifiedAttempt counts an attempt the harness could not tie to a
// delivery, by what was wrong (no key at all, or a key it never issued),
// and the cohort it hit.
func (a *assembly) unidentifiedAttempt(o *fakepartner.Observation, sub int, known bool, at int64) {
	a.ext.Unidentified++
	a.ext.UnidentifiedByCohort[o.Cohort]++
	if known {
		a.unidentCohorts[a.l.Subscribers[sub].Cohort] = true
	}
	if o.Key == "" {
		a.noKey.add(at, "")
	} else {
		a.badKey.add(at, o.Key)
	}
}

// identifiedAttempt records observation k, an attempt at delivery idx:
// the tally's facts, the gap since the delivery's previous attempt, its
// first success and its commits.
func (a *assembly) identifiedAttempt(k, idx, sub int, at, end int64) {
	o, s := &a.obs[k], &a.ss[idx]
	s.attempts++
	s.firstAt = min(s.firstAt, at)
	ord := s.attempts
	a.facts = append(a.facts, fact{at: at, kind: factStart, sub: int32(sub), n: int32(ord)},
		fact{at: end, kind: factEnd, sub: int32(sub), n: int32(k)})
	if ord > 1 {
		a.retryGap(s, ord, at)
	}
	s.lastDone = end
	s.lastRA = -1
	if o.Status == http.StatusTooManyRequests || o.Status == http.StatusServiceUnavailable {
		s.lastRA = parseRetryAfter(o.RetryAfter, o.Done)
	}
	if o.Commit {
		if s.commitAt == never {
			s.commitAt = end
		} else {
			a.duplicates++
		}
	}
	if o.Status >= 200 && o.Status < 300 && s.firstOK == never {
		s.firstOK = end
	}
}

// retryGap records the gap before a retry of ordinal ord that arrived at
// drill time at, and checks it against the Retry-After the previous
// answer sent.
func (a *assembly) retryGap(s *seen, ord int, at int64) {
	gap := float64(at-s.lastDone) / 1e9
	if g := &a.gaps[min(ord, MaxBackoffOrdinal)]; len(*g) < maxGapSamples {
		*g = append(*g, gap)
	}
	if s.lastRA < 0 {
		return
	}
	a.ext.RetryAfter.Checked++
	if len(a.raGaps) < maxGapSamples {
		a.raGaps = append(a.raGaps, gap)
	}
	if at-s.lastDone < s.lastRA-int64(retryAfterSlack) {
		a.ext.RetryAfter.Early++
	}
}

// readDeadLetters ties each reported dead letter to its delivery; the
// first report of a delivery counts.
func (a *assembly) readDeadLetters() {
	for _, dl := range a.dead {
		idx, ok := a.byID[dl.ID]
		if !ok {
			a.ext.UnknownDeadLetters++
			a.unknownDead.add(a.ns(dl.At), dl.ID)
			continue
		}
		if s := &a.ss[idx]; s.deadAt == never {
			s.deadAt, s.deadWhy = a.ns(dl.At), dl.Reason
			if s.deadWhy == "" {
				s.deadWhy = "unknown"
			}
		}
	}
}

// resolveDeliveries decides how each delivery ended. One whose event the
// ingest refused for good, and that no partner and no dead letter ever
// showed, was never taken by the system: it is refused, not created (it
// ends at its arrival, so that no level counts it as waiting). Every other
// delivery was created at its scheduled arrival; it ended dead-lettered,
// delivered (the partner committed it; its latency runs to the first 2xx),
// or unresolved.
func (a *assembly) resolveDeliveries() {
	for i := range a.dels {
		dl, s := &a.dels[i], &a.ss[i]
		if dl.refused {
			if s.attempts == 0 && s.commitAt == never && s.deadAt == never {
				a.refused++
				s.terminal = int64(dl.created)
				continue
			}
			a.refusedSeen++
		}
		a.t.Created(int(dl.sub), 1)
		switch {
		case s.deadAt < s.commitAt:
			s.terminal = s.deadAt
			a.facts = append(a.facts, fact{at: s.deadAt, kind: factDead, sub: dl.sub, n: int32(i)})
		case s.commitAt != never:
			s.terminal = s.commitAt
			at := s.firstOK
			if at == never {
				at = s.commitAt
			}
			a.facts = append(a.facts, fact{at: at, kind: factDelivered, sub: dl.sub, n: int32(i)})
		}
	}
}

// sampleLevels tells the tally the facts in drill-time order, with the
// levels the partner side sees at every sample interval.
func (a *assembly) sampleLevels() {
	sort.SliceStable(a.facts, func(i, j int) bool { return a.facts[i].at < a.facts[j].at })
	lv := newLevels(a.dels, a.ss, a.flight, a.l, min(len(a.h.specs), tally.MaxCohortColumns))
	endNs := int64(a.st.end)
	iv := int64(a.t.Interval())
	fi := 0
	for k := int64(1); ; k++ {
		tm := min(k*iv, endNs)
		for ; fi < len(a.facts) && a.facts[fi].at < tm; fi++ {
			feed(a.t, &a.facts[fi], a.obs, a.dels, a.ss)
		}
		a.t.Sample(time.Duration(tm), lv.at(tm))
		if tm >= endNs {
			break
		}
	}
	// What ended after the last sample (a dead-letter command lists its
	// dead letters after the run) counts in the last interval.
	for ; fi < len(a.facts); fi++ {
		feed(a.t, &a.facts[fi], a.obs, a.dels, a.ss)
	}
}

// endRun ends the tally: what is unresolved is pending, and the source's
// lateness and held-back time, the restarts and the system's alerts are
// told.
func (a *assembly) endRun() {
	a.t.End(a.st.end)
	for i := range a.dels {
		if a.ss[i].terminal == never {
			a.t.Pending(int(a.dels[i].sub), a.dels[i].created, 1)
			a.ext.Unresolved++
		}
	}
	lateness := tally.NewLatencyHist()
	for _, v := range a.st.lateness {
		lateness.Record(int64(v * 1e9))
	}
	if lateness.Count() > 0 {
		a.t.Lateness(lateness.Percentiles())
	}
	a.t.SourceHeldBack(a.st.heldSum.Seconds(), a.st.heldMax.Seconds())
	for _, rs := range a.st.restarts {
		at := int64(rs.AtS * 1e9)
		for k := range a.obs {
			if s, e := a.ns(a.obs[k].Arrived), a.ns(a.obs[k].Done); s <= at && at < e {
				rs.InFlight++
			}
		}
		a.t.Restart(rs)
	}
	for _, al := range a.h.srv.Alerts() {
		a.t.Alert(reports.Alert{AtS: al.At.Sub(a.h.start).Seconds(), Partner: al.Partner, Reason: al.Reason, Count: int64(al.Count)})
	}
}

// externalFigures fills what only an external run shows: the observed
// backoff, Retry-After, calls while down and concurrency.
func (a *assembly) externalFigures() {
	ext := a.ext
	for ord := 2; ord <= MaxBackoffOrdinal; ord++ {
		g := a.gaps[ord]
		if len(g) == 0 {
			continue
		}
		sort.Float64s(g)
		ext.Backoff = append(ext.Backoff, reports.BackoffGap{Ordinal: ord, Count: int64(len(g)),
			P50S: quantile(g, 0.5), P90S: quantile(g, 0.9), MinS: g[0], MaxS: g[len(g)-1]})
	}
	if len(a.raGaps) > 0 {
		sort.Float64s(a.raGaps)
		lo, med := a.raGaps[0], quantile(a.raGaps, 0.5)
		ext.RetryAfter.ShortestGapS, ext.RetryAfter.MedianGapS = &lo, &med
	}
	ext.CallsWhileDown = []reports.DownCalls{}
	for _, dw := range a.downs {
		if dw.o.Kind.Info().Up {
			continue
		}
		ext.CallsWhileDown = append(ext.CallsWhileDown, reports.DownCalls{Partner: a.h.specs[dw.w.Cohort].Name, Kind: dw.w.Kind,
			StartS: dw.w.Start.Seconds(), EndS: dw.w.End.Seconds(), Calls: dw.calls})
	}
	for i := range a.h.specs {
		ext.Concurrency = append(ext.Concurrency, reports.Concurrency{Partner: a.h.specs[i].Name, Max: a.conc[i]})
	}
	if len(ext.UnidentifiedByCohort) == 0 {
		ext.UnidentifiedByCohort = nil
	}
}

// summarize completes the tally's run with the external figures, the
// system's settings, the gates and the findings.
func (a *assembly) summarize(run *reports.Run) error {
	s := run.Summary
	s.External = a.ext
	s.Deliveries.Refused = a.refused
	if a.ext.Unidentified > 0 {
		unknownWhereUnidentified(s, a.unidentCohorts)
	}
	run.Policy = append(run.Policy, reports.KV{Key: "system", Value: a.ext.System}, reports.KV{Key: "system.dead_letters", Value: a.h.sys.DeadLetters},
		reports.KV{Key: "system.key_header", Value: a.h.sys.KeyHeader})
	gates, err := reports.ParseGates(a.h.d.Gates)
	if err != nil {
		return err
	}
	reports.EvalGates(s, gates)
	reports.AddFindings(s, findings(a.h, a.st, s, a.findingCounts), a.h.d.Expect)
	return nil
}

// unknownWhereUnidentified makes amplification and duplicates unknown
// when the harness could not tie attempts to a delivery: overall, and for
// each cohort they hit.
func unknownWhereUnidentified(s *reports.Summary, cohorts map[int]bool) {
	s.Amplification, s.Duplicates = nil, nil
	for ci := range s.Cohorts {
		if !cohorts[ci] {
			continue
		}
		s.Cohorts[ci].Amplification = nil
		// An unidentified attempt may be a retry: the retries of that
		// cohort's outages are unknown too, never a short count.
		for oi := range s.Outages {
			if s.Outages[oi].Partner == s.Cohorts[ci].Name {
				s.Outages[oi].Retries = nil
			}
		}
	}
}

// levels are what the partner side can see at each sample: requests in
// flight, deliveries created and not resolved, and the oldest of those
// (the partner-side view of the oldest message's age), overall and per
// cohort. Each order is sorted once and walked by a cursor, so the samples
// cost O(n log n) in all.
type levels struct {
	dels []delivery
	ss   []seen

	flight      []edge
	byCreated   []int   // deliveries in creation order
	cohortOrder [][]int // the same, per cohort column
	terms       []int64 // when deliveries were resolved
	// The partner side splits the waiting deliveries as the queue does,
	// by what it can see: ready = created and never called yet (new work
	// waiting for a worker), delayed = called at least once and not yet
	// resolved (waiting for a retry, or in flight). left holds when each
	// delivery stopped being ready: its first call or its resolution.
	left    []int64
	byFirst []int // called deliveries, in first-call order
	// called holds the called deliveries not known to be resolved, oldest
	// created on top: each is pushed once at its first call and popped
	// once resolved.
	called *createdHeap

	inFlight               int64
	fl, ci, ti, ri, li, bi int   // cursors
	cohortP                []int // cursors into cohortOrder
}

func newLevels(dels []delivery, ss []seen, flight []edge, l *tally.Layout, ncol int) *levels {
	lv := &levels{dels: dels, ss: ss, flight: flight, called: &createdHeap{dels: dels}, cohortP: make([]int, ncol)}
	sort.Slice(lv.flight, func(i, j int) bool { return lv.flight[i].t < lv.flight[j].t })
	lv.byCreated = make([]int, len(dels))
	for i := range lv.byCreated {
		lv.byCreated[i] = i
	}
	sort.SliceStable(lv.byCreated, func(i, j int) bool { return dels[lv.byCreated[i]].created < dels[lv.byCreated[j]].created })
	lv.cohortOrder = make([][]int, ncol)
	for _, i := range lv.byCreated {
		if c := l.Subscribers[dels[i].sub].Cohort; c < ncol {
			lv.cohortOrder[c] = append(lv.cohortOrder[c], i)
		}
	}
	lv.terms = make([]int64, 0, len(dels))
	for i := range ss {
		if ss[i].terminal != never {
			lv.terms = append(lv.terms, ss[i].terminal)
		}
	}
	sort.Slice(lv.terms, func(i, j int) bool { return lv.terms[i] < lv.terms[j] })
	lv.left = make([]int64, 0, len(dels))
	lv.byFirst = make([]int, 0, len(dels))
	for i := range ss {
		if l := min(ss[i].firstAt, ss[i].terminal); l != never {
			lv.left = append(lv.left, l)
		}
		if ss[i].firstAt != never {
			lv.byFirst = append(lv.byFirst, i)
		}
	}
	sort.Slice(lv.left, func(i, j int) bool { return lv.left[i] < lv.left[j] })
	sort.SliceStable(lv.byFirst, func(i, j int) bool { return ss[lv.byFirst[i]].firstAt < ss[lv.byFirst[j]].firstAt })
	return lv
}

// at advances the cursors to drill time tm and returns the levels then.
func (lv *levels) at(tm int64) tally.Gauges {
	lv.advance(tm)
	var oldestDelayed time.Duration
	if lv.called.Len() > 0 {
		oldestDelayed = time.Duration(tm - int64(lv.dels[lv.called.idx[0]].created))
	}
	open, ready := int64(lv.ci-lv.ti), max(0, int64(lv.ci-lv.li))
	g := tally.Gauges{InFlight: lv.inFlight, Ready: ready, Delayed: max(0, open-ready-lv.inFlight),
		OldestReadyAge: lv.oldestReady(tm), OldestDelayedAge: oldestDelayed, CohortOldestAge: make([]time.Duration, len(lv.cohortOrder))}
	for c := range lv.cohortOrder {
		g.CohortOldestAge[c] = lv.oldest(lv.cohortOrder[c], &lv.cohortP[c], tm)
	}
	return g
}

// advance moves the counting cursors past what happened by tm.
func (lv *levels) advance(tm int64) {
	for lv.fl < len(lv.flight) && lv.flight[lv.fl].t <= tm {
		lv.inFlight += int64(lv.flight[lv.fl].d)
		lv.fl++
	}
	for lv.ci < len(lv.byCreated) && int64(lv.dels[lv.byCreated[lv.ci]].created) <= tm {
		lv.ci++
	}
	for lv.ti < len(lv.terms) && lv.terms[lv.ti] <= tm {
		lv.ti++
	}
	for lv.li < len(lv.left) && lv.left[lv.li] <= tm {
		lv.li++
	}
	for ; lv.bi < len(lv.byFirst) && lv.ss[lv.byFirst[lv.bi]].firstAt <= tm; lv.bi++ {
		heap.Push(lv.called, lv.byFirst[lv.bi])
	}
	for lv.called.Len() > 0 && lv.ss[lv.called.idx[0]].terminal <= tm {
		heap.Pop(lv.called)
	}
}

// oldestReady advances its cursor past the deliveries of byCreated called
// or resolved by tm (neither can become ready again) and returns the age
// at tm of the first one still waiting for its first call, 0 if none.
func (lv *levels) oldestReady(tm int64) time.Duration {
	bc, p := lv.byCreated, &lv.ri
	for *p < len(bc) && int64(lv.dels[bc[*p]].created) <= tm && min(lv.ss[bc[*p]].firstAt, lv.ss[bc[*p]].terminal) <= tm {
		*p++
	}
	if *p < len(bc) && int64(lv.dels[bc[*p]].created) <= tm {
		return time.Duration(tm - int64(lv.dels[bc[*p]].created))
	}
	return 0
}

// oldest advances p past the deliveries of order resolved by tm and
// returns the age at tm of the first one still open, 0 if none.
func (lv *levels) oldest(order []int, p *int, tm int64) time.Duration {
	for *p < len(order) && int64(lv.dels[order[*p]].created) <= tm && lv.ss[order[*p]].terminal <= tm {
		*p++
	}
	if *p < len(order) && int64(lv.dels[order[*p]].created) <= tm {
		return time.Duration(tm - int64(lv.dels[order[*p]].created))
	}
	return 0
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
