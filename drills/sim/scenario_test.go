package sim

import (
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/stormdrill/stormdrill/drills"
	"github.com/stormdrill/stormdrill/model"
	"github.com/stormdrill/stormdrill/reports"
)

// The six demo scenarios of the retry-pipeline teaching demo, each checked
// for the point it is there to make, from its time series and summary.

// outageWindow is the outage of a demo's single partner, in seconds.
func outageWindow(t *testing.T, d *drills.Drill) (start, end float64) {
	t.Helper()
	if len(d.Partners) != 1 || len(d.Partners[0].Outages) != 1 {
		t.Fatalf("%s: want one partner with one outage", d.Name)
	}
	o := d.Partners[0].Outages[0]
	return o.Start.D.Seconds(), (o.Start.D + o.For.D).Seconds()
}

// firstDLQ is the end of the first sample interval with a dead letter, or
// +Inf if none.
func firstDLQ(ts *reports.Timeseries) float64 {
	for _, s := range ts.Samples {
		if s.DLQPerS > 0 {
			return s.T
		}
	}
	return math.Inf(1)
}

// sumOver adds f(sample) × interval over samples whose interval lies in
// [from, to): a count from a per-second series.
func sumOver(ts *reports.Timeseries, from, to float64, f func(*reports.Sample) float64) float64 {
	var sum float64
	for i := range ts.Samples {
		s := &ts.Samples[i]
		if s.T-ts.IntervalS >= from && s.T <= to {
			sum += f(s) * ts.IntervalS
		}
	}
	return sum
}

func dlqRate(s *reports.Sample) float64                { return s.DLQPerS }
func attemptRate(s *reports.Sample) float64            { return s.FirstAttemptsPerS + s.RetriesPerS }
func heldBack(s *reports.Sample) float64               { return s.SourceHeldBack }
func queueDepth(s *reports.Sample) float64             { return s.Ready + s.Delayed }
func loadDemo(t *testing.T, name string) *drills.Drill { return loadDrill(t, name+".toml", nil) }

func TestDemoHealthy(t *testing.T) {
	// Given 10% transient errors and capacity to spare,
	d := loadDemo(t, "demo-healthy")
	// when the drill runs,
	s := runDrill(t, d).Summary
	// then retries absorb every error: nothing is dead-lettered and
	// amplification is about 1/(1−0.1).
	if s.Deliveries.DeadLettered != 0 || s.Deliveries.Delivered != s.Deliveries.Created {
		t.Errorf("deliveries %+v, want all delivered", s.Deliveries)
	}
	if s.Amplification == nil || *s.Amplification < 1.05 || *s.Amplification > 1.2 {
		t.Errorf("amplification %s, want about 1.11", reports.RatioText(s.Amplification))
	}
}

// The teaching scenario: 12 worker slots, calls of about 1.5s (a failing
// call too), about 2 arrivals/s, five attempts with 2/4/8/16s under equal
// jitter, a breaker of 5 consecutive failures with a 5s cooldown and one
// probe, a queue bound of 400. Its claims are checked over scenarioSeeds
// seeds: times within ±25% of the claim, rates within ±30%.
const (
	scenarioSeeds = 5
	timeTol       = 0.25
	rateTol       = 0.30
)

// seedRuns runs the demo once per seed, with extra overrides.
func seedRuns(t *testing.T, name string, extra map[string]string) []*reports.Run {
	t.Helper()
	var runs []*reports.Run
	for seed := 1; seed <= scenarioSeeds; seed++ {
		ov := map[string]string{"seed": strconv.Itoa(seed)}
		for k, v := range extra {
			ov[k] = v
		}
		runs = append(runs, runDrill(t, loadDrill(t, name+".toml", ov)))
	}
	return runs
}

// within reports whether got is within tol (a fraction) of want.
func within(got, want, tol float64) bool { return math.Abs(got-want) <= tol*want }

func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// slotsFullAfter is the time from start until every worker slot is busy
// at a sample, or +Inf.
func slotsFullAfter(ts *reports.Timeseries, start float64, workers int) float64 {
	for _, s := range ts.Samples {
		if s.T > start && s.InFlight >= float64(workers) {
			return s.T - start
		}
	}
	return math.Inf(1)
}

func TestDemoOutageNoBackoff(t *testing.T) {
	// Given a 2-minute outage whose failing calls take the partner's 1.5s,
	// retried at once,
	d := loadDemo(t, "demo-outage-no-backoff")
	start, end := outageWindow(t, d)
	workers := d.Dispatcher.Workers
	// when it runs over five seeds,
	var full, first, rate []float64
	for _, run := range seedRuns(t, "demo-outage-no-backoff", nil) {
		ts := run.Timeseries
		full = append(full, slotsFullAfter(ts, start, workers))
		first = append(first, firstDLQ(ts)-start)
		// the dead-letter rate once they flow: the outage's second half.
		mid := (start + end) / 2
		rate = append(rate, sumOver(ts, mid, end, dlqRate)/(end-mid))
		if r := run.Summary.DeadLetterReasons; r[string(model.ReasonMaxAttempts)] != run.Summary.Deliveries.DeadLettered || len(r) != 1 {
			t.Errorf("dead-letter reasons %v, want only max-attempts", r)
		}
	}
	t.Logf("slots full after %v s; first dead letter after %v s; dead letters %v /s", full, first, rate)
	// then all 12 slots are busy within about 10s (claim: within 10s),
	for _, f := range full {
		if f > 10*(1+timeTol) {
			t.Errorf("slots full after %vs, want within about 10s", f)
		}
	}
	// the first dead letters come once five failing calls of about 1.5s
	// have run back to back: 7.5s. The scenario says about 15s, which
	// needs about 3s per attempt and contradicts its own 2/s below (that
	// needs at most 1.2s per attempt from 12 slots); the table of docs/drill-format.md
	// says so. The demo keeps the scenario's parameters, so the assertion
	// is the figure they give, with the claims' tolerance,
	if f := mean(first); !within(f, 7.5, timeTol) {
		t.Errorf("first dead letter %vs after the outage start on average, want 7.5s ± 25%%", f)
	}
	// then they come at about what the pool can burn: 12 slots ÷ 1.5s ÷
	// 5 attempts = 1.6/s (the scenario says about 2/s).
	if r := mean(rate); !within(r, 12/1.5/5, rateTol) {
		t.Errorf("dead letters at %.2f/s in the outage's second half, want 1.6/s ± 30%%", r)
	}
}

func TestDemoOutageBackoff(t *testing.T) {
	// Given the same outage with 2/4/8/16s backoff under equal jitter,
	d := loadDemo(t, "demo-outage-backoff")
	start, _ := outageWindow(t, d)
	least, most := retrySchedule(t, d)
	if least != 15*time.Second || most != 30*time.Second {
		t.Fatalf("retry schedule %v to %v; the demo's policy (2s doubling to 32s, 5 attempts) gives 15s to 30s", least, most)
	}
	// when it runs over five seeds,
	var first []float64
	for _, run := range seedRuns(t, "demo-outage-backoff", nil) {
		first = append(first, firstDLQ(run.Timeseries)-start)
	}
	t.Logf("first dead letter after %v s", first)
	// then no dead letter comes for about 25s,
	if f := mean(first); !within(f, 25, timeTol) {
		t.Errorf("first dead letter %vs after the outage start on average, want 25s ± 25%%", f)
	}
	for _, f := range first {
		if f < least.Seconds() {
			t.Errorf("a dead letter %vs after the outage start, before the schedule's least length %v", f, least)
		}
	}
	// and an outage that ends inside that window loses nothing.
	for _, run := range seedRuns(t, "demo-outage-backoff", map[string]string{"partners[0].outages[0].for": "20s"}) {
		if s := run.Summary; s.Deliveries.DeadLettered != 0 || s.Deliveries.Delivered != s.Deliveries.Created {
			t.Errorf("20s outage: deliveries %+v, want all delivered", s.Deliveries)
		}
	}
}

func TestDemoOutageBreaker(t *testing.T) {
	// Given the same outage with backoff and a breaker that opens after 5
	// consecutive failures (cooldown 5s, one probe, hold),
	d := loadDemo(t, "demo-outage-breaker")
	start, end := outageWindow(t, d)
	cooldown := d.Policy.Breaker.Cooldown.D.Seconds()
	// when it runs over five seeds next to the same drill without a breaker,
	without := seedRuns(t, "demo-outage-backoff", nil)
	for i, run := range seedRuns(t, "demo-outage-breaker", nil) {
		// then once the breaker has opened, calls fall near zero while the
		// partner is down: about one probe per cooldown,
		from := start + 15
		with := sumOver(run.Timeseries, from, end, attemptRate) / (end - from)
		base := sumOver(without[i].Timeseries, from, end, attemptRate) / (end - from)
		if with > 1.5/cooldown || with > 0.05*base {
			t.Errorf("attempts during the outage: %.2f/s with the breaker, %.2f/s without; want about a probe per cooldown (%.2f/s) and under 5%% of without",
				with, base, 1/cooldown)
		}
		// the breaker opened within seconds of the start and closed
		// within a cooldown and a call of the end,
		var opened, closed float64 = math.Inf(1), math.Inf(1)
		for _, tr := range run.Summary.BreakerTransitions {
			if tr.To == "open" && opened == math.Inf(1) {
				opened = tr.AtS
			}
			if tr.To == "closed" && tr.AtS >= end && closed == math.Inf(1) {
				closed = tr.AtS
			}
		}
		if opened < start || opened > start+15 {
			t.Errorf("breaker first opened at %vs, want within 15s of the outage start %vs", opened, start)
		}
		if closed > end+cooldown+5 {
			t.Errorf("breaker closed at %vs, want within a cooldown of the outage end %vs", closed, end)
		}
		// and the held deliveries survive: nothing is dead-lettered.
		if s := run.Summary; s.Deliveries.DeadLettered != 0 || s.Deliveries.Delivered != s.Deliveries.Created {
			t.Errorf("deliveries %+v, want all delivered", s.Deliveries)
		}
	}
	// A 20s outage loses nothing either.
	for _, run := range seedRuns(t, "demo-outage-breaker", map[string]string{"partners[0].outages[0].for": "20s"}) {
		if s := run.Summary; s.Deliveries.DeadLettered != 0 || s.Deliveries.Delivered != s.Deliveries.Created {
			t.Errorf("20s outage: deliveries %+v, want all delivered", s.Deliveries)
		}
	}
}

func TestDemoBadData(t *testing.T) {
	// Given 15% of calls rejected as bad data (422),
	d := loadDemo(t, "demo-bad-data")
	// when the drill runs,
	_, run := runInternal(t, d)
	s := run.Summary
	// then bad data goes to the DLQ as permanent, on its first attempt:
	// every attempt is a first attempt, and every permanent dead letter
	// had one,
	perm := s.DeadLetterReasons[string(model.ReasonPermanent)]
	if perm == 0 || perm != s.Deliveries.DeadLettered {
		t.Fatalf("dead-letter reasons %v of %d, want all permanent", s.DeadLetterReasons, s.Deliveries.DeadLettered)
	}
	if byOrd := s.Attempts.ByOrdinal; len(byOrd) != 1 || byOrd[0] < perm {
		t.Errorf("attempts by ordinal %v, want only first attempts, at least %d", byOrd, perm)
	}
	// it costs no retry,
	if s.Attempts.Retries != 0 || s.Amplification == nil || *s.Amplification != 1 {
		t.Errorf("%d retries, amplification %v; want none and 1", s.Attempts.Retries, reports.RatioText(s.Amplification))
	}
	// and it is about 15% of what was sent.
	frac := float64(perm) / float64(s.Deliveries.Created)
	if want := d.Partners[0].PermanentErrors; math.Abs(frac-want) > 0.03 {
		t.Errorf("%.3f of deliveries were bad data, want about %.2f", frac, want)
	}
}

func TestDemoOverload(t *testing.T) {
	// Given 12 events/s against about 8/s of capacity and a queue bound of
	// 400 with back-pressure,
	d := loadDemo(t, "demo-overload")
	bound := float64(d.Dispatcher.QueueCapacity)
	// when it runs over five seeds,
	var fill []float64
	for _, run := range seedRuns(t, "demo-overload", nil) {
		ts, s := run.Timeseries, run.Summary
		f, peak := math.Inf(1), 0.0
		for i := range ts.Samples {
			q := queueDepth(&ts.Samples[i])
			peak = max(peak, q)
			if q >= bound && f == math.Inf(1) {
				f = ts.Samples[i].T
			}
		}
		fill = append(fill, f)
		// the queue fills to its bound and never beyond it,
		if peak != bound {
			t.Errorf("queue depth peaked at %v, want the bound %v", peak, bound)
		}
		// then, and only then, the source is held back,
		if n := sumOver(ts, 0, f-ts.IntervalS, heldBack); n != 0 {
			t.Errorf("source held back before the queue was full (at %vs)", f)
		}
		if s.SourceHeldBackS <= 0 || sumOver(ts, f, d.Duration.D.Seconds(), heldBack) <= 0 {
			t.Errorf("source not held back after the queue filled at %vs", f)
		}
		// and nothing is dropped or dead-lettered.
		if s.Deliveries.DeadLettered != 0 || s.Deliveries.Delivered != s.Deliveries.Created {
			t.Errorf("deliveries %+v, want all delivered", s.Deliveries)
		}
	}
	t.Logf("queue full after %v s", fill)
	// in a couple of minutes: (12 − 8)/s fills 400 in 100s; the claim is
	// about 2 minutes.
	if f := mean(fill); !within(f, 120, timeTol) {
		t.Errorf("queue full after %vs on average, want 2m ± 25%%", f)
	}
}

// retrySchedule is the least and the most total delay between a delivery's
// first and last attempt under equal jitter (each delay in [d/2, d]).
func retrySchedule(t *testing.T, d *drills.Drill) (least, most time.Duration) {
	t.Helper()
	pol, err := d.ModelPolicy()
	if err != nil {
		t.Fatal(err)
	}
	if pol.Backoff.Jitter != model.JitterEqual || pol.MaxAttempts < 2 {
		t.Fatalf("%s: policy %+v; this check assumes equal jitter and a bounded number of attempts", d.Name, pol)
	}
	for n := 1; n < pol.MaxAttempts; n++ {
		c := pol.Backoff.Capped(n)
		least += c / 2
		most += c
	}
	return least, most
}
