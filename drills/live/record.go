package live

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/stormdrill/stormdrill/drills"
	"github.com/stormdrill/stormdrill/fakepartner"
	"github.com/stormdrill/stormdrill/model"
	"github.com/stormdrill/stormdrill/reports"
)

// liveRecorder samples the store and the partners' counters and builds the
// report at the end. Every time it reports is drill time, except lateness,
// which is wall time (it measures the harness, not the pipeline).
type liveRecorder struct {
	r        *runner
	interval time.Duration // drill time
	endDT    time.Duration

	prevStats []fakepartner.PartnerStats
	prevDead  int64
	prevByRsn map[string]int64
	lastDead  int64

	attempts, first int64 // running totals from the partners (ordinal 1 = first)
	samples         []reports.Sample
	breakerCols     []string

	peakAttemptsPerS float64
	peakPending      int64
	maxReadyAge      float64
	maxDelayedAge    float64
}

func newLiveRecorder(r *runner) *liveRecorder {
	d := r.d
	rec := &liveRecorder{r: r, interval: d.SampleInterval.D, prevByRsn: map[string]int64{}}
	total := d.Duration.D + d.Drain.D
	if rec.interval <= 0 {
		rec.interval = time.Second
	}
	if int64(total/rec.interval) > drills.MaxSamples {
		rec.interval = (total + drills.MaxSamples - 1) / drills.MaxSamples
	}
	// A sample costs a few store queries; keep at least 20ms of wall time
	// between them.
	rec.interval = max(rec.interval, r.clock.Drill(20*time.Millisecond))
	if d.BreakerEnabled() {
		for _, s := range r.subs {
			if !s.Healthy && len(rec.breakerCols) < drills.MaxBreakerColumns {
				rec.breakerCols = append(rec.breakerCols, s.Name)
			}
		}
	}
	rec.prevStats = r.srv.Stats()
	return rec
}

func sumOrdinals(st fakepartner.PartnerStats) (first, all int64) {
	for i, n := range st.ByAttempt {
		if i == 0 {
			first += n
		}
		all += n
	}
	return first, all
}

// sample records one row at drill time dt and returns how many deliveries
// are not terminal.
func (rec *liveRecorder) sample(dt time.Duration) (pending int64, err error) {
	r := rec.r
	now := r.clock.Start.Add(dt).UnixNano()
	var readyDue, leasedDue, delayed, delivered, dead int64
	var oldReady, oldDelayed *int64
	// Due rows of a partner whose breaker is not closed wait out the
	// breaker, not a worker: they are delayed, as the simulation's
	// Snapshot counts them. The runner knows the breaker states from the
	// dispatcher's transition lines. With every breaker closed (the usual
	// case) the partner conditions are left out of the query altogether.
	held := rec.heldPartners()
	// Rows created after now were injected between the sample's clock
	// reading and the query; they are left out (the pending correction
	// below counts them), or they would read as delayed with a negative age.
	q, args := sampleSQL, []any{now}
	if held != "" {
		q, args = sampleHeldSQL, []any{now, held}
	}
	var hReady, hLeased int64
	var hOldest *int64
	dst := []any{&readyDue, &leasedDue, &delayed, &delivered, &dead, &oldReady, &oldDelayed}
	if held != "" {
		dst = append(dst, &hReady, &hLeased, &hOldest)
	}
	if err = r.reader.DB().QueryRow(q, args...).Scan(dst...); err != nil {
		return 0, fmt.Errorf("live: sampling the store: %w", err)
	}
	// With held partners, readyDue, leasedDue and oldReady already leave
	// them out; their due rows join the delayed ones.
	delayed += hReady + hLeased
	if hOldest != nil && (oldDelayed == nil || *hOldest < *oldDelayed) {
		oldDelayed = hOldest
	}
	byReason := map[string]int64{}
	rows, err := r.reader.DB().Query(`SELECT reason, count(*) FROM dead_letters GROUP BY reason`)
	if err != nil {
		return 0, fmt.Errorf("live: sampling the store: %w", err)
	}
	for rows.Next() {
		var reason string
		var n int64
		if err := rows.Scan(&reason, &n); err == nil {
			byReason[reason] = n
		}
	}
	rows.Close()

	stats := r.srv.Stats()
	var iv struct{ first, all, succ, transient, permanent, timeout, reset int64 }
	for i, st := range stats {
		prev := rec.prevStats[i]
		f1, a1 := sumOrdinals(st)
		f0, a0 := sumOrdinals(prev)
		iv.first += f1 - f0
		iv.all += a1 - a0
		for code, n := range st.ByStatus {
			delta := n - prev.ByStatus[code]
			switch {
			case code >= 200 && code < 300:
				iv.succ += delta
			case code == 408 || code == 429 || (code >= 500 && code != 501):
				iv.transient += delta
			default:
				iv.permanent += delta
			}
		}
		iv.timeout += (st.Held - prev.Held) + (st.Abandoned - prev.Abandoned)
		iv.reset += st.Resets - prev.Resets
	}
	rec.prevStats = stats
	rec.attempts += iv.all
	rec.first += iv.first
	sec := rec.interval.Seconds()
	s := reports.Sample{
		T:                 dt.Seconds(),
		FirstAttemptsPerS: float64(iv.first) / sec,
		RetriesPerS:       float64(iv.all-iv.first) / sec,
		SuccessesPerS:     float64(iv.succ) / sec,
		TransientPerS:     float64(iv.transient) / sec,
		TimeoutPerS:       float64(iv.timeout) / sec,
		ResetPerS:         float64(iv.reset) / sec,
		PermanentPerS:     float64(iv.permanent) / sec,
		Ready:             float64(readyDue),
		Delayed:           float64(delayed),
		InFlight:          float64(leasedDue),
		DLQPerS:           float64(dead-rec.prevDead) / sec,
		SourceHeldBack:    float64(r.inj.heldBack.Load()),
	}
	if oldReady != nil {
		s.OldestReadyAgeS = max(0, float64(now-*oldReady)/1e9)
	}
	if oldDelayed != nil {
		s.OldestDelayedAgeS = max(0, float64(now-*oldDelayed)/1e9)
	}
	if iv.first > 0 {
		s.Amplification = float64(iv.all) / float64(iv.first)
	}
	if rec.first > 0 {
		s.RunningAmplification = float64(rec.attempts) / float64(rec.first)
	}
	s.DLQByReason = make([]float64, len(model.Reasons))
	for i, rs := range model.Reasons {
		s.DLQByReason[i] = float64(byReason[string(rs)]-rec.prevByRsn[string(rs)]) / sec
	}
	rec.prevByRsn = byReason
	rec.prevDead, rec.lastDead = dead, dead
	if len(rec.breakerCols) > 0 {
		s.Breaker = make([]float64, len(rec.breakerCols))
		r.mu.Lock()
		for i, name := range rec.breakerCols {
			s.Breaker[i] = r.breakerNow[name]
		}
		r.mu.Unlock()
	}
	pending = readyDue + leasedDue + delayed
	rec.peakAttemptsPerS = max(rec.peakAttemptsPerS, s.FirstAttemptsPerS+s.RetriesPerS)
	rec.peakPending = max(rec.peakPending, pending)
	rec.maxReadyAge = max(rec.maxReadyAge, s.OldestReadyAgeS)
	rec.maxDelayedAge = max(rec.maxDelayedAge, s.OldestDelayedAgeS)
	if len(rec.samples) < drills.MaxSamples {
		rec.samples = append(rec.samples, s)
	}
	// Pending also counts deliveries the injector has not written yet.
	pending += max(0, r.inj.created.Load()-(delivered+dead+readyDue+leasedDue+delayed))
	return pending, nil
}

// sampleSQL reads depths, totals and oldest ages in one statement (one
// snapshot); ?1 is the sample's drill time.
const sampleSQL = `SELECT
	(SELECT count(*) FROM deliveries WHERE state = 'ready' AND run_at <= ?1),
	(SELECT count(*) FROM deliveries WHERE state = 'leased' AND run_at <= ?1),
	(SELECT count(*) FROM deliveries WHERE state IN ('ready', 'leased') AND run_at > ?1 AND created <= ?1),
	(SELECT count(*) FROM deliveries WHERE state = 'delivered'),
	(SELECT count(*) FROM deliveries WHERE state = 'dead'),
	(SELECT min(created) FROM deliveries WHERE state IN ('ready', 'leased') AND run_at <= ?1),
	(SELECT min(created) FROM deliveries WHERE state IN ('ready', 'leased') AND run_at > ?1 AND created <= ?1)`

// sampleHeldSQL is sampleSQL when the partners in the JSON array ?2 have a
// breaker that is not closed: due rows count as ready, in flight or
// oldest ready only for the other partners, and the last three columns
// are the held partners' due rows (ready, leased, oldest created).
const sampleHeldSQL = `SELECT
	(SELECT count(*) FROM deliveries WHERE state = 'ready' AND run_at <= ?1
		AND partner NOT IN (SELECT value FROM json_each(?2))),
	(SELECT count(*) FROM deliveries WHERE state = 'leased' AND run_at <= ?1
		AND partner NOT IN (SELECT value FROM json_each(?2))),
	(SELECT count(*) FROM deliveries WHERE state IN ('ready', 'leased') AND run_at > ?1 AND created <= ?1),
	(SELECT count(*) FROM deliveries WHERE state = 'delivered'),
	(SELECT count(*) FROM deliveries WHERE state = 'dead'),
	(SELECT min(created) FROM deliveries WHERE state IN ('ready', 'leased') AND run_at <= ?1
		AND partner NOT IN (SELECT value FROM json_each(?2))),
	(SELECT min(created) FROM deliveries WHERE state IN ('ready', 'leased') AND run_at > ?1 AND created <= ?1),
	(SELECT count(*) FROM deliveries WHERE state = 'ready' AND run_at <= ?1
		AND partner IN (SELECT value FROM json_each(?2))),
	(SELECT count(*) FROM deliveries WHERE state = 'leased' AND run_at <= ?1
		AND partner IN (SELECT value FROM json_each(?2))),
	(SELECT min(created) FROM deliveries WHERE state IN ('ready', 'leased') AND run_at <= ?1
		AND partner IN (SELECT value FROM json_each(?2)))`

// heldPartners returns, as a JSON array for the sampling query, the
// partners whose breaker is open or half-open now ("" if none), as the
// dispatcher's transition lines last said.
func (rec *liveRecorder) heldPartners() string {
	r := rec.r
	r.mu.Lock()
	names := make([]string, 0, len(r.breakerNow))
	for name, st := range r.breakerNow {
		if st != 0 {
			names = append(names, name)
		}
	}
	r.mu.Unlock()
	if len(names) == 0 {
		return ""
	}
	js, err := json.Marshal(names)
	if err != nil {
		return ""
	}
	return string(js)
}

type outageTrack struct {
	cohort     int
	lo, hi     int           // affected subscriber indexes [lo, hi)
	end        time.Duration // drill time
	kind       string
	start      time.Duration
	open       bool  // a delivery created before end is not terminal
	lastDoneNS int64 // latest terminal time (drill ns since start) of those deliveries
}

// finish builds the run from the store and the partners.
func (r *runner) finish() (*reports.Run, error) {
	d, rec := r.d, r.rec
	startNS := r.clock.Start.UnixNano()
	endNS := int64(rec.endDT)
	sloNS := int64(d.SLO.DeliveryLatency.D)

	healthy, healthyOutage := drills.NewLatencyHist(), drills.NewLatencyHist()
	cohortHist := make([]*drills.LatencyHist, len(r.specs))
	for i := range cohortHist {
		cohortHist[i] = drills.NewLatencyHist()
	}
	var windows [][2]int64
	var tracks []outageTrack
	base := 0
	for ci := range r.specs {
		sp := &r.specs[ci]
		for _, o := range sp.Outages {
			windows = append(windows, [2]int64{int64(o.Start), int64(o.End())})
			hi := sp.Count
			if o.Members > 0 {
				hi = min(o.Members, sp.Count)
			}
			tracks = append(tracks, outageTrack{cohort: ci, lo: base, hi: base + hi, end: o.End(), start: o.Start, kind: o.Kind.String()})
		}
		base += sp.Count
	}
	type cohortCount struct{ deliveries, delivered, dead, pending, attempted int64 }
	cc := make([]cohortCount, len(r.specs))
	var delivered, dead, pending, attempted, healthyWithin, youngPending, unknown int64
	rows, err := r.reader.DB().Query(`SELECT partner, created, state, updated, attempt FROM deliveries`)
	if err != nil {
		return nil, fmt.Errorf("live: reading the store: %w", err)
	}
	for rows.Next() {
		var partner, state string
		var created, updated int64
		var attempt int
		if err := rows.Scan(&partner, &created, &state, &updated, &attempt); err != nil {
			rows.Close()
			return nil, fmt.Errorf("live: reading the store: %w", err)
		}
		si, ok := r.byName[partner]
		if !ok {
			unknown++
			continue
		}
		sub := r.subs[si]
		c := &cc[sub.Cohort]
		c.deliveries++
		if attempt > 0 {
			c.attempted++
			attempted++
		}
		createdDT := created - startNS
		terminal := state == "delivered" || state == "dead"
		switch state {
		case "delivered":
			delivered++
			c.delivered++
			lat := updated - created
			cohortHist[sub.Cohort].Record(lat)
			if sub.Healthy {
				healthy.Record(lat)
				if lat <= sloNS {
					healthyWithin++
				}
				for _, w := range windows {
					if createdDT >= w[0] && createdDT < w[1] {
						healthyOutage.Record(lat)
						break
					}
				}
			}
		case "dead":
			dead++
			c.dead++
		default:
			pending++
			c.pending++
			if sub.Healthy && endNS-createdDT < sloNS {
				youngPending++
			}
		}
		for i := range tracks {
			t := &tracks[i]
			if si < t.lo || si >= t.hi || createdDT >= int64(t.end) {
				continue
			}
			if !terminal {
				t.open = true
			} else {
				t.lastDoneNS = max(t.lastDoneNS, updated-startNS)
			}
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("live: reading the store: %w", err)
	}

	reasons := map[string]int64{}
	cohortReasons := make([]map[string]int64, len(r.specs))
	var healthyPermanent int64
	drows, err := r.reader.DB().Query(`SELECT partner, reason FROM dead_letters`)
	if err != nil {
		return nil, fmt.Errorf("live: reading the DLQ: %w", err)
	}
	for drows.Next() {
		var partner, reason string
		if err := drows.Scan(&partner, &reason); err != nil {
			drows.Close()
			return nil, err
		}
		reasons[reason]++
		if si, ok := r.byName[partner]; ok {
			sub := r.subs[si]
			if cohortReasons[sub.Cohort] == nil {
				cohortReasons[sub.Cohort] = map[string]int64{}
			}
			cohortReasons[sub.Cohort][reason]++
			if reason == string(model.ReasonPermanent) && sub.Healthy {
				healthyPermanent++
			}
		}
	}
	drows.Close()

	stats := r.srv.Stats()
	var totalReq, firstOrd, dups int64
	var byOrdinal []int64
	for _, st := range stats {
		totalReq += st.Requests
		dups += st.Duplicates
		for i, n := range st.ByAttempt {
			for len(byOrdinal) <= i {
				byOrdinal = append(byOrdinal, 0)
			}
			byOrdinal[i] += n
			if i == 0 {
				firstOrd += n
			}
		}
	}
	for len(byOrdinal) > 0 && byOrdinal[len(byOrdinal)-1] == 0 {
		byOrdinal = byOrdinal[:len(byOrdinal)-1]
	}
	// Deliveries the source still held back when the run ended (on_full =
	// "block") are created and pending, as the simulation counts them,
	// though no store has seen them.
	unwritten := r.inj.unwritten()
	created := r.inj.created.Load() + unwritten
	pending += unwritten
	r.inj.mu.Lock()
	lateness := r.inj.lateness.Percentiles()
	heldBackS, heldBackMaxS := r.inj.heldBackSum, r.inj.heldBackMax
	var healthyCreated int64
	for si, n := range r.inj.perSub {
		if r.subs[si].Healthy {
			healthyCreated += n
		}
	}
	r.inj.mu.Unlock()

	s := &reports.Summary{
		Drill: d.Name, Description: d.Description, Seed: d.Seed, Mode: "live", Speed: r.clock.Speed,
		DurationS:  d.Duration.D.Seconds(),
		DrillTimeS: rec.endDT.Seconds(),
		Offered:    d.Offered(r.specs),
		Deliveries: reports.Deliveries{Created: created, Delivered: delivered, DeadLettered: dead, Pending: pending},
		// Attempts are what the partners received: an attempt lost in a
		// kill still reached (or may have reached) its partner.
		Attempts:              reports.Attempts{Total: totalReq, First: attempted, Retries: max(0, totalReq-attempted), ByOrdinal: byOrdinal},
		OldestReadyAgeMaxS:    rec.maxReadyAge,
		OldestDelayedAgeMaxS:  rec.maxDelayedAge,
		HealthyLatencyS:       healthy.Percentiles(),
		HealthyLatencyOutageS: healthyOutage.Percentiles(),
		SLOS:                  d.SLO.DeliveryLatency.D.Seconds(),
		DeadLetterReasons:     reasons,
		Duplicates:            dups,
		PeakAttemptsPerS:      rec.peakAttemptsPerS,
		PeakPending:           rec.peakPending,
		Lateness:              &lateness,
		SourceHeldBackS:       heldBackS,
		SourceHeldBackMaxS:    heldBackMaxS,
		Restarts:              r.restarts,
	}
	if s.Attempts.ByOrdinal == nil {
		s.Attempts.ByOrdinal = []int64{}
	}
	r.mu.Lock()
	s.BreakerTransitions = append([]reports.BreakerTransition{}, r.transitions...)
	r.mu.Unlock()
	for _, a := range r.srv.Alerts() {
		s.Alerts = append(s.Alerts, reports.Alert{AtS: r.clock.At(a.At).Sub(r.clock.Start).Seconds(), Partner: a.Partner, Reason: a.Reason, Count: int64(a.Count)})
	}
	s.Deliveries.Lost = created - delivered - dead - pending
	if attempted > 0 {
		s.Amplification = float64(totalReq) / float64(attempted)
	}
	if denom := healthyCreated - youngPending - healthyPermanent; denom > 0 {
		s.HealthyWithinSLO = float64(healthyWithin) / float64(denom)
	} else {
		s.HealthyWithinSLO = 1
	}
	s.Outages = []reports.Outage{}
	allDrained := true
	var worst float64
	for _, t := range tracks {
		ro := reports.Outage{Partner: r.specs[t.cohort].Name, Kind: t.kind, StartS: t.start.Seconds(), EndS: t.end.Seconds()}
		if !t.open {
			v := max(0, float64(t.lastDoneNS-int64(t.end))/1e9)
			ro.DrainTimeS = &v
			worst = max(worst, v)
		} else {
			allDrained = false
		}
		s.Outages = append(s.Outages, ro)
	}
	if allDrained && len(tracks) > 0 {
		s.DrainTimeS = &worst
	}
	for ci, sp := range r.specs {
		c := cc[ci]
		rc := reports.Cohort{Name: sp.Name, Subscribers: sp.Count, Faulty: sp.Faulty(), Deliveries: c.deliveries,
			Delivered: c.delivered, DeadLettered: c.dead, Pending: c.pending, Attempts: stats[ci].Requests,
			LatencyS: cohortHist[ci].Percentiles(), DeadLetters: cohortReasons[ci]}
		if c.attempted > 0 {
			rc.Amplification = float64(rc.Attempts) / float64(c.attempted)
		}
		s.Cohorts = append(s.Cohorts, rc)
	}
	gates, err := reports.ParseGates(d.Gates)
	if err != nil {
		return nil, err
	}
	reports.EvalGates(s, gates)
	ts := &reports.Timeseries{IntervalS: rec.interval.Seconds(), Samples: rec.samples, BreakerPartners: rec.breakerCols}
	for _, rs := range model.Reasons {
		ts.Reasons = append(ts.Reasons, string(rs))
	}
	run := &reports.Run{Summary: s, Timeseries: ts, HealthyCDF: healthy.CDF(), HealthyOutageCDF: healthyOutage.CDF()}
	for _, kv := range d.PolicyEcho() {
		run.Policy = append(run.Policy, reports.KV{Key: kv[0], Value: kv[1]})
	}
	run.Policy = append(run.Policy, reports.KV{Key: "live", Value: fmt.Sprintf("speed ×%g (drill times in the report are drill time; lateness is wall time), lease %s, claim batch %d",
		r.clock.Speed, d.Dispatcher.LeaseTimeout.D, d.Dispatcher.ClaimBatch)})
	if math.IsNaN(s.Amplification) {
		s.Amplification = 0
	}
	if len(r.restarts) > 0 {
		run.Policy = append(run.Policy, reports.KV{Key: "live restarts", Value: fmt.Sprintf(
			"%d deliveries were delayed at a restart: %d kept their run_at until due, %d were not due yet at the end, %d moved",
			r.runAtKept+r.runAtMoved+int64(len(r.runAtWatch)), r.runAtKept, len(r.runAtWatch), r.runAtMoved)})
	}
	if r.runAtMoved > 0 {
		return run, fmt.Errorf("%w: %d deliveries, e.g. %s", ErrRunAtMoved, r.runAtMoved, strings.Join(r.runAtExample, "; "))
	}
	if s.Deliveries.Lost != 0 || unknown != 0 {
		return run, fmt.Errorf("%w: created %d = delivered %d + dead-lettered %d + pending %d + lost %d (store rows of unknown partners: %d)",
			drills.ErrAccounting, created, delivered, dead, pending, s.Deliveries.Lost, unknown)
	}
	return run, nil
}
