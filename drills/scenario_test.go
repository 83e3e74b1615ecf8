package drills

import (
	"math"
	"testing"
	"time"

	"github.com/stormdrill/stormdrill/model"
	"github.com/stormdrill/stormdrill/reports"
)

// The six demo scenarios of the retry-pipeline teaching demo, each checked
// for the point it is there to make, from its time series and summary.

// outageWindow is the outage of a demo's single partner, in seconds.
func outageWindow(t *testing.T, d *Drill) (start, end float64) {
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

func dlqRate(s *reports.Sample) float64         { return s.DLQPerS }
func attemptRate(s *reports.Sample) float64     { return s.FirstAttemptsPerS + s.RetriesPerS }
func heldBack(s *reports.Sample) float64        { return s.SourceHeldBack }
func queueDepth(s *reports.Sample) float64      { return s.Ready + s.Delayed }
func loadDemo(t *testing.T, name string) *Drill { return loadDrill(t, name+".toml", nil) }

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
	if s.Amplification < 1.05 || s.Amplification > 1.2 {
		t.Errorf("amplification %.3f, want about 1.11", s.Amplification)
	}
}

func TestDemoOutageNoBackoff(t *testing.T) {
	// Given a 2-minute outage and failed calls retried at once,
	d := loadDemo(t, "demo-outage-no-backoff")
	start, end := outageWindow(t, d)
	arrival := d.Source.Rate.PerSecond
	// when the drill runs,
	run := runDrill(t, d)
	ts := run.Timeseries
	// then dead letters appear within seconds of the outage start,
	if first := firstDLQ(ts); first <= start || first > start+5 {
		t.Fatalf("first dead letter at %vs, want within 5s after the outage starts at %vs", first, start)
	}
	// keep arriving through the outage, every 5 seconds,
	for from := start + 5; from+5 <= end; from += 5 {
		if n := sumOver(ts, from, from+5, dlqRate); n == 0 {
			t.Errorf("no dead letter in [%v, %v)s, inside the outage", from, from+5)
		}
	}
	// at about the arrival rate (every delivery made during the outage
	// burns its attempts in seconds),
	steady := sumOver(ts, start+5, end, dlqRate) / (end - start - 5)
	if math.Abs(steady-arrival) > 0.25*arrival {
		t.Errorf("dead letters at %.2f/s during the outage, want about the arrival rate %.2f/s", steady, arrival)
	}
	// and stop within seconds of its end; every one is max-attempts.
	if n := sumOver(ts, end+5, math.Inf(1), dlqRate); n != 0 {
		t.Errorf("%v dead letters more than 5s after the outage ended", n)
	}
	if r := run.Summary.DeadLetterReasons; r[string(model.ReasonMaxAttempts)] != run.Summary.Deliveries.DeadLettered || len(r) != 1 {
		t.Errorf("dead-letter reasons %v, want only max-attempts", r)
	}
}

// retrySchedule is the least and the most total delay between a delivery's
// first and last attempt under equal jitter (each delay in [d/2, d]).
func retrySchedule(t *testing.T, d *Drill) (least, most time.Duration) {
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

func TestDemoOutageBackoff(t *testing.T) {
	// Given the same outage with capped exponential backoff,
	d := loadDemo(t, "demo-outage-backoff")
	start, _ := outageWindow(t, d)
	least, most := retrySchedule(t, d)
	if least != 15*time.Second || most != 30*time.Second {
		t.Fatalf("retry schedule %v to %v; the demo's policy (2s doubling to 32s, 5 attempts) gives 15s to 30s", least, most)
	}
	// when the drill runs,
	run := runDrill(t, d)
	// then nothing reaches the DLQ for about the length of the retry
	// schedule: not before its least length, and soon after its most.
	first := firstDLQ(run.Timeseries)
	if first < start+least.Seconds() || first > start+most.Seconds()+5 {
		t.Fatalf("first dead letter at %vs, want in [%v, %v]s: the retry schedule (%v–%v) after the outage start %vs",
			first, start+least.Seconds(), start+most.Seconds()+5, least, most, start)
	}
	// Compared with immediate retries, the first dead letter is later by
	// at least the schedule's least length less a few seconds, and fewer
	// deliveries are dead-lettered in all.
	nb := runDrill(t, loadDemo(t, "demo-outage-no-backoff"))
	if gap := first - firstDLQ(nb.Timeseries); gap < least.Seconds()-5 {
		t.Errorf("backoff delays the first dead letter by %vs only, want at least %vs", gap, least.Seconds()-5)
	}
	if run.Summary.Deliveries.DeadLettered >= nb.Summary.Deliveries.DeadLettered {
		t.Errorf("dead-lettered %d with backoff, %d without; want fewer with", run.Summary.Deliveries.DeadLettered, nb.Summary.Deliveries.DeadLettered)
	}
}

func TestDemoOutageBreaker(t *testing.T) {
	// Given the same outage with backoff and a breaker that opens after 5
	// consecutive failures (cooldown 5s, one probe, hold),
	d := loadDemo(t, "demo-outage-breaker")
	start, end := outageWindow(t, d)
	cooldown := d.Policy.Breaker.Cooldown.D.Seconds()
	// when it runs next to the same drill without a breaker,
	run := runDrill(t, d)
	without := runDrill(t, loadDemo(t, "demo-outage-backoff"))
	// then once the breaker has opened, attempts per second fall close to
	// zero while the partner is down: about one probe per cooldown,
	from := start + 10
	with := sumOver(run.Timeseries, from, end, attemptRate) / (end - from)
	base := sumOver(without.Timeseries, from, end, attemptRate) / (end - from)
	if with > 2/cooldown || with > 0.05*base {
		t.Errorf("attempts during the outage: %.2f/s with the breaker, %.2f/s without; want at most a probe per cooldown (%.2f/s) and under 5%% of without",
			with, base, 1/cooldown)
	}
	// the breaker opened within seconds of the start and closed after the
	// end,
	var opened, closed float64 = math.Inf(1), math.Inf(1)
	for _, tr := range run.Summary.BreakerTransitions {
		if tr.To == "open" && opened == math.Inf(1) {
			opened = tr.AtS
		}
		if tr.To == "closed" && tr.AtS >= end && closed == math.Inf(1) {
			closed = tr.AtS
		}
	}
	if opened < start || opened > start+10 {
		t.Errorf("breaker first opened at %vs, want within 10s of the outage start %vs", opened, start)
	}
	if closed > end+cooldown+5 {
		t.Errorf("breaker closed at %vs, want within a cooldown of the outage end %vs", closed, end)
	}
	// and the held deliveries survive: nothing is dead-lettered.
	if s := run.Summary; s.Deliveries.DeadLettered != 0 || s.Deliveries.Delivered != s.Deliveries.Created {
		t.Errorf("deliveries %+v, want all delivered", s.Deliveries)
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
	if s.Attempts.Retries != 0 || s.Amplification != 1 {
		t.Errorf("%d retries, amplification %v; want none and 1", s.Attempts.Retries, s.Amplification)
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
	srcEnd := d.Duration.D.Seconds()
	// when the drill runs,
	run := runDrill(t, d)
	ts, s := run.Timeseries, run.Summary
	// then the source is held back,
	if s.SourceHeldBackS <= 0 || s.SourceHeldBackMaxS <= 0 {
		t.Errorf("source_held_back_s %v (max %v), want > 0", s.SourceHeldBackS, s.SourceHeldBackMaxS)
	}
	// more and more while arrivals outpace the pool: none at first, then
	// a backlog that rises from one third of the source phase to the next,
	if n := sumOver(ts, 0, 30, heldBack); n != 0 {
		t.Errorf("source held back in the first 30s, before the queue could fill")
	}
	third := srcEnd / 3
	mid := sumOver(ts, third, 2*third, heldBack) / third
	late := sumOver(ts, 2*third, srcEnd, heldBack) / third
	if !(late > mid && mid > 0) {
		t.Errorf("held-back deliveries average %.0f then %.0f over the last two thirds of the source phase, want a rise from above 0", mid, late)
	}
	// while the queue fills to its bound and never beyond it,
	peak := 0.0
	for i := range ts.Samples {
		peak = max(peak, queueDepth(&ts.Samples[i]))
	}
	if peak != bound {
		t.Errorf("queue depth peaked at %v, want the bound %v", peak, bound)
	}
	// and nothing is dropped or dead-lettered.
	if s.Deliveries.DeadLettered != 0 || s.Deliveries.Delivered != s.Deliveries.Created {
		t.Errorf("deliveries %+v, want all delivered", s.Deliveries)
	}
}
