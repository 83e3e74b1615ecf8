package experiments

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stormdrill/stormdrill/drills"
	"github.com/stormdrill/stormdrill/model"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// fanoutInput is the flagship sketch: 2 events/s to 200 subscribers, one
// of them (acme) down for 20 minutes.
func fanoutInput() PlanInput {
	return PlanInput{
		Drill:                 "fanout-outage",
		ArrivalPerS:           2 * 200,
		Workers:               64,
		MeanService:           120 * time.Millisecond,
		AttemptTimeout:        10 * time.Second,
		MaxAttempts:           6,
		Base:                  2 * time.Second,
		Cap:                   5 * time.Minute,
		Jitter:                "full",
		DeliveryWindow:        30 * time.Minute,
		FailureProb:           0.011,
		PerPartnerConcurrency: 4,
		PartnerMeanService:    150 * time.Millisecond,
		Outages:               []PlanOutage{{Partner: "acme", Length: 20 * time.Minute, ShareOfDeliveries: 1.0 / 200, Subscribers: 1}},
	}
}

// scheduleInput has no queueing (no arrivals), so elapsed times are the
// delays and attempt durations alone: base 1s, cap 10s, doubling, six
// attempts, 100ms mean attempts, 1s timeout.
func scheduleInput(jitter string) PlanInput {
	return PlanInput{
		Drill: "schedule", Workers: 1, MeanService: 100 * time.Millisecond, AttemptTimeout: time.Second,
		MaxAttempts: 6, Base: time.Second, Cap: 10 * time.Second, Jitter: jitter,
	}
}

func TestExpectedAttempts(t *testing.T) {
	cases := []struct {
		p    float64
		k    int
		want float64
		ok   bool
	}{
		{0, 6, 1, true},                                    // never fails: one attempt
		{0.1, 6, (1 - 1e-6) / 0.9, true},                   // (1 − p^k)/(1 − p)
		{0.5, 6, (1 - 1.0/64) / 0.5, true},                 // 1.96875
		{1, 6, 6, true},                                    // always fails: every attempt
		{0.5, 1, 1, true},                                  // one attempt allowed
		{0.5, 0, 2, true},                                  // unlimited: 1/(1 − p)
		{0.1, 0, 1 / 0.9, true},                            // unlimited: 1/(1 − p)
		{1, 0, 0, false},                                   // unlimited and always failing: unbounded
		{0.999999, 3, 1 + 0.999999 + 0.999998000001, true}, // near 1 stays accurate
		{-0.1, 3, 0, false},                                // out of range
		{math.NaN(), 3, 0, false},                          // NaN
	}
	for _, tc := range cases {
		got, ok := ExpectedAttempts(tc.p, tc.k)
		if ok != tc.ok || (ok && !relClose(got, tc.want, 1e-9)) {
			t.Errorf("ExpectedAttempts(%v, %d) = %v, %v; want %v, %v", tc.p, tc.k, got, ok, tc.want, tc.ok)
		}
	}
}

func TestAmplificationTable(t *testing.T) {
	in := scheduleInput("none")
	in.FailureProb = 0.2
	plan, err := MakePlan(in)
	if err != nil {
		t.Fatal(err)
	}
	a := plan.Amplification
	if a.UpperBound == nil || *a.UpperBound != 6 {
		t.Errorf("upper bound %v, want 6", a.UpperBound)
	}
	want := []struct {
		p     float64
		e     float64
		drill bool
	}{
		{0, 1, false},
		{0.1, (1 - 1e-6) / 0.9, false},
		{0.5, 1.96875, false},
		{1, 6, false},
		{0.2, (1 - math.Pow(0.2, 6)) / 0.8, true}, // the drill's own p, appended
	}
	if len(a.Table) != len(want) {
		t.Fatalf("table has %d rows, want %d", len(a.Table), len(want))
	}
	for i, w := range want {
		r := a.Table[i]
		if r.FailureProb != w.p || r.Drill != w.drill || r.Expected == nil || !relClose(*r.Expected, w.e, 1e-12) {
			t.Errorf("row %d = %+v (expected %v), want p=%v e=%v drill=%v", i, r, deref(r.Expected), w.p, w.e, w.drill)
		}
	}
	// A drill p already in the table marks that row instead of adding one;
	// unlimited attempts at p = 1 are unbounded.
	in.FailureProb, in.MaxAttempts = 0.5, 0
	plan, _ = MakePlan(in)
	a = plan.Amplification
	if len(a.Table) != 4 || !a.Table[2].Drill || a.UpperBound != nil || a.Table[3].Expected != nil || *a.Expected != 2 {
		t.Errorf("unlimited: %+v", a)
	}
}

func deref(v *float64) any {
	if v == nil {
		return nil
	}
	return *v
}

func TestScheduleByJitter(t *testing.T) {
	// d before attempts 2..6 with base 1s, cap 10s, multiplier 2.
	d := []float64{1, 2, 4, 8, 10}
	cases := []struct {
		jitter      string
		lo, typ, hi []float64
	}{
		// none: every delay is d.
		{"none", d, d, d},
		// full: uniform in [0, d].
		{"full", []float64{0, 0, 0, 0, 0}, []float64{0.5, 1, 2, 4, 5}, d},
		// equal: uniform in [d/2, d].
		{"equal", []float64{0.5, 1, 2, 4, 5}, []float64{0.75, 1.5, 3, 6, 7.5}, d},
		// hash: d/2 + a 32-bit hash mod d/2+1, so [d/2, d] only while
		// d/2 < 2^32 ns; at d = 10s the spread stops at 2^32−1 ns.
		{"hash", []float64{0.5, 1, 2, 4, 5}, []float64{0.75, 1.5, 3, 6, 7.147483647}, []float64{1, 2, 4, 8, 9.294967295}},
		// proportional r = 0.5: d(1 ± r), the top clamped to the cap.
		{"proportional", []float64{0.5, 1, 2, 4, 5}, d, []float64{1.5, 3, 6, 10, 10}},
		// decorrelated: uniform in [base, 3·prev], prev from base; typical
		// (1 + 3·prev)/2: 2, 3.5, 5.75, 9.125, then capped; largest 3^(k−1) capped.
		{"decorrelated", []float64{1, 1, 1, 1, 1}, []float64{2, 3.5, 5.75, 9.125, 10}, []float64{3, 9, 10, 10, 10}},
	}
	for _, tc := range cases {
		plan, err := MakePlan(scheduleInput(tc.jitter))
		if err != nil {
			t.Fatalf("%s: %v", tc.jitter, err)
		}
		rows := plan.Schedule.Rows
		if len(rows) != 6 || plan.Schedule.Truncated {
			t.Fatalf("%s: %d rows (truncated %v), want 6", tc.jitter, len(rows), plan.Schedule.Truncated)
		}
		if r := rows[0]; r.DelayMinS != 0 || r.DelayMaxS != 0 || r.ElapsedTypicalS != 0 || r.ElapsedWorstS != 0 {
			t.Errorf("%s: attempt 1 = %+v, want no delay and no elapsed time", tc.jitter, r)
		}
		typ, worst := 0.0, 0.0
		for i := 0; i < 5; i++ {
			r := rows[i+1]
			typ += 0.1 + tc.typ[i] // mean attempt, then the delay
			worst += 1 + tc.hi[i]  // attempt timeout, then the largest delay
			if r.Attempt != i+2 || r.BaseDelayS != d[i] || !relClose(r.DelayMinS, tc.lo[i], 1e-12) ||
				!relClose(r.DelayTypicalS, tc.typ[i], 1e-12) || !relClose(r.DelayMaxS, tc.hi[i], 1e-12) {
				t.Errorf("%s attempt %d: d %v min %v typ %v max %v; want d %v min %v typ %v max %v", tc.jitter, r.Attempt,
					r.BaseDelayS, r.DelayMinS, r.DelayTypicalS, r.DelayMaxS, d[i], tc.lo[i], tc.typ[i], tc.hi[i])
			}
			if !relClose(r.ElapsedTypicalS, typ, 1e-12) || !relClose(r.ElapsedWorstS, worst, 1e-12) {
				t.Errorf("%s attempt %d: elapsed %v / %v, want %v / %v", tc.jitter, r.Attempt, r.ElapsedTypicalS, r.ElapsedWorstS, typ, worst)
			}
		}
	}
}

// The plan's hash-jitter bounds are the range of model.HashJitter, for
// capped delays from 1s to 1h: no delay of many deliveries falls outside
// them, and the draws reach both ends (within 1% of the width). Above
// about 8.6s the 32-bit hash spreads a delay by at most 2^32 ns ≈ 4.3s.
func TestPlanHashBoundsAreHashJitterRange(t *testing.T) {
	in := scheduleInput("hash")
	in.Base, in.Cap, in.Multiplier, in.MaxAttempts = time.Second, time.Hour, 2, 16
	plan, err := MakePlan(in)
	if err != nil {
		t.Fatal(err)
	}
	rows := plan.Schedule.Rows[1:]
	if first, last := rows[0].BaseDelayS, rows[len(rows)-1].BaseDelayS; first != 1 || last != 3600 {
		t.Fatalf("capped delays run from %vs to %vs, want 1s to 1h", first, last)
	}
	for _, r := range rows {
		d := time.Duration(r.BaseDelayS * 1e9)
		lo, hi := time.Duration(math.MaxInt64), time.Duration(0)
		for i := range 20000 {
			v := model.HashJitter(d, model.JitterKeyOf(fmt.Sprintf("evt-%06d:acme-%d", i, i%7)), r.Attempt-1)
			lo, hi = min(lo, v), max(hi, v)
		}
		minD, maxD := time.Duration(math.Round(r.DelayMinS*1e9)), time.Duration(math.Round(r.DelayMaxS*1e9))
		if lo < minD || hi > maxD {
			t.Errorf("d = %v: HashJitter spans [%v, %v], outside the plan's [%v, %v]", d, lo, hi, minD, maxD)
		}
		if slack := (maxD - minD) / 100; lo-minD > slack || maxD-hi > slack {
			t.Errorf("d = %v: HashJitter spans [%v, %v], the plan says [%v, %v]", d, lo, hi, minD, maxD)
		}
		if d > 9*time.Second && maxD-minD != 1<<32-1 {
			t.Errorf("d = %v: the plan spreads the delay by %v, want 2^32−1 ns", d, maxD-minD)
		}
	}
}

func TestScheduleWindowVerdict(t *testing.T) {
	// Full jitter worst path: 0, 2, 5, 10, 19, 30 seconds at attempts 1..6.
	cases := []struct {
		window       time.Duration
		fits         *bool
		firstOutside int
	}{
		{0, nil, 0},                       // no window: no verdict
		{30 * time.Second, ptr(true), 0},  // the last attempt starts exactly at the window
		{20 * time.Second, ptr(false), 6}, // attempt 6 starts at 30s
		{4 * time.Second, ptr(false), 3},  // attempt 3 starts at 5s
	}
	for _, tc := range cases {
		in := scheduleInput("full")
		in.DeliveryWindow = tc.window
		plan, err := MakePlan(in)
		if err != nil {
			t.Fatal(err)
		}
		s := plan.Schedule
		if (s.FitsWindow == nil) != (tc.fits == nil) || (s.FitsWindow != nil && *s.FitsWindow != *tc.fits) || s.FirstOutsideWindow != tc.firstOutside {
			t.Errorf("window %v: fits %v, first outside %d; want %v, %d", tc.window, deref2(s.FitsWindow), s.FirstOutsideWindow, deref2(tc.fits), tc.firstOutside)
		}
		if tc.fits != nil && *s.Rows[5].WithinWindow != (tc.firstOutside == 0) {
			t.Errorf("window %v: attempt 6 within window = %v", tc.window, *s.Rows[5].WithinWindow)
		}
	}

	// Unlimited attempts: 30 rows, and the verdict looks beyond them. The
	// worst path is 19s at attempt 5, then 11s (timeout + 10s cap) per
	// attempt: the first start past 1h is 19 + 11(k − 5) > 3600, k = 331.
	in := scheduleInput("full")
	in.MaxAttempts, in.DeliveryWindow = 0, time.Hour
	plan, err := MakePlan(in)
	if err != nil {
		t.Fatal(err)
	}
	s := plan.Schedule
	if len(s.Rows) != MaxScheduleRows || !s.Truncated || s.FirstOutsideWindow != 331 || *s.FitsWindow || s.LastAttemptTypicalEndS != nil {
		t.Errorf("unlimited: %d rows, truncated %v, first outside %d, fits %v", len(s.Rows), s.Truncated, s.FirstOutsideWindow, *s.FitsWindow)
	}
}

func deref2(v *bool) any {
	if v == nil {
		return nil
	}
	return *v
}

func TestScheduleQueueWait(t *testing.T) {
	// One worker, 5 deliveries/s at 100ms: M/M/1 with ρ = 0.5, Wq = 0.1s,
	// p99 wait ln(50)/5. Attempt 1 waits them; attempt 2 adds the typical
	// path's second wait, one attempt and the delay.
	in := scheduleInput("full")
	in.ArrivalPerS = 5
	plan, err := MakePlan(in)
	if err != nil {
		t.Fatal(err)
	}
	p99 := math.Log(50) / 5
	r1, r2 := plan.Schedule.Rows[0], plan.Schedule.Rows[1]
	if !relClose(r1.ElapsedTypicalS, 0.1, 1e-9) || !relClose(r1.ElapsedWorstS, p99, 1e-9) {
		t.Errorf("attempt 1 elapsed %v / %v, want 0.1 / %v", r1.ElapsedTypicalS, r1.ElapsedWorstS, p99)
	}
	if !relClose(r2.ElapsedTypicalS, 0.1+0.1+0.1+0.5, 1e-9) || !relClose(r2.ElapsedWorstS, p99+1+1, 1e-9) {
		t.Errorf("attempt 2 elapsed %v / %v", r2.ElapsedTypicalS, r2.ElapsedWorstS)
	}
	if l := plan.Load; !l.Stable || *l.Utilisation != 0.5 || l.CapacityPerS != 10 {
		t.Errorf("load %+v", l)
	}
}

func TestLoadWithRetries(t *testing.T) {
	// 30 deliveries/s, p = 0.5, 3 attempts: 1.75 attempts each, 52.5/s on
	// 8 workers at 100ms (80/s): ρ = 0.65625.
	in := scheduleInput("none")
	in.ArrivalPerS, in.FailureProb, in.MaxAttempts, in.Workers = 30, 0.5, 3, 8
	plan, err := MakePlan(in)
	if err != nil {
		t.Fatal(err)
	}
	l := plan.Load
	if !relClose(*l.EffectiveArrivalPerS, 52.5, 1e-12) || !relClose(*l.Utilisation, 0.65625, 1e-12) || !l.Stable {
		t.Errorf("load %+v (λ_eff %v, ρ %v)", l, *l.EffectiveArrivalPerS, *l.Utilisation)
	}
	want, _ := SolveMMc(8, 52.5, 10)
	if plan.Pool.MMc == nil || *plan.Pool.MMc != want || !plan.Pool.Stable {
		t.Errorf("pool %+v, want %+v", plan.Pool.MMc, want)
	}
	if mw, _ := MinWorkers(52.5, 10, 1, MaxPlanWorkers); plan.Pool.MinWorkers == nil || *plan.Pool.MinWorkers != mw {
		t.Errorf("min workers %v, want %d", plan.Pool.MinWorkers, mw)
	}
	// Three times the load is beyond 8 workers.
	in.ArrivalPerS = 90
	plan, _ = MakePlan(in)
	if plan.Load.Stable || plan.Pool.Stable || plan.Pool.MMc != nil || plan.Schedule.QueueWaitS != 0 {
		t.Errorf("overload: load %+v pool %+v", plan.Load, plan.Pool)
	}
}

func TestMakePlanRefusesBadInput(t *testing.T) {
	cases := []struct {
		key    string
		mutate func(*PlanInput)
	}{
		{"workers", func(in *PlanInput) { in.Workers = 0 }},
		{"mean_service", func(in *PlanInput) { in.MeanService = 0 }},
		{"arrival_per_s", func(in *PlanInput) { in.ArrivalPerS = math.NaN() }},
		{"arrival_per_s", func(in *PlanInput) { in.ArrivalPerS = math.Inf(1) }},
		{"max_attempts", func(in *PlanInput) { in.MaxAttempts = -1 }},
		{"base", func(in *PlanInput) { in.Base = -time.Second }},
		{"multiplier", func(in *PlanInput) { in.Multiplier = 0.5 }},
		{"multiplier", func(in *PlanInput) { in.Multiplier = math.NaN() }},
		{"jitter", func(in *PlanInput) { in.Jitter = "fulll" }},
		{"jitter", func(in *PlanInput) { in.Jitter = "" }},
		{"jitter_ratio", func(in *PlanInput) { in.JitterRatio = 1.5 }},
		{"failure_prob", func(in *PlanInput) { in.FailureProb = 1.01 }},
		{"outages[0].length", func(in *PlanInput) { in.Outages[0].Length = 0 }},
		{"outages[0].share_of_deliveries", func(in *PlanInput) { in.Outages[0].ShareOfDeliveries = -0.1 }},
		{"per_partner_concurrency", func(in *PlanInput) { in.PerPartnerConcurrency = -1 }},
	}
	for _, tc := range cases {
		in := fanoutInput()
		in.Outages = append([]PlanOutage(nil), in.Outages...)
		tc.mutate(&in)
		plan, err := MakePlan(in)
		if err == nil || plan != nil || !strings.Contains(err.Error(), tc.key+":") {
			t.Errorf("%s: err %v, want one naming %q", tc.key, err, tc.key)
		}
	}
}

func TestPlanJSONHasNoNaN(t *testing.T) {
	cases := map[string]func(*PlanInput){
		"fanout":                         func(*PlanInput) {},
		"unlimited attempts always fail": func(in *PlanInput) { in.MaxAttempts, in.FailureProb = 0, 1 },
		"overloaded pool":                func(in *PlanInput) { in.Workers = 1 },
		"no arrivals":                    func(in *PlanInput) { in.ArrivalPerS = 0 },
		"no base delay":                  func(in *PlanInput) { in.Base, in.Jitter = 0, "decorrelated" },
		"no cap, huge multiplier":        func(in *PlanInput) { in.Cap, in.Multiplier, in.MaxAttempts = 0, 1e300, 0 },
		"no cap, decorrelated":           func(in *PlanInput) { in.Cap, in.Jitter, in.MaxAttempts = 0, "decorrelated", 0 },
		"no timeout, no window":          func(in *PlanInput) { in.AttemptTimeout, in.DeliveryWindow = 0, 0 },
		"zero share":                     func(in *PlanInput) { in.Outages[0].ShareOfDeliveries = 0 },
		"proportional full ratio":        func(in *PlanInput) { in.Jitter, in.JitterRatio = "proportional", 1 },
	}
	for name, mutate := range cases {
		in := fanoutInput()
		in.Outages = append([]PlanOutage(nil), in.Outages...)
		mutate(&in)
		plan, err := MakePlan(in)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		b, err := json.Marshal(plan) // fails on NaN or ±Inf
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var md bytes.Buffer
		if err := plan.WriteMarkdown(&md); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, bad := range []string{"NaN", "Inf"} {
			if strings.Contains(string(b), bad) || strings.Contains(md.String(), bad) {
				t.Errorf("%s: output contains %s", name, bad)
			}
		}
		for _, f := range plan.Figures() {
			if math.IsNaN(f.Value) || math.IsInf(f.Value, 0) {
				t.Errorf("%s: figure %s = %v", name, f.Name, f.Value)
			}
		}
	}
}

func TestPlanMarkdownGolden(t *testing.T) {
	plan, err := MakePlan(fanoutInput())
	if err != nil {
		t.Fatal(err)
	}
	var md bytes.Buffer
	if err := plan.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"# Capacity plan: fanout-outage", "## Inputs", "## Retry schedule", "**Window verdict:**",
		"## Retry amplification", "## Offered load", "## Worker pool (M/M/c, Erlang C)", "## Outage drain", "## Assumptions"} {
		if !strings.Contains(md.String(), h) {
			t.Errorf("markdown lacks %q", h)
		}
	}
	golden := filepath.Join("testdata", "plan_fanout.md")
	if *update {
		if err := os.WriteFile(golden, md.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(md.Bytes(), want) {
		t.Errorf("markdown differs from %s (run with -update after checking):\n%s", golden, md.String())
	}
}

func TestFiguresAndCheck(t *testing.T) {
	plan, err := MakePlan(fanoutInput())
	if err != nil {
		t.Fatal(err)
	}
	figs := plan.Figures()
	byName := map[string]Figure{}
	for _, f := range figs {
		byName[f.Name] = f
	}
	if f := byName[FigureAmplification]; f.Value != *plan.Amplification.Expected || f.Unit != "" {
		t.Errorf("amplification figure %+v", f)
	}
	if f := byName[FigureOldestReadyAge]; f.Value != plan.Pool.MMc.WqP99 || f.Unit != "s" {
		t.Errorf("oldest ready age figure %+v", f)
	}
	if f := byName[FigureDrainTime]; f.Value != *plan.Drains[0].DrainS || f.Unit != "s" {
		t.Errorf("drain time figure %+v", f)
	}
	rows := plan.CheckRows(map[string]float64{FigureAmplification: *plan.Amplification.Expected * 1.1})
	if len(rows) != 3 || rows[0].Why != "" || !relClose(rows[0].DiffPct, 10, 1e-9) || !rows[1].Missing || !rows[2].Missing {
		t.Errorf("check rows %+v", rows)
	}

	cases := []struct {
		name    string
		fig     Figure
		sim     float64
		diffPct float64
		why     string // substring; "" = no reason given
	}{
		// Within 20%: agrees.
		{"close", Figure{FigureAmplification, 1.5, ""}, 1.7, 100 * 0.2 / 1.5, ""},
		// An outage drives amplification up.
		{"amp high", Figure{FigureAmplification, 1.02, ""}, 2.04, 100, "correlated"},
		{"amp low", Figure{FigureAmplification, 3, ""}, 1.5, -50, "breaker"},
		// Seconds: far off in percent but under a second apart.
		{"tiny wait", Figure{FigureOldestReadyAge, 0.01, "s"}, 0.05, 400, ""},
		{"wait high", Figure{FigureOldestReadyAge, 2, "s"}, 30, 1400, "largest age"},
		{"drain high", Figure{FigureDrainTime, 60, "s"}, 300, 400, "backoff"},
		{"drain low", Figure{FigureDrainTime, 300, "s"}, 60, -80, "dead-lettered"},
		// Analytic 0: the difference reads as ±100%.
		{"from zero", Figure{FigureOldestReadyAge, 0, "s"}, 5, 100, "largest age"},
		{"unknown", Figure{"peak_pending", 100, ""}, 10, -90, "lower"},
	}
	for _, tc := range cases {
		r := CompareCheck([]Figure{tc.fig}, map[string]float64{tc.fig.Name: tc.sim})[0]
		if r.Simulated != tc.sim || r.Analytic != tc.fig.Value || !relClose(r.DiffPct, tc.diffPct, 1e-9) {
			t.Errorf("%s: %+v, want diff %v%%", tc.name, r, tc.diffPct)
		}
		if (tc.why == "") != (r.Why == "") || !strings.Contains(r.Why, tc.why) {
			t.Errorf("%s: why %q, want it to mention %q", tc.name, r.Why, tc.why)
		}
	}
	// Off is judged against the simulated value: 25% of it, and for times
	// at least a second.
	for _, tc := range []struct {
		fig   Figure
		sim   float64
		off   bool
		ratio float64 // 0: null
	}{
		{Figure{FigureDrainTime, 75, "s"}, 100, false, 0.75},
		{Figure{FigureDrainTime, 74, "s"}, 100, true, 0.74},
		{Figure{FigureDrainTime, 125, "s"}, 100, false, 1.25},
		{Figure{FigureDrainTime, 126, "s"}, 100, true, 1.26},
		{Figure{FigureDrainTime, 0.9, "s"}, 0, false, 0},
		{Figure{FigureDrainTime, 1.5, "s"}, 0, true, 0},
		{Figure{FigureAmplification, 1.3, ""}, 1, true, 1.3},
	} {
		r := CompareCheck([]Figure{tc.fig}, map[string]float64{tc.fig.Name: tc.sim})[0]
		if r.Off != tc.off || (tc.ratio == 0) != (r.Ratio == nil) || (r.Ratio != nil && !relClose(*r.Ratio, tc.ratio, 1e-12)) {
			t.Errorf("%v against %v: off %v ratio %v, want %v %v", tc.fig.Value, tc.sim, r.Off, deref(r.Ratio), tc.off, tc.ratio)
		}
	}
	if r := CompareCheck([]Figure{{FigureAmplification, 1, ""}}, map[string]float64{FigureAmplification: math.NaN()})[0]; !r.Missing || !r.Off || r.Simulated != 0 {
		t.Errorf("NaN simulated value: %+v", r)
	}
}

func TestFmtSeconds(t *testing.T) {
	cases := []struct {
		s    float64
		want string
	}{
		{0, "0s"},
		{1e-9, "<1µs"},            // below the resolution
		{0.00025, "250µs"},        // microseconds
		{0.0009996, "1ms"},        // rounds up into milliseconds, no exponent
		{0.25, "250ms"},           // milliseconds
		{0.9996, "1s"},            // rounds up into seconds, no exponent
		{7.824, "7.82s"},          // three significant digits
		{150, "2m30s"},            // minutes
		{3599.9, "59m59s"},        // truncated, never "60m"
		{3900, "1h05m"},           // hours
		{86400 * 3.5, "3.5d"},     // days
		{maxDelayS, "1.068e+05d"}, // the saturated delay
		{-2, "-2s"},               // negative
	}
	for _, tc := range cases {
		if got := fmtSeconds(tc.s); got != tc.want {
			t.Errorf("fmtSeconds(%v) = %q, want %q", tc.s, got, tc.want)
		}
	}
}

// A contended partner's call takes a network hop before the read and one
// before the write lands, besides its latency: the bundled jitter drill's
// row, with zero service time, is planned at two hops of 20ms (it failed
// with "mean_service: 0s" before).
func TestPlanInputCountsContendedHops(t *testing.T) {
	d, err := drills.Load("drills/jitter.toml", nil)
	if err != nil {
		t.Fatal(err)
	}
	in, err := PlanInputFor(d)
	if err != nil {
		t.Fatal(err)
	}
	if in.MeanService != 40*time.Millisecond || len(in.Cohorts) != 1 || in.Cohorts[0].MeanService != 40*time.Millisecond {
		t.Errorf("mean service %v, cohorts %+v; want 40ms (two 20ms hops)", in.MeanService, in.Cohorts)
	}
	if _, err := MakePlan(in); err != nil {
		t.Errorf("plan: %v", err)
	}
}
