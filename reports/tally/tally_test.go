package tally

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stormdrill/stormdrill/fakepartner"
	"github.com/stormdrill/stormdrill/model"
	"github.com/stormdrill/stormdrill/reports"
)

// two cohorts: "ok" (2 healthy subscribers) and "down" (2 subscribers, an
// outage from 10s to 20s hitting member 0 only).
func testLayout() *Layout {
	return NewLayout([]fakepartner.Spec{
		{Name: "ok", Count: 2},
		{Name: "down", Count: 2, Outages: []fakepartner.Outage{{Start: 10 * time.Second, For: 10 * time.Second, Members: 1}}},
	}, nil)
}

func newTestTally(cl *model.Classifier) *Tally {
	return New(Config{Drill: "t", Mode: "sim", Layout: testLayout(), Interval: 10 * time.Second, SLO: 5 * time.Second, Classifier: cl, Breakers: true})
}

func TestLayout(t *testing.T) {
	l := testLayout()
	if len(l.Subscribers) != 4 || l.Subscribers[2].Name != "down-0" || l.Subscribers[2].Healthy || !l.Subscribers[3].Healthy {
		t.Fatalf("subscribers %+v", l.Subscribers)
	}
	if len(l.Outages) != 1 || l.Outages[0].Lo != 2 || l.Outages[0].Hi != 3 || l.Outages[0].End != 20*time.Second {
		t.Fatalf("outages %+v", l.Outages)
	}
	if i, ok := l.Index("down-1"); !ok || i != 3 {
		t.Fatalf("Index(down-1) = %d, %v", i, ok)
	}
	if f := l.Fanout(); !slices.Equal(f, []int{0, 1, 2, 3}) {
		t.Fatalf("fanout %v", f)
	}
	if f := NewLayout([]fakepartner.Spec{{Name: "a", Count: 1}, {Name: "b", Count: 2}, {Name: "c", Count: 1}, {Name: "d", Count: 2}}, []string{"b", "d"}).Fanout(); !slices.Equal(f, []int{1, 2, 4, 5}) {
		t.Fatalf("fanout to b and d: %v", f)
	}
}

// Index answers as a map of every subscriber's name would, on cohort names
// that hold dashes and digits, and on two cohorts of one name.
func TestLayoutIndexAsAMapOfNames(t *testing.T) {
	l := NewLayout([]fakepartner.Spec{
		{Name: "a", Count: 12}, {Name: "a-1", Count: 3}, {Name: "b-2-x", Count: 2}, {Name: "", Count: 2},
		{Name: "dup", Count: 5}, {Name: "dup", Count: 2},
	}, nil)
	want := map[string]int{}
	for i, s := range l.Subscribers {
		want[s.Name] = i
	}
	probes := []string{"a-01", "a-+1", "a-", "a", "a-12", "a-1-3", "zz-0", "-", "--0", "a-1-", "dup-00", "b-2-x-2", "a-99999999999999999999"}
	for name := range want {
		probes = append(probes, name)
	}
	for _, name := range probes {
		w, wok := want[name]
		if i, ok := l.Index(name); ok != wok || i != w {
			t.Errorf("Index(%q) = %d, %v; a map of names says %d, %v", name, i, ok, w, wok)
		}
	}
	if i, _ := l.Index("dup-3"); l.Subscribers[i].Cohort != 4 {
		t.Errorf("dup-3 is in cohort %d, want 4", l.Subscribers[i].Cohort)
	}
}

// A fact fed after the sample that closed its interval lands in that
// interval, and every count column sums to the summary's figure.
func TestLateFactsLandInTheirInterval(t *testing.T) {
	tl := newTestTally(nil)
	s := time.Second
	tl.Created(0, 3)
	tl.AttemptStarted(1*s, 0, 1)
	tl.Sample(10*s, Gauges{})
	tl.Sample(20*s, Gauges{})
	// Late: observed after both samples.
	tl.AttemptStarted(12*s, 0, 2)
	tl.DeadLettered(15*s, 0, 0, string(model.ReasonMaxAttempts))
	tl.DeadLettered(5*s, 0, 0, string(model.ReasonPermanent))
	// After the last sample: folded into the last row.
	tl.DeadLettered(25*s, 0, 0, string(model.ReasonMaxAttempts))
	tl.End(26 * s)
	run, err := tl.Run()
	if err != nil {
		t.Fatal(err)
	}
	rows := run.Timeseries.Samples
	if len(rows) != 2 {
		t.Fatalf("%d rows", len(rows))
	}
	if rows[0].FirstAttemptsPerS != 0.1 || rows[1].RetriesPerS != 0.1 {
		t.Errorf("attempt rates %+v / %+v", rows[0], rows[1])
	}
	if rows[1].RunningAmplification != 2 {
		t.Errorf("running amplification %v, want 2", rows[1].RunningAmplification)
	}
	maxAtt := 0
	for i, r := range model.Reasons {
		if r == model.ReasonMaxAttempts {
			maxAtt = i
		}
	}
	if rows[0].DLQByReason[maxAtt] != 0 || rows[1].DLQByReason[maxAtt] != 2 {
		t.Errorf("max-attempts dead letters by row %v %v, want 0 2", rows[0].DLQByReason, rows[1].DLQByReason)
	}
	sums := map[string]float64{}
	var dlq float64
	for _, r := range rows {
		for i, reason := range run.Timeseries.Reasons {
			sums[reason] += r.DLQByReason[i]
		}
		dlq += r.DLQPerS * run.Timeseries.IntervalS
	}
	for reason, n := range run.Summary.DeadLetterReasons {
		if sums[reason] != float64(n) {
			t.Errorf("series sums %v dead letters %s, summary %d", sums[reason], reason, n)
		}
	}
	if dlq != float64(run.Summary.Deliveries.DeadLettered) {
		t.Errorf("dlq_per_s × interval sums to %v, summary %d", dlq, run.Summary.Deliveries.DeadLettered)
	}
}

// Statuses are classified with the configured classifier, overrides
// included.
func TestAttemptEndedUsesTheClassifier(t *testing.T) {
	cl := &model.Classifier{Overrides: map[int]model.Class{503: model.ClassPermanent, 422: model.ClassRetryable}}
	tl := newTestTally(cl)
	if c := tl.AttemptEnded(time.Second, 0, model.Outcome{Status: 503}); c != model.ClassPermanent {
		t.Errorf("503 → %v", c)
	}
	if c := tl.AttemptEnded(time.Second, 0, model.Outcome{Status: 422}); c != model.ClassRetryable {
		t.Errorf("422 → %v", c)
	}
	tl.AttemptEnded(time.Second, 0, model.Outcome{Err: model.ErrTimeout})
	tl.AttemptEnded(time.Second, 0, model.Outcome{Err: model.ErrReset})
	tl.AttemptEnded(time.Second, 0, model.Outcome{Status: 200})
	tl.Sample(10*time.Second, Gauges{})
	tl.End(10 * time.Second)
	run, _ := tl.Run()
	r := run.Timeseries.Samples[0]
	if r.PermanentPerS != 0.1 || r.TransientPerS != 0.1 || r.TimeoutPerS != 0.1 || r.ResetPerS != 0.1 || r.SuccessesPerS != 0.1 {
		t.Errorf("row %+v, want one of each per 10s", r)
	}
}

// Status codes are counted per cohort by name; past MaxStatusCodes distinct
// names further ones count as "other", so the map stays bounded.
func TestStatusCodesBounded(t *testing.T) {
	tl := newTestTally(nil)
	at := time.Second
	for i := range MaxStatusCodes + 5 {
		tl.AttemptEnded(at, 0, model.Outcome{Status: 200 + i})
		tl.AttemptEnded(at, 0, model.Outcome{Status: 200 + i}) // every code twice
	}
	tl.AttemptEnded(at, 2, model.Outcome{Err: model.ErrTimeout})
	tl.AttemptEnded(at, 2, model.Outcome{Err: model.ErrRefused})
	tl.AttemptEnded(at, 3, model.Outcome{Err: model.ErrReset})
	tl.AttemptEnded(at, 3, model.Outcome{})
	tl.AttemptEnded(at, 3, model.Outcome{Status: 503})
	tl.End(at)
	run, err := tl.Run()
	if err != nil {
		t.Fatal(err)
	}
	ok := run.Summary.Cohorts[0].StatusCodes
	if len(ok) != MaxStatusCodes+1 || ok["200"] != 2 || ok["231"] != 2 || ok["other"] != 10 {
		t.Errorf("cohort ok: %d codes %v, want 200 and 231 (twice each), other 10", len(ok), ok)
	}
	if _, kept := ok["232"]; kept {
		t.Errorf("code 232 counted by name past the bound: %v", ok)
	}
	down := run.Summary.Cohorts[1].StatusCodes
	if len(down) != 5 || down["503"] != 1 || down["timeout"] != 1 || down["reset"] != 1 || down["refused"] != 1 || down["no answer"] != 1 {
		t.Errorf("cohort down: %v", down)
	}
}

// Drain time: from the outage's end to the last terminal delivery to the
// hit subscribers created before it; not drained while one is pending or
// before the outage ended.
func TestDrainTrack(t *testing.T) {
	s := time.Second
	for _, tc := range []struct {
		name  string
		feed  func(*Tally)
		end   time.Duration
		drain float64 // -1: not drained
	}{
		{"drained 7s after the end", func(tl *Tally) {
			tl.Created(2, 2)
			tl.Delivered(12*s, 2, 11*s)
			tl.Delivered(27*s, 2, 15*s)
		}, 30 * s, 7},
		{"created after the end does not count", func(tl *Tally) {
			tl.Created(2, 2)
			tl.Delivered(12*s, 2, 11*s)
			tl.Delivered(40*s, 2, 21*s)
		}, 50 * s, 0},
		{"other subscribers do not count", func(tl *Tally) {
			tl.Created(3, 1)
			tl.Pending(3, 11*s, 1)
		}, 30 * s, 0},
		{"pending: not drained", func(tl *Tally) {
			tl.Created(2, 2)
			tl.Delivered(12*s, 2, 11*s)
			tl.Pending(2, 19*s, 1)
		}, 30 * s, -1},
		{"outage not over: not drained", func(tl *Tally) {}, 15 * s, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tl := newTestTally(nil)
			tl.End(tc.end)
			tc.feed(tl)
			run, err := tl.Run()
			if err != nil {
				t.Fatal(err)
			}
			got := run.Summary.Outages[0].DrainTimeS
			switch {
			case tc.drain < 0 && got != nil:
				t.Errorf("drain %v, want not drained", *got)
			case tc.drain >= 0 && (got == nil || *got != tc.drain):
				t.Errorf("drain %v, want %v", got, tc.drain)
			}
		})
	}
}

func TestAccountingAndSLO(t *testing.T) {
	s := time.Second
	tl := newTestTally(nil)
	tl.Created(0, 4)
	tl.Delivered(2*s, 0, 0)                                   // within
	tl.Delivered(20*s, 0, 0)                                  // late
	tl.DeadLettered(3*s, 0, 0, string(model.ReasonPermanent)) // bad data: left out
	tl.End(30 * s)
	tl.Pending(0, 29*s, 1) // young: left out
	run, err := tl.Run()
	if err != nil {
		t.Fatal(err)
	}
	if got := run.Summary.HealthyWithinSLO; got != 0.5 {
		t.Errorf("healthy within SLO %v, want 0.5", got)
	}
	c := run.Summary.Cohorts[0]
	if c.Deliveries != 4 || c.Delivered != 2 || c.DeadLettered != 1 || c.Pending != 1 || c.LatencyS.Count != 2 {
		t.Errorf("cohort %+v", c)
	}
	if run.Summary.Cohorts[1].LatencyS.Count != 0 {
		t.Errorf("empty cohort has latency %+v", run.Summary.Cohorts[1].LatencyS)
	}
	tl = newTestTally(nil)
	tl.Created(1, 2)
	tl.Delivered(s, 1, 0)
	tl.End(s)
	run, err = tl.Run()
	if !errors.Is(err, ErrAccounting) || run == nil || run.Summary.Deliveries.Lost != 1 {
		t.Fatalf("one delivery unaccounted for: err %v, run %v", err, run)
	}
}

// TestOutageCost: an outage's retries run from its start until its backlog
// drained (the whole run when it never did), and its dead letters are
// those of deliveries to its subscribers created before it ended.
func TestOutageCost(t *testing.T) {
	s := time.Second
	for _, drained := range []bool{true, false} {
		tl := newTestTally(nil)
		tl.End(60 * s)
		created := int64(3)
		if !drained {
			created = 4 // and one still pending
		}
		tl.Created(2, created)
		tl.Created(3, 1)
		tl.AttemptStarted(5*s, 2, 2)  // before the outage
		tl.AttemptStarted(12*s, 3, 2) // a subscriber it does not hit
		tl.AttemptStarted(12*s, 2, 2)
		tl.AttemptStarted(15*s, 2, 3)
		tl.DeadLettered(18*s, 2, 11*s, "max-attempts")
		tl.DeadLettered(18*s, 3, 11*s, "max-attempts")
		tl.AttemptStarted(22*s, 2, 2)               // after its end, before the drain
		tl.DeadLettered(26*s, 2, 25*s, "permanent") // created after its end
		tl.Delivered(27*s, 2, 15*s)                 // the backlog is gone
		tl.AttemptStarted(29*s, 2, 2)
		if !drained {
			tl.Pending(2, 19*s, 1)
		}
		run, err := tl.Run()
		if err != nil {
			t.Fatal(err)
		}
		o := run.Summary.Outages[0]
		wantRetries := int64(3)
		if !drained {
			wantRetries = 4
		}
		if o.Retries == nil || *o.Retries != wantRetries || o.DeadLetters == nil || *o.DeadLetters != 1 {
			t.Errorf("drained %v: retries %v, dead letters %v; want %d and 1", drained, o.Retries, o.DeadLetters, wantRetries)
		}
	}
}

// A tally whose histograms cover latencies up to an hour reads as one that
// covers every latency, once latencies of hours and days arrive in the
// middle of the run: the fronts grow before the first of them is counted.
func TestShortCoverReadsAsFullCover(t *testing.T) {
	newTally := func(d time.Duration) *Tally {
		return New(Config{Drill: "t", Mode: "sim", Duration: d, Layout: testLayout(), Interval: 10 * time.Second, SLO: 5 * time.Second})
	}
	short, full := newTally(time.Minute), newTally(100*24*time.Hour)
	if n := len(short.healthy.front); n >= short.healthy.g.countsLen() || len(full.healthy.front) != full.healthy.g.countsLen() {
		t.Fatalf("fronts of %d and %d counts, want the short one shorter", n, len(full.healthy.front))
	}
	r := rand.New(rand.NewPCG(11, 12))
	s := time.Second
	at := time.Duration(0)
	for k := 0; k < 6000; k++ {
		at += 10 * time.Millisecond
		lat := time.Duration(80e6 * math.Exp(r.NormFloat64()))
		if k > 3000 && k%97 == 0 {
			lat = time.Duration(r.Int64N(int64(200 * 24 * time.Hour))) // hours to past the bounds
		}
		created := at - min(lat, at)
		sub := k % 4
		for _, tl := range []*Tally{short, full} {
			tl.Created(sub, 1)
			tl.Delivered(created+lat, sub, created)
			if k%1000 == 999 {
				tl.Sample(at+s, Gauges{})
			}
		}
	}
	if len(short.healthy.front) != short.healthy.g.countsLen() {
		t.Fatalf("short front has %d counts after long latencies", len(short.healthy.front))
	}
	var runs [2]*reports.Run
	for i, tl := range []*Tally{short, full} {
		tl.End(at + s)
		run, err := tl.Run()
		if err != nil {
			t.Fatal(err)
		}
		runs[i] = run
	}
	a, b := runs[0], runs[1]
	if a.Summary.HealthyLatencyS != b.Summary.HealthyLatencyS || a.Summary.HealthyLatencyOutageS != b.Summary.HealthyLatencyOutageS {
		t.Errorf("healthy latency %+v / %+v, full cover %+v / %+v", a.Summary.HealthyLatencyS, a.Summary.HealthyLatencyOutageS, b.Summary.HealthyLatencyS, b.Summary.HealthyLatencyOutageS)
	}
	if a.Summary.HealthyLatencyS.Count == 0 || a.Summary.HealthyLatencyOutageS.Count == 0 {
		t.Fatalf("no healthy latencies counted: %+v", a.Summary.HealthyLatencyS)
	}
	for i := range a.Summary.Cohorts {
		if a.Summary.Cohorts[i].LatencyS != b.Summary.Cohorts[i].LatencyS {
			t.Errorf("cohort %d latency %+v, full cover %+v", i, a.Summary.Cohorts[i].LatencyS, b.Summary.Cohorts[i].LatencyS)
		}
	}
	if !slices.Equal(a.HealthyCDF, b.HealthyCDF) || !slices.Equal(a.HealthyOutageCDF, b.HealthyOutageCDF) {
		t.Errorf("CDFs differ from the full cover's")
	}
	for k := range a.Timeseries.Samples {
		x, y := a.Timeseries.Samples[k], b.Timeseries.Samples[k]
		if x.HealthyLatencyP50S != y.HealthyLatencyP50S || x.HealthyLatencyP99S != y.HealthyLatencyP99S {
			t.Errorf("row %d: healthy p50/p99 %v/%v, full cover %v/%v", k, x.HealthyLatencyP50S, x.HealthyLatencyP99S, y.HealthyLatencyP50S, y.HealthyLatencyP99S)
		}
	}
}

// The sampled rows, kept encoded, read back as they were sampled: gauges
// of every shape (nil and empty slices kept apart, NaN and fractions
// kept), and late facts added to their row, per-cohort columns included.
func TestSampledRowsReadBack(t *testing.T) {
	tl := newTestTally(nil)
	s := time.Second
	gauges := []Gauges{
		{},
		{Ready: 1 << 40, Delayed: 3, InFlight: 7, OldestReadyAge: 90 * time.Minute, OldestDelayedAge: time.Nanosecond, SourceHeldBack: 0.25,
			Breaker: []float64{0, 1, 2}, CohortOldestAge: []time.Duration{0, 5 * s}},
		{SourceHeldBack: math.NaN(), Breaker: []float64{}, CohortOldestAge: []time.Duration{}},
		{Ready: -1, SourceHeldBack: -1e300, Breaker: []float64{math.Inf(1)}, CohortOldestAge: []time.Duration{-s, math.MaxInt64}},
	}
	for k, g := range gauges {
		tl.Created(k%4, 1)
		tl.AttemptStarted(time.Duration(k)*10*s+s, k%4, 1)
		tl.Sample(time.Duration(k+1)*10*s, g)
	}
	tl.AttemptStarted(15*s, 2, 1) // late: row 1, cohort 1
	tl.AttemptStarted(16*s, 0, 2) // late: row 1, cohort 0, a retry
	tl.End(45 * s)
	for i := range 4 {
		tl.Pending(i%4, 0, 1)
	}
	run, err := tl.Run()
	if err != nil {
		t.Fatal(err)
	}
	rows := run.Timeseries.Samples
	if len(rows) != len(gauges) {
		t.Fatalf("%d rows, want %d", len(rows), len(gauges))
	}
	same := func(a, b float64) bool { return a == b || (a != a && b != b) }
	for k, g := range gauges {
		x := rows[k]
		if x.Ready != float64(g.Ready) || x.Delayed != float64(g.Delayed) || x.InFlight != float64(g.InFlight) ||
			x.OldestReadyAgeS != g.OldestReadyAge.Seconds() || x.OldestDelayedAgeS != g.OldestDelayedAge.Seconds() || !same(x.SourceHeldBack, g.SourceHeldBack) {
			t.Errorf("row %d: %+v, sampled %+v", k, x, g)
		}
		if (x.Breaker == nil) != (g.Breaker == nil) || !slices.EqualFunc(x.Breaker, g.Breaker, same) {
			t.Errorf("row %d: breaker %#v, sampled %#v", k, x.Breaker, g.Breaker)
		}
		for c := range x.CohortOldestAgeS {
			want := 0.0
			if c < len(g.CohortOldestAge) {
				want = g.CohortOldestAge[c].Seconds()
			}
			if x.CohortOldestAgeS[c] != want {
				t.Errorf("row %d: cohort %d oldest %v, want %v", k, c, x.CohortOldestAgeS[c], want)
			}
		}
	}
	if got := rows[1].CohortFirstAttemptsPerS; !slices.Equal(got, []float64{0.1, 0.1}) {
		t.Errorf("row 1 first attempts per cohort %v, want [0.1 0.1] (one sampled, one late)", got)
	}
	if got := rows[1].CohortRetriesPerS; !slices.Equal(got, []float64{0.1, 0}) {
		t.Errorf("row 1 retries per cohort %v, want [0.1 0] (late)", got)
	}
}
