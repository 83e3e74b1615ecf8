package experiments

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// mean is a cell's mean of a metric, by labels.
func mean(t *testing.T, r *SweepResult, metric string, labels ...string) float64 {
	t.Helper()
	i, ok := r.CellAt(labels...)
	if !ok {
		t.Fatalf("no cell %v", labels)
	}
	st, err := r.Stat(i, metric)
	if err != nil {
		t.Fatal(err)
	}
	if st.N == 0 {
		t.Fatalf("%s has no value in cell %v", metric, labels)
	}
	return st.Mean
}

// The bundled jitter experiment, reduced to two client counts and five
// seeds, reproduces the published ordering of the 2015 AWS experiment.
func TestJitterReproducesPublishedOrdering(t *testing.T) {
	e, err := LoadExperiment("jitter.toml")
	if err != nil {
		t.Fatal(err)
	}
	e.Seeds = 5
	var keep []AxisValue
	for _, v := range e.Axes[0].Values {
		if v.Label == "100" || v.Label == "150" {
			keep = append(keep, v)
		}
	}
	e.Axes[0].Values = keep
	r, err := RunSweep(e, SweepOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"100", "150"} {
		calls := func(s string) float64 { return mean(t, r, "attempts", n, s) }
		done := func(s string) float64 { return mean(t, r, "completion_time", n, s) }
		none, expo, full, equal, decor := calls("no backoff"), calls("exponential"), calls("full jitter"), calls("equal jitter"), calls("decorrelated jitter")
		t.Logf("N=%s calls: none %.0f, expo %.0f, decorrelated %.0f, equal %.0f, full %.0f", n, none, expo, decor, equal, full)
		// Published: no backoff > exponential > decorrelated > equal ≥ full;
		// "≥" is "about the same or more", so equal may trail full by 2%.
		if !(none > expo && expo > decor && decor > equal && equal >= 0.98*full) {
			t.Errorf("N=%s: calls out of the published order", n)
		}
		tNone, tExpo := done("no backoff"), done("exponential")
		for _, s := range []string{"full jitter", "equal jitter", "decorrelated jitter"} {
			// Exponential is the slowest by far (≥ 3×); no backoff the fastest.
			if !(tExpo >= 3*done(s)) || !(tNone < done(s)) {
				t.Errorf("N=%s: completion time of %s (%.2fs) against exponential %.2fs, no backoff %.2fs", n, s, done(s), tExpo, tNone)
			}
		}
	}
	if expo, full := mean(t, r, "attempts", "100", "exponential"), mean(t, r, "attempts", "100", "full jitter"); !(expo > 2*full) {
		t.Errorf("at 100 clients exponential does %.0f calls, not more than twice full jitter's %.0f", expo, full)
	}
}

// A small experiment gives byte-identical files whatever the number of
// workers.
func TestSweepDeterministic(t *testing.T) {
	e, err := LoadExperiment("jitter.toml")
	if err != nil {
		t.Fatal(err)
	}
	e.Seeds = 3
	e.Axes[0].Values = e.Axes[0].Values[:2]
	var dirs []string
	for _, w := range []int{1, 3} {
		r, err := RunSweep(e, SweepOptions{Workers: w})
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		if err := WriteSweep(dir, r); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, dir)
	}
	for _, f := range []string{"report.md", "report.html", "runs.csv", "summary.json", "plot_attempts.svg", "plot_attempts.png"} {
		a, err1 := os.ReadFile(filepath.Join(dirs[0], f))
		b, err2 := os.ReadFile(filepath.Join(dirs[1], f))
		if err1 != nil || err2 != nil {
			t.Fatalf("%s: %v %v", f, err1, err2)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs between 1 and 3 workers", f)
		}
	}
	csv, _ := os.ReadFile(filepath.Join(dirs[0], "runs.csv"))
	if lines := strings.Count(string(csv), "\n"); lines != 1+2*5*3 {
		t.Errorf("runs.csv has %d lines, want a header and 30 runs", lines)
	}
}

// Without protection the storm outlasts the trigger; a retry budget
// recovers. tail.* averages minutes 8–10, long after the trigger.
func TestRetryStormPersistsWithoutProtection(t *testing.T) {
	e, err := LoadExperiment("retry-storm.toml")
	if err != nil {
		t.Fatal(err)
	}
	e.Seeds = 1
	r, err := RunSweep(e, SweepOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ok := func(trigger, policy string) float64 { return mean(t, r, "tail.successes_per_s", trigger, policy) }
	calls := func(trigger, policy string) float64 { return mean(t, r, "tail.attempts_per_s", trigger, policy) }
	// A short trigger: immediate retries recover (about 20 successes/s).
	if s := ok("5s", "immediate retry"); s < 18 {
		t.Errorf("5s trigger, immediate retry: %.1f successes/s at the end; want recovery", s)
	}
	// A longer one: still storming minutes later, calling at the pool's pace.
	if s, c := ok("40s", "immediate retry"), calls("40s", "immediate retry"); s > 1 || c < 60 {
		t.Errorf("40s trigger, immediate retry: %.1f successes/s, %.1f calls/s at the end; want a storm", s, c)
	}
	// The budget recovers from every trigger length.
	for _, trig := range []string{"2s", "20s", "80s"} {
		if s, c := ok(trig, "retry budget"), calls(trig, "retry budget"); s < 18 || c > 22 {
			t.Errorf("%s trigger, retry budget: %.1f successes/s, %.1f calls/s at the end; want recovery", trig, s, c)
		}
	}
	// Backoff with jitter recovers once its attempt limit keeps the offered
	// load under the partner's capacity; without a limit it storms too.
	if s := ok("40s", "backoff + full jitter, 2 attempts"); s < 18 {
		t.Errorf("40s trigger, backoff with 2 attempts: %.1f successes/s at the end; want recovery", s)
	}
	if s := ok("40s", "backoff + full jitter"); s > 1 {
		t.Errorf("40s trigger, backoff without an attempt limit: %.1f successes/s at the end; want a storm", s)
	}
}

func TestDescribe(t *testing.T) {
	tests := []struct {
		name        string
		xs          []float64
		mean, half  float64
		n           int
		minV, maxV  float64
		wantNaNMean bool
	}{
		// t(0.975, 4) = 2.776; s = 1.5811; half = 2.776 × 1.5811 / √5.
		{"five values", []float64{1, 2, 3, 4, 5}, 3, 2.776 * math.Sqrt(2.5) / math.Sqrt(5), 5, 1, 5, false},
		// One value: no interval.
		{"one value", []float64{7}, 7, 0, 1, 7, 7, false},
		// None: everything NaN.
		{"empty", nil, 0, 0, 0, 0, 0, true},
	}
	for _, tc := range tests {
		st := describe(tc.xs)
		if st.N != tc.n {
			t.Errorf("%s: n %d, want %d", tc.name, st.N, tc.n)
		}
		if tc.wantNaNMean {
			if !math.IsNaN(st.Mean) {
				t.Errorf("%s: mean %v, want NaN", tc.name, st.Mean)
			}
			continue
		}
		if math.Abs(st.Mean-tc.mean) > 1e-12 || math.Abs(st.CIHalf-tc.half) > 1e-9 || st.Min != tc.minV || st.Max != tc.maxV {
			t.Errorf("%s: got %+v", tc.name, st)
		}
	}
	if tQuantile975(1000) != 1.960 || tQuantile975(10) != 2.228 {
		t.Error("t table")
	}
}

func TestTOMLLiteral(t *testing.T) {
	tests := []struct {
		in   any
		want string
	}{
		{"full", `"full"`},           // a string is quoted
		{`a"b`, `"a\"b"`},            // and escaped
		{int64(40), "40"},            // integers stay integers
		{1.0, "1.0"},                 // floats stay floats
		{true, "true"},               // bools
		{[]any{int64(409)}, "[409]"}, // arrays
		{map[string]any{"dist": "constant", "value": "5ms"}, `{"dist" = "constant", "value" = "5ms"}`}, // inline tables
	}
	for _, tc := range tests {
		got, err := tomlLiteral(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("tomlLiteral(%#v) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

func TestLoadExperimentErrors(t *testing.T) {
	dir := t.TempDir()
	base, _ := filepath.Abs("drills/jitter.toml")
	tests := []struct {
		name, src, want string
	}{
		// A typo in a key is refused with its line.
		{"unknown key", "drill = \"" + base + "\"\nmetrics = [\"attempts\"]\nseedz = 3\n[[axes]]\nkey = \"source.events\"\nvalues = [10]\n", "x.toml:3: seedz: unknown key"},
		// A key unknown inside an axis.
		{"unknown axis key", "drill = \"" + base + "\"\nmetrics = [\"attempts\"]\n[[axes]]\nkey = \"source.events\"\nvalues = [10]\nlables = [\"a\"]\n", "x.toml:6: axes.lables: unknown key in axes"},
		// A metric that does not exist names the closest.
		{"bad metric", "drill = \"" + base + "\"\nmetrics = [\"amplificaton\"]\n[[axes]]\nkey = \"source.events\"\nvalues = [10]\n", `did you mean "amplification"`},
		// Labels must match values.
		{"labels", "drill = \"" + base + "\"\nmetrics = [\"attempts\"]\n[[axes]]\nkey = \"source.events\"\nvalues = [10, 20]\nlabels = [\"a\"]\n", "1 labels for 2 values"},
		// A drill key that does not exist is refused before anything runs.
		{"bad drill key", "drill = \"" + base + "\"\nmetrics = [\"attempts\"]\n[[axes]]\nkey = \"dispatcher.wokers\"\nvalues = [10]\n", "did you mean workers?"},
		// No drill at all.
		{"no drill", "metrics = [\"attempts\"]\n[[axes]]\nkey = \"source.events\"\nvalues = [10]\n", "drill: required"},
		// Not TOML.
		{"syntax", "drill = \n", "x.toml:1:"},
	}
	for _, tc := range tests {
		p := filepath.Join(dir, "x.toml")
		if err := os.WriteFile(p, []byte(tc.src), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := LoadExperiment(p)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v; want it to contain %q", tc.name, err, tc.want)
		}
	}
}

// Every bundled experiment loads.
func TestBundledExperimentsLoad(t *testing.T) {
	files, _ := filepath.Glob("*.toml")
	if len(files) < 5 {
		t.Fatalf("found %d experiments", len(files))
	}
	for _, f := range files {
		if _, err := LoadExperiment(f); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// TestHerdHashAgainstFull: deliveries that failed together retry within
// about 4.3s of each other under hash jitter whatever the delay, so at 5
// minutes they come back within 2% of it; full jitter spreads them over
// the whole delay, and its peak is far lower.
func TestHerdHashAgainstFull(t *testing.T) {
	e, err := LoadExperiment("herd.toml")
	if err != nil {
		t.Fatal(err)
	}
	r, err := RunSweep(e, SweepOptions{})
	if err != nil {
		t.Fatal(err)
	}
	span := func(jitter, d string) float64 { return mean(t, r, "retry_span", jitter, d) }
	peak := func(jitter, d string) float64 { return mean(t, r, "peak_retries_per_s", jitter, d) }
	for _, d := range []string{"10s", "30s", "1m", "5m"} {
		// 2^32ns is 4.3s; one-second samples round it up to 5s.
		if s := span("hash", d); s > 5 {
			t.Errorf("hash jitter at %s: retries span %vs, want at most 5s", d, s)
		}
	}
	if s := span("hash", "5m"); s/300 > 0.02 {
		t.Errorf("hash jitter at 5m: retries span %.1f%% of the delay, want under 2%%", 100*s/300)
	}
	if s := span("full", "5m"); s < 0.9*300 {
		t.Errorf("full jitter at 5m: retries span %vs, want most of the 300s delay", s)
	}
	if h, f := peak("hash", "5m"), peak("full", "5m"); h < 10*f {
		t.Errorf("peak retries/s at 5m: hash %v, full %v; want the herd at least 10× the full-jitter peak", h, f)
	}
}

// TestSweepTableOneUnitPerColumn: a duration column is written in one unit,
// chosen from its largest value.
func TestSweepTableOneUnitPerColumn(t *testing.T) {
	format := columnFormat("drain_time", []Stat{{N: 1, Mean: 286.19, Min: 286.19, Max: 286.19}, {N: 1, Mean: 648, Min: 648, Max: 648}})
	if got := []string{format(286.19), format(648)}; got[0] != "4.8min" || got[1] != "10.8min" {
		t.Errorf("column cells %q, want both in min", got)
	}
	format = columnFormat("drain_time", []Stat{{N: 1, Mean: 0.25, Min: 0.2, Max: 0.3}})
	if got := format(0.25); got != "250.0ms" {
		t.Errorf("sub-second column: %q, want ms", got)
	}
	// A ratio column: one precision for means and their ±, from the
	// column's largest value.
	format = columnFormat("peak_attempts_per_s", []Stat{{N: 3, Mean: 598.3, CIHalf: 0.009742, Min: 598.29, Max: 598.31}, {N: 3, Mean: 12.5, CIHalf: 1.25, Min: 11, Max: 14}})
	if got := statCell(format, Stat{N: 3, Mean: 598.3, CIHalf: 0.009742, Min: 598.29, Max: 598.31}); got != "598.3 ± 0.0 [598.3 – 598.3]" {
		t.Errorf("ratio cell %q, want one decimal throughout", got)
	}
	if got := columnFormat("amplification", []Stat{{N: 2, Mean: 1.5, CIHalf: 0.25, Min: 1.25, Max: 1.75}})(1.5); got != "1.500" {
		t.Errorf("small ratio: %q, want three decimals", got)
	}
	// Counts: whole numbers stay whole; a mean of whole counts may not be.
	if got := columnFormat("lost", []Stat{{N: 2, Mean: 0, Min: 0, Max: 0}})(0); got != "0" {
		t.Errorf("count: %q", got)
	}
	if got := columnFormat("lost", []Stat{{N: 2, Mean: 2.5, CIHalf: 0.5, Min: 2, Max: 3}})(2.5); got != "2.5" {
		t.Errorf("count mean: %q", got)
	}
}

// A metric that is 0 on every seed of every cell gets no plot and no chart,
// and one line says so; the other metrics get one chart each, grouped bars
// by series when the first axis is categories.
func TestSweepLeavesOutAlwaysZeroMetrics(t *testing.T) {
	e := &Experiment{Name: "x", Seeds: 2, Metrics: []string{"lost", "amplification"},
		Axes: []Axis{{Key: "policy.retry.jitter", Values: []AxisValue{{Label: "full"}, {Label: "equal"}}},
			{Key: "dispatcher.workers", Values: []AxisValue{{Label: "4"}, {Label: "8"}}}}}
	r := &SweepResult{Experiment: e}
	for i := range 4 {
		r.Cells = append(r.Cells, CellResult{
			Cell:  Cell{Labels: []string{e.Axes[0].Values[i/2].Label, e.Axes[1].Values[i%2].Label}, Values: []int{i / 2, i % 2}},
			Stats: []Stat{{N: 2}, {N: 2, Mean: 1 + float64(i), CIHalf: 0.1, Min: 1, Max: 2 + float64(i)}},
		})
	}
	if !r.alwaysZero(0) || r.alwaysZero(1) {
		t.Errorf("alwaysZero: lost %v, amplification %v", r.alwaysZero(0), r.alwaysZero(1))
	}
	if z := r.zeroLine(); z != "Always 0 in every run, so not plotted: lost." {
		t.Errorf("zero line %q", z)
	}
	charts := sweepCharts(r)
	if len(charts) != 1 || charts[0].XNames == nil || len(charts[0].Series) != 2 {
		t.Fatalf("charts %+v: want one, with categories and a series per worker count", charts)
	}
	if s := charts[0].Series[1]; s.Label != "dispatcher.workers = 8" || s.Values[0] != 2 || s.Values[1] != 4 {
		t.Errorf("series %+v: want workers = 8 at 2 (full) and 4 (equal)", s)
	}
	plots, err := sweepPlots(r)
	if err != nil || len(plots) != 1 || plots[0].name != "plot_amplification" {
		t.Errorf("plots %v, %v", plots, err)
	}
	if _, err := renderPlot(plots[0].draw, "svg"); err != nil {
		t.Errorf("grouped bars: %v", err)
	}
}
