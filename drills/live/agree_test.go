package live

import (
	"bytes"
	"encoding/csv"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stormdrill/stormdrill/drills/sim"
	"github.com/stormdrill/stormdrill/fakepartner"
	"github.com/stormdrill/stormdrill/model"
	"github.com/stormdrill/stormdrill/reports"
	"github.com/stormdrill/stormdrill/reports/render"
)

// agreeDrill is small on purpose: a healthy cohort and one partner down for
// a minute, deterministic backoff (jitter none) so that both modes retry at
// the same moments, and no transient errors. Live runs it 20 times faster,
// so a stall of the live run (the dispatcher, the store or the partner
// waiting for a CPU) of S ms of wall time delays the deliveries in flight
// by 20·S ms of drill time. The latency is slow enough (p50 1.5s, p99 10s:
// a healthy p99 of 11.3s) that 25% of the healthy p99 is 2.8s of drill
// time, a stall of 140ms, beyond the 100ms of lateness at which compareRuns
// skips; with p99 2s it was 28ms, a stall seen at load 10 on PostgreSQL
// (sim 2.26s, live 4.47s). Workers, attempt timeout and lease follow the
// latency (about 21 attempts in flight on average), so that nothing waits
// for a worker or times out.
const agreeDrill = `
name = "agree"
seed = 11
duration = "3m"
drain = "2m"
sample_interval = "5s"
[source]
arrival = "poisson"
rate = "2/s"
[[partners]]
name = "healthy"
count = 4
latency = { dist = "lognormal", p50 = "1500ms", p99 = "10s" }
[[partners]]
name = "flaky"
count = 1
latency = { dist = "lognormal", p50 = "1500ms", p99 = "10s" }
  [[partners.outages]]
  start = "30s"
  for = "1m"
  kind = "unavailable"
[policy.retry]
max_attempts = 5
base = "2s"
cap = "16s"
jitter = "none"
[dispatcher]
workers = 64
attempt_timeout = "30s"
lease_timeout = "60s"
`

// within reports whether live is within tol (a fraction) of sim.
func within(sim, live, tol float64) bool {
	if sim == 0 {
		return math.Abs(live) <= tol
	}
	return math.Abs(live-sim)/math.Abs(sim) <= tol
}

// agreeWithin reports whether a live figure agrees with the simulation's:
// within the relative tolerance tol, or within slack events of it (0.01
// more for the CSV's rounding), whichever is more.
func agreeWithin(sim, live, tol, slack float64) bool {
	return within(sim, live, tol) || math.Abs(live-sim) <= slack+0.01
}

// TestRegression_FaultAgreementOneRareEventApart pins the tolerance rule
// the sim ≈ live agreements share. TestSimAndLiveAgreeOnFaults failed on a
// busy machine with one max-attempts dead letter in simulation and none
// live (5% of 1 is less than an event: the partner's per-call draws, made
// in call order, fall to other calls once two calls arrive in the other
// order), and on a cohort's attempts by outcome when an attempt near an
// outage window's edge crossed it in a live run running late (small
// counts: 8% or 4 attempts). Counts one event apart agree, and so do a
// cohort's counts 4 apart; a real difference still fails.
func TestRegression_FaultAgreementOneRareEventApart(t *testing.T) {
	for _, c := range []struct {
		sim, live, tol, slack float64
		want                  bool
	}{
		{1, 0, 0.05, 1, true},       // the one max-attempts dead letter
		{0, 2, 0.05, 1, false},      // two out of none is a difference
		{1000, 1049, 0.05, 1, true}, // within 5%
		{1000, 1060, 0.05, 1, false},
		{20, 24, 0.08, 4, true}, // a cohort's attempts near an outage's edge
		{100, 109, 0.08, 4, false},
		{0.1234, 0.1262, 0.05, 0, true}, // amplification: no slack
		{1.5, 1.0, 0.05, 0, false},
	} {
		if got := agreeWithin(c.sim, c.live, c.tol, c.slack); got != c.want {
			t.Errorf("sim %g, live %g within %g or %g events: %v, want %v", c.sim, c.live, c.tol, c.slack, got, c.want)
		}
	}
}

// TestSimAndLiveAgree runs one drill in simulation and live, on SQLite and
// (where a server is given) on PostgreSQL. Tolerances as the design
// states them: delivered, dead-lettered and amplification within 5%;
// healthy p99 and drain time within 25%; the sum of every per-interval
// count column of timeseries.csv within 5%. Every run has the same set of
// summary keys with the same kinds of value, and in each live run every
// dead-letter column sums to the summary's count for its reason.
func TestSimAndLiveAgree(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a live drill")
	}
	if raceEnabled {
		// Timing, not memory safety, is what this test checks; the race
		// detector's slowdown times the speed factor distorts drill time.
		t.Skip("timing comparison; run without -race")
	}
	simD := parseDrill(t, agreeDrill)
	simRun, err := sim.Run(simD, sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	checkDLQColumns(t, simRun)
	if simRun.Summary.Deliveries.DeadLettered == 0 {
		t.Fatal("the simulated drill dead-letters nothing: the dead-letter columns are not exercised")
	}
	for _, engine := range []struct {
		name  string
		store func(t *testing.T) string
	}{
		{"sqlite", func(*testing.T) string { return "" }},
		{"postgres", pgSchemaDSN},
	} {
		t.Run(engine.name, func(t *testing.T) {
			store := engine.store(t)
			liveD := parseDrill(t, "mode = \"live\"\nspeed = 20\n"+agreeDrill)
			liveRun, err := Run(liveD, t.TempDir(), Options{Executable: testExecutable(t), Log: logWriter{t}, Store: store})
			if err != nil {
				t.Fatal(err)
			}
			// What does not depend on timing first.
			checkDLQColumns(t, liveRun)
			checkSameKeys(t, simRun.Summary, liveRun.Summary)
			compareRuns(t, simRun, liveRun)
		})
	}
}

func compareRuns(t *testing.T, simRun, liveRun *reports.Run) {
	t.Helper()
	s, l := simRun.Summary, liveRun.Summary
	// On a machine too busy to keep the arrival schedule (other test
	// binaries on the same 2 cores), live measures the machine, not the
	// policy. The harness measures that itself: lateness p99 beyond
	// maxAgreeLatenessS skips the comparison, saying so.
	const maxAgreeLatenessS = 0.1
	if l.Lateness != nil && l.Lateness.P99 > maxAgreeLatenessS {
		t.Skipf("arrival lateness p99 %.0fms (wall) > %.0fms: the machine could not keep the schedule; rerun on an idle machine",
			l.Lateness.P99*1e3, maxAgreeLatenessS*1e3)
	}
	drain := func(x *reports.Summary) float64 {
		if x.DrainTimeS == nil {
			return math.NaN()
		}
		return *x.DrainTimeS
	}
	// Counts compare within their tolerance or one event, whichever is
	// more: 5% of a count under 20 is less than one, and a rare event (one
	// max-attempts dead letter in the fault drill) comes out at 0 or 2 live
	// when the partner's per-call draws, made in call order, fall to other
	// calls once two calls arrive in the other order.
	type row struct {
		name      string
		sim, live float64
		tol       float64
		slack     float64 // events
	}
	rows := []row{
		{"delivered", float64(s.Deliveries.Delivered), float64(l.Deliveries.Delivered), 0.05, 1},
		{"dead_lettered", float64(s.Deliveries.DeadLettered), float64(l.Deliveries.DeadLettered), 0.05, 1},
		{"amplification", *s.Amplification, *l.Amplification, 0.05, 0},
		{"healthy.latency.p99", s.HealthyLatencyS.P99, l.HealthyLatencyS.P99, 0.25, 0},
		{"drain_time", drain(s), drain(l), 0.25, 0},
	}
	simSums, liveSums := columnSums(t, simRun.Timeseries), columnSums(t, liveRun.Timeseries)
	for _, col := range slices.Sorted(mapsKeys(simSums)) {
		rows = append(rows, row{"Σ " + col, simSums[col], liveSums[col], 0.05, 1})
	}
	for col := range liveSums {
		if _, ok := simSums[col]; !ok {
			t.Errorf("live series has count column %s, the simulation's does not", col)
		}
	}
	for _, r := range rows {
		t.Logf("%-36s sim %10.4g  live %10.4g", r.name, r.sim, r.live)
	}
	for _, r := range rows {
		if !agreeWithin(r.sim, r.live, r.tol, r.slack) {
			t.Errorf("%s: sim %.4g, live %.4g: differ by more than %.0f%% (or %g)", r.name, r.sim, r.live, r.tol*100, r.slack)
		}
	}
	if l.Deliveries.Lost != 0 || s.Deliveries.Lost != 0 {
		t.Errorf("lost: sim %d, live %d", s.Deliveries.Lost, l.Deliveries.Lost)
	}
	t.Logf("live lateness p99 %.2fms (wall)", l.Lateness.P99*1e3)
}

func mapsKeys(m map[string]float64) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// columnSums reads the series as timeseries.csv writes it and returns, for
// every per-interval count column (a rate, *_per_s), the count over the
// run: the column's sum times the interval.
func columnSums(t *testing.T, ts *reports.Timeseries) map[string]float64 {
	t.Helper()
	var buf bytes.Buffer
	if err := render.WriteTimeseriesCSV(&buf, ts); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&buf).ReadAll()
	if err != nil || len(recs) < 2 {
		t.Fatalf("timeseries.csv: %d records, %v", len(recs), err)
	}
	sums := map[string]float64{}
	for i, col := range recs[0] {
		if !strings.HasSuffix(col, "_per_s") {
			continue
		}
		sums[col] = 0
		for _, rec := range recs[1:] {
			if rec[i] == "" {
				continue
			}
			v, err := strconv.ParseFloat(rec[i], 64)
			if err != nil {
				t.Fatalf("timeseries.csv %s: %v", col, err)
			}
			sums[col] += v * ts.IntervalS
		}
	}
	if len(sums) == 0 {
		t.Fatalf("timeseries.csv has no count column: %v", recs[0])
	}
	return sums
}

// checkDLQColumns: each dlq_<reason>_per_s column × the interval, summed,
// equals the summary's dead-letter count for that reason (within the
// CSV's rounding), and dlq_per_s the total.
func checkDLQColumns(t *testing.T, run *reports.Run) {
	t.Helper()
	sums := columnSums(t, run.Timeseries)
	s := run.Summary
	near := func(got float64, want int64) bool { return math.Abs(got-float64(want)) <= 0.01+1e-4*float64(want) }
	if !near(sums["dlq_per_s"], s.Deliveries.DeadLettered) {
		t.Errorf("%s: dlq_per_s × interval sums to %.4g, summary has %d dead letters", s.Mode, sums["dlq_per_s"], s.Deliveries.DeadLettered)
	}
	seen := 0
	for _, reason := range run.Timeseries.Reasons {
		col := "dlq_" + strings.ReplaceAll(reason, "-", "_") + "_per_s"
		got, ok := sums[col]
		if !ok {
			t.Fatalf("timeseries.csv has no column %s", col)
		}
		if want := s.DeadLetterReasons[reason]; !near(got, want) {
			t.Errorf("%s: %s × interval sums to %.4g, summary has %d dead letters %s", s.Mode, col, got, want, reason)
		}
		seen++
	}
	if seen != len(model.Reasons) {
		t.Fatalf("%s: %d reason columns, want one per reason (%d)", s.Mode, seen, len(model.Reasons))
	}
}

// checkSameKeys: both summaries have the same keys, with values of the
// same kind (reports.KeyDifferences says what that means).
func checkSameKeys(t *testing.T, a, b *reports.Summary) {
	t.Helper()
	ka, kb := summaryKeys(t, a), summaryKeys(t, b)
	for _, d := range reports.KeyDifferences(a.Mode, ka, b.Mode, kb) {
		t.Error(d)
	}
	if len(ka) < 40 {
		t.Fatalf("%d summary keys: the walk found too few", len(ka))
	}
}

func summaryKeys(t *testing.T, s *reports.Summary) map[string]string {
	t.Helper()
	keys, err := reports.SummaryKeys(s)
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

// TestOverlapCheck feeds the partner-record overlap check by hand: records
// come in answer order; an attempt that arrived before an earlier-answered
// attempt of the same delivery was answered overlaps it.
func TestOverlapCheck(t *testing.T) {
	rec := &liveRecorder{lastAnswer: map[string]answerSeen{}}
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	for _, a := range []fakepartner.Attempt{
		{ID: "a", Ordinal: 1, Arrived: at(0), Answered: at(10)},
		{ID: "a", Ordinal: 2, Arrived: at(10), Answered: at(20)}, // back to back: no overlap
		{ID: "b", Ordinal: 1, Arrived: at(5), Answered: at(30)},
		{ID: "b", Ordinal: 2, Arrived: at(12), Answered: at(31)}, // arrived before b/1 was answered
		{ID: "c", Ordinal: 1, Arrived: at(40), Answered: at(45)},
		{ID: "c", Ordinal: 1, Arrived: at(41), Answered: at(50)}, // same ordinal sent twice at once
		{ID: "", Ordinal: 1, Arrived: at(0), Answered: at(99)},   // no id: not checked
		// The caller left d/1 at its timeout; the partner finished it at 70,
		// after d/2 had arrived at 68 and been answered at 69 (records in
		// answer order: d/2 first). One dispatcher timing out, not two at once.
		{ID: "d", Ordinal: 2, Arrived: at(68), Answered: at(69)},
		{ID: "d", Ordinal: 1, Arrived: at(60), Answered: at(70), Abandoned: true},
		// The same with the partner done with e/1 (held) before e/2 is answered.
		{ID: "e", Ordinal: 1, Arrived: at(80), Answered: at(85), Held: true},
		{ID: "e", Ordinal: 2, Arrived: at(84), Answered: at(86)},
	} {
		rec.checkOverlap(a)
	}
	if rec.checked != 10 || rec.overlaps != 2 || len(rec.overlapEx) != 2 {
		t.Fatalf("checked %d, overlaps %d %q: want 10, 2", rec.checked, rec.overlaps, rec.overlapEx)
	}
	if !strings.HasPrefix(rec.overlapEx[0], "b: attempt 2") || !strings.HasPrefix(rec.overlapEx[1], "c: attempt 1") {
		t.Errorf("examples %q", rec.overlapEx)
	}
}

// dlqDrill dead-letters for two reasons whatever the timing: a cohort that
// rejects 30% as bad data (permanent) and fails 40% transiently, with two
// attempts at most (max-attempts). Ten seconds of drill at speed 20, a 1 s
// sample interval; the long drain only bounds a slow machine (the run ends
// once nothing is pending).
const dlqDrill = `
name = "dlq-columns"
mode = "live"
seed = 2
speed = 20
duration = "10s"
drain = "5m"
sample_interval = "1s"
[source]
arrival = "constant"
rate = "5/s"
[[partners]]
name = "bad"
count = 2
permanent_errors = 0.3
transient_errors = 0.4
latency = { dist = "constant", value = "20ms" }
[policy.retry]
max_attempts = 2
base = "500ms"
cap = "500ms"
jitter = "none"
[dispatcher]
workers = 8
attempt_timeout = "5s"
lease_timeout = "30s"
`

// TestLiveDLQColumnsSumToSummary: in a live run, on SQLite and on
// PostgreSQL, each dlq_<reason>_per_s column × the interval, summed,
// equals the summary's dead-letter count for that reason.
func TestLiveDLQColumnsSumToSummary(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a live drill")
	}
	for _, engine := range []struct {
		name  string
		store func(t *testing.T) string
	}{
		{"sqlite", func(*testing.T) string { return "" }},
		{"postgres", pgSchemaDSN},
	} {
		t.Run(engine.name, func(t *testing.T) {
			store := engine.store(t)
			run, err := Run(parseDrill(t, dlqDrill), t.TempDir(), Options{Executable: testExecutable(t), Log: logWriter{t}, Store: store})
			if err != nil {
				t.Fatal(err)
			}
			s := run.Summary
			if s.DeadLetterReasons[string(model.ReasonPermanent)] == 0 || s.DeadLetterReasons[string(model.ReasonMaxAttempts)] == 0 {
				t.Fatalf("dead letters %v: want both permanent and max-attempts (deliveries %+v, attempts %+v, lateness %+v)", s.DeadLetterReasons, s.Deliveries, s.Attempts, s.Lateness)
			}
			checkDLQColumns(t, run)
			checkInjectionLine(t, run)
			t.Logf("dead letters %v over %d rows of %gs", s.DeadLetterReasons, len(run.Timeseries.Samples), run.Timeseries.IntervalS)
		})
	}
}

// checkInjectionLine checks the report's live-injection line: the insert
// is part of each event's lateness, so its percentiles are at most the
// lateness's (to the histogram's rounding), and the line's lateness is the
// summary's.
func checkInjectionLine(t *testing.T, run *reports.Run) {
	t.Helper()
	var line string
	for _, kv := range run.Policy {
		if kv.Key == "live injection" {
			line = kv.Value
		}
	}
	ms := regexp.MustCompile(`p(50|99) ([0-9.]+) ms`).FindAllStringSubmatch(line, -1)
	if len(ms) != 4 {
		t.Fatalf("live injection line %q: want lateness and insert p50 and p99", line)
	}
	var v [4]float64
	for i, m := range ms {
		v[i], _ = strconv.ParseFloat(m[2], 64)
	}
	lateP50, lateP99, insP50, insP99 := v[0], v[1], v[2], v[3]
	if s := run.Summary.Lateness; math.Abs(s.P99*1e3-lateP99) > 0.01 || math.Abs(s.P50*1e3-lateP50) > 0.01 {
		t.Errorf("line %q: lateness differs from the summary's %+v", line, *s)
	}
	if insP50 <= 0 || insP50 > lateP50*1.01+0.01 || insP99 > lateP99*1.01+0.01 {
		t.Errorf("line %q: the insert (p50 %v, p99 %v ms) must be positive and within the lateness (p50 %v, p99 %v ms)", line, insP50, insP99, lateP50, lateP99)
	}
}
