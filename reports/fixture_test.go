package reports

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/ with the current output")

func ptr(v float64) *float64 { return &v }

func count(n int64) *int64 { return &n }

// fixtureSummary is a hand-built summary of a one-hour fan-out drill with
// two outages: acme drained after 4m05s, globex never drained.
func fixtureSummary() *Summary {
	s := &Summary{
		Drill:       "fanout-outage",
		Description: "Shipment update to 200 subscribers; two are down | for a while.",
		Seed:        42,
		Mode:        "live",
		DurationS:   3600,
		DrillTimeS:  4320.5,
		Speed:       10,
		Deliveries: Deliveries{
			Created: 1440000, Delivered: 1439000, DeadLettered: 900, Pending: 100, Lost: 0,
		},
		Attempts: Attempts{
			Total: 1500123, First: 1440000, Retries: 60123,
			ByOrdinal: []int64{1440000, 50000, 8000, 2000, 123},
		},
		Amplification: new(1.0417520833),
		Outages: []Outage{
			{Partner: "acme", Kind: "unavailable", StartS: 600, EndS: 1800, DrainTimeS: ptr(245.04), Retries: count(1234), DeadLetters: count(0)},
			{Partner: "globex", Kind: "timeout", StartS: 1200, EndS: 2400},
		},
		DrainTimeS:            nil,
		OldestReadyAgeMaxS:    12.34,
		OldestDelayedAgeMaxS:  1801.2,
		HealthyLatencyS:       Percentiles{Count: 1430000, P50: 0.081, P90: 0.2, P99: 0.61234, P999: 2.5, Max: 75.5},
		HealthyLatencyOutageS: Percentiles{Count: 500000, P50: 0.09, P90: 0.25, P99: 1.5, P999: 9.25, Max: 75.5},
		HealthyWithinSLO:      0.99987,
		SLOS:                  1800,
		DeadLetterReasons:     map[string]int64{"window-expired": 700, "permanent": 150, "circuit-open": 0, "zz-custom": 50},
		Duplicates:            new(int64(7)),
		RetryAfterIgnored:     3,
		SourceHeldBackS:       0,
		SourceHeldBackMaxS:    0,
		PeakAttemptsPerS:      812.25,
		PeakPending:           5321,
		Cohorts: []Cohort{
			{Name: "healthy", Subscribers: 198, Deliveries: 1425600, Delivered: 1425450, DeadLettered: 150, Attempts: 1440000,
				Amplification: new(1.0101), LatencyS: Percentiles{Count: 1425450, P99: 0.6}},
			{Name: "acme", Subscribers: 1, Faulty: true, Deliveries: 7200, Delivered: 7000, DeadLettered: 150, Pending: 50, Attempts: 30000,
				Amplification: new(4.166667), LatencyS: Percentiles{Count: 7000, P99: 650.5}},
			{Name: "globex", Subscribers: 1, Faulty: true, Deliveries: 7200, Delivered: 6550, DeadLettered: 600, Pending: 50, Attempts: 30123,
				Amplification: new(4.18375)},
		},
		Lateness: &Percentiles{Count: 1440000, P50: 0.0004, P90: 0.0011, P99: 0.0042, P999: 0.02, Max: 0.3},
		Alerts: []Alert{
			{AtS: 2100, Partner: "globex", Reason: "window-expired", Count: 100},
		},
		Restarts: []Restart{
			{AtS: 1500, DownS: 5, Graceful: false, InFlight: 4},
		},
	}
	// 55 transitions, to show the bound of 50 rows.
	states := []string{"closed", "open", "half-open"}
	for i := range 55 {
		s.BreakerTransitions = append(s.BreakerTransitions, BreakerTransition{
			Partner: "acme", AtS: 600 + float64(i)*20, From: states[i%3], To: states[(i+1)%3],
		})
	}
	return s
}

var fixtureGates = []string{
	"healthy.latency.p99 < 30m",
	"lost == 0",
	"amplification <= 1.04",
	"healthy_within_slo >= 99.9%",
	"drain_time < 10m",
	"dlq.window-expired <= 1000",
}

func fixtureRun(t *testing.T) *Run {
	t.Helper()
	s := fixtureSummary()
	gates, err := ParseGates(fixtureGates)
	if err != nil {
		t.Fatal(err)
	}
	EvalGates(s, gates)

	base := fixtureSummary()
	base.Amplification = new(1.01)
	base.HealthyLatencyS.P99 = 0.5
	base.Outages[1].DrainTimeS = ptr(300)
	base.DrainTimeS = ptr(300)
	tol := mustTolerances(t, "healthy.latency.p99=+10%", "amplification=+0.05", "drain_time=+1m")

	baseline := Compare(base, s, tol)
	baseline.Base = "out/baseline"
	ApplyComparison(s, baseline)
	return &Run{
		Summary: s,
		Timeseries: &Timeseries{
			IntervalS:       10,
			Reasons:         []string{"permanent", "window-expired"},
			BreakerPartners: []string{"acme", "globex"},
			Samples: []Sample{
				{T: 10, FirstAttemptsPerS: 400, RetriesPerS: 0, SuccessesPerS: 399.9, Ready: 3, InFlight: 12,
					OldestReadyAgeS: 0.0123456789, Amplification: 1, RunningAmplification: 1,
					DLQByReason: []float64{1, 0}, Breaker: []float64{0, 0}},
				{T: 20, FirstAttemptsPerS: 401.5, RetriesPerS: 12.25, SuccessesPerS: 390, TransientPerS: 11, TimeoutPerS: 1.25,
					Delayed: 40, InFlight: 20, OldestDelayedAgeS: 8, DLQPerS: 0.5, Amplification: 1.0305, RunningAmplification: 1.015,
					DLQByReason: []float64{2, 3}, Breaker: []float64{2, 1}},
				// A short sample: the missing cells stay empty.
				{T: 30, FirstAttemptsPerS: 399, DLQByReason: []float64{0}},
			},
		},
		Policy: []KV{
			{"retry.max_attempts", "6"},
			{"retry.backoff", "base 2s, cap 5m, full jitter"},
			{"breaker", "consecutive 5, cooldown 30s, on open: hold"},
		},
		Baseline: baseline,
		Dir:      filepath.Join("out", "fanout-outage"),
	}
}

var fixturePlots = []PlotRef{
	{Title: "Attempts per second", PNG: "attempts.png", SVG: "attempts.svg"},
	{Title: "Healthy latency CDF", PNG: "healthy latency.png", SVG: "healthy-latency.svg"},
}

// checkGolden compares got with testdata/name, or rewrites it with -update.
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./reports -run %s -update to create it)", err, t.Name())
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file; diff it, and if the change is intended rerun with -update.\n--- got ---\n%s", path, got)
	}
}

// seedSummary is a summary whose figures move with v.
func seedSummary(seed uint64, p99, amp float64, pass bool) *Summary {
	s := &Summary{Drill: "d", Seed: seed, Amplification: new(amp),
		HealthyLatencyS: Percentiles{Count: 100, P50: p99 / 4, P99: p99}}
	s.Deliveries = Deliveries{Created: 10, Delivered: 10}
	s.Gates = []GateResult{{Expr: "amplification <= 3", Value: amp, Display: FormatValue(Ratio, amp), Pass: pass}}
	Judge(s)
	return s
}

func multiSeed(first uint64, p99s, amps []float64) *Summary {
	var runs []*Run
	for i := range p99s {
		runs = append(runs, &Run{Summary: seedSummary(first+uint64(i), p99s[i], amps[i], true)})
	}
	return CombineSeeds(runs).Summary
}

func mustTolerances(t *testing.T, exprs ...string) []Tolerance {
	t.Helper()
	tol, err := ParseTolerances(exprs)
	if err != nil {
		t.Fatal(err)
	}
	return tol
}
