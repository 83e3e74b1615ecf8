package render

import (
	"bytes"
	"encoding/xml"
	"errors"
	"html"
	"image/png"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stormdrill/stormdrill/reports"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
)

// syntheticRun is a drill of n one-second samples with one outage over the
// second sixth to the half of the drill, the given breaker partners (the
// first opens during the outage with half-open probes, the others flap
// now and then), dead letters of two of three reasons and both CDFs.
func syntheticRun(n int, breakers []string) *reports.Run {
	rng := rand.New(rand.NewPCG(42, 1))
	outStart, outEnd := float64(n)/6, float64(n)/2
	ts := &reports.Timeseries{
		IntervalS:       1,
		Reasons:         []string{"permanent", "window-expired", "max-attempts"},
		BreakerPartners: breakers,
		Cohorts:         []string{"healthy", "acme"},
	}
	var attempts, first float64
	var ready, delayed float64
	for i := range n {
		t := float64(i + 1)
		inOutage := t >= outStart && t < outEnd
		s := reports.Sample{T: t, FirstAttemptsPerS: 40 + 4*rng.NormFloat64()}
		s.RetriesPerS = 1 + rng.Float64()
		if inOutage {
			s.RetriesPerS = 25 + 10*rng.Float64()
			delayed += 3
		} else {
			delayed = math.Max(0, delayed-20)
		}
		ready = math.Max(0, 5+3*rng.NormFloat64())
		s.SuccessesPerS = s.FirstAttemptsPerS + s.RetriesPerS/2
		s.Ready, s.Delayed, s.InFlight = ready, delayed, 10+rng.Float64()*5
		s.OldestReadyAgeS = rng.Float64() * 2
		if delayed > 0 {
			s.OldestDelayedAgeS = t - outStart
		}
		s.Amplification = (s.FirstAttemptsPerS + s.RetriesPerS) / s.FirstAttemptsPerS
		first += s.FirstAttemptsPerS
		attempts += s.FirstAttemptsPerS + s.RetriesPerS
		s.RunningAmplification = attempts / first
		// Faulty against healthy: acme retries hard during its outage and
		// its oldest delivery ages; the healthy cohort stays near 1.
		acmeAmp, acmeAge := 1.0, rng.Float64()
		if inOutage {
			acmeAmp, acmeAge = 3+rng.Float64(), t-outStart
		}
		s.CohortAmplification = []float64{1 + 0.02*rng.Float64(), acmeAmp}
		s.CohortFirstAttemptsPerS = []float64{s.FirstAttemptsPerS - 0.2, 0.2}
		s.CohortRetriesPerS = []float64{0.2, (acmeAmp - 1) * 0.2}
		s.CohortOldestAgeS = []float64{rng.Float64() * 2, acmeAge}
		s.HealthyLatencyP50S = 0.08 + 0.01*rng.Float64()
		s.HealthyLatencyP99S = 0.6 + 0.2*rng.Float64()
		if inOutage {
			s.HealthyLatencyP99S += 0.5
		}
		s.DLQByReason = make([]float64, len(ts.Reasons))
		if rng.Float64() < 0.01 {
			s.DLQByReason[0] = 1 // permanent, now and then
		}
		if inOutage && t > (outStart+outEnd)/2 {
			s.DLQByReason[2] = float64(rng.IntN(3)) // max-attempts late in the outage
		}
		s.Breaker = make([]float64, len(breakers))
		for p := range breakers {
			switch {
			case p == 0 && inOutage && i%30 == 0:
				s.Breaker[p] = 1
			case p == 0 && inOutage:
				s.Breaker[p] = 2
			case p > 0 && i%500 < 20:
				s.Breaker[p] = 2
			}
		}
		ts.Samples = append(ts.Samples, s)
	}
	cdf := func(scale float64) []reports.CDFPoint {
		pts := []reports.CDFPoint{{X: 0, P: 0.01}} // an instant answer: a zero latency
		for k := 1; k <= 200; k++ {
			pts = append(pts, reports.CDFPoint{X: scale * math.Exp(float64(k)/20) / 100, P: float64(k) / 200})
		}
		return pts
	}
	return &reports.Run{
		Summary: &reports.Summary{
			Drill:      "synthetic",
			DurationS:  float64(n),
			DrillTimeS: float64(n),
			SLOS:       1800,
			Outages: []reports.Outage{
				{Partner: "acme", Kind: "unavailable", StartS: outStart, EndS: outEnd},
				{Partner: "acme", Kind: "unavailable", StartS: outEnd + float64(n)/10, EndS: outEnd + float64(n)/6, Manual: true},
			},
			Restarts: []reports.Restart{{AtS: float64(n) / 3, DownS: 5, InFlight: 3}},
			Cohorts: []reports.Cohort{
				{Name: "healthy", Subscribers: 199, Attempts: 100000, Amplification: new(1.01)},
				{Name: "acme", Subscribers: 1, Faulty: true, Attempts: 3000, Amplification: new(2.5),
					StatusCodes: map[string]int64{"200": 1200, "503": 1800, "timeout": 3}},
			},
			Attempts: reports.Attempts{ByOrdinal: []int64{int64(first), 5000, 3000, 1000, 200, 50, 0}},
		},
		Timeseries:       ts,
		HealthyCDF:       cdf(1),
		HealthyOutageCDF: cdf(4),
	}
}

var allPlotNames = []string{
	"attempts", "faulty_attempts", "amplification", "pending", "oldest_age",
	"healthy_latency", "healthy_percentiles", "ordinals", "dead_letters", "breaker",
}

func TestWritePlots(t *testing.T) {
	run := syntheticRun(3000, []string{"acme-0", "globex-0"})
	dir := t.TempDir()
	refs, err := WritePlots(dir, run)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range refs {
		names = append(names, r.PNG[:len(r.PNG)-len(".png")])
		if r.Title == "" {
			t.Errorf("%s: no title", r.PNG)
		}
		if r.SVG != names[len(names)-1]+".svg" {
			t.Errorf("PNG %s and SVG %s do not pair up", r.PNG, r.SVG)
		}
		checkPNG(t, filepath.Join(dir, r.PNG))
		checkSVG(t, filepath.Join(dir, r.SVG))
	}
	if !slices.Equal(names, allPlotNames) {
		t.Errorf("plots %v, want %v", names, allPlotNames)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2*len(refs) {
		t.Errorf("%d files for %d plots, want 2 per plot", len(entries), len(refs))
	}

	// The same run again gives the same bytes.
	again := t.TempDir()
	if _, err := WritePlots(again, run); err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		a, _ := os.ReadFile(filepath.Join(dir, e.Name()))
		b, err := os.ReadFile(filepath.Join(again, e.Name()))
		if err != nil || !bytes.Equal(a, b) {
			t.Errorf("%s differs between two writes of the same run (err %v)", e.Name(), err)
		}
	}
}

func checkPNG(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("%s: %v", filepath.Base(path), err)
	}
	if b := img.Bounds(); b.Dx() <= 0 || b.Dy() <= 0 {
		t.Errorf("%s: empty image %v", filepath.Base(path), b)
	}
}

func checkSVG(t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(bytes.NewReader(data))
	root := ""
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: not well-formed XML: %v", filepath.Base(path), err)
		}
		if se, ok := tok.(xml.StartElement); ok && root == "" {
			root = se.Name.Local
		}
	}
	if root != "svg" {
		t.Errorf("%s: root element %q, want svg", filepath.Base(path), root)
	}
}

func TestWritePlotsSkipsPlotsWithoutData(t *testing.T) {
	cases := []struct {
		name string
		run  func() *reports.Run
		want []string
	}{
		{
			// No breaker partner: no breaker plot.
			"no breaker partners",
			func() *reports.Run { return syntheticRun(200, nil) },
			[]string{"attempts", "faulty_attempts", "amplification", "pending", "oldest_age", "healthy_latency", "healthy_percentiles", "ordinals", "dead_letters"},
		},
		{
			// Series without per-interval healthy percentiles: no plot of them.
			"no healthy percentiles",
			func() *reports.Run {
				r := syntheticRun(200, nil)
				for i := range r.Timeseries.Samples {
					r.Timeseries.Samples[i].HealthyLatencyP50S, r.Timeseries.Samples[i].HealthyLatencyP99S = 0, 0
				}
				return r
			},
			[]string{"attempts", "faulty_attempts", "amplification", "pending", "oldest_age", "healthy_latency", "ordinals", "dead_letters"},
		},
		{
			// Nothing at all: the two plots that always exist, as empty frames.
			"empty run",
			func() *reports.Run {
				return &reports.Run{Summary: &reports.Summary{}, Timeseries: &reports.Timeseries{}}
			},
			[]string{"attempts", "pending"},
		},
		{
			// A run without summary and series must not crash.
			"nil summary and timeseries",
			func() *reports.Run { return &reports.Run{} },
			[]string{"attempts", "pending"},
		},
		{
			// One CDF is enough for the latency plot; no dead letters, no plot.
			"only the outage CDF, no dead letters",
			func() *reports.Run {
				r := syntheticRun(200, []string{"acme-0"})
				r.HealthyCDF = nil
				for i := range r.Timeseries.Samples {
					r.Timeseries.Samples[i].DLQByReason = nil
				}
				return r
			},
			[]string{"attempts", "faulty_attempts", "amplification", "pending", "oldest_age", "healthy_latency", "healthy_percentiles", "ordinals", "breaker"},
		},
		{
			// Zero latencies only and no SLO: the log axis still has a range.
			"CDF of zero latencies, no SLO",
			func() *reports.Run {
				r := &reports.Run{Summary: &reports.Summary{}, HealthyCDF: []reports.CDFPoint{{X: 0, P: 1}}}
				return r
			},
			[]string{"attempts", "healthy_latency", "pending"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			refs, err := WritePlots(dir, tc.run())
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range refs {
				got = append(got, r.PNG[:len(r.PNG)-len(".png")])
				checkPNG(t, filepath.Join(dir, r.PNG))
				checkSVG(t, filepath.Join(dir, r.SVG))
			}
			slices.Sort(got)
			want := slices.Sorted(slices.Values(tc.want))
			if !slices.Equal(got, want) {
				t.Errorf("plots %v, want %v", got, want)
			}
		})
	}
}

// TestPlotsShowFaultyAgainstHealthy: with per-cohort series, the
// amplification and oldest-age plots draw one line per cohort, faulty
// first, the oldest-age plot carries the SLO line, and every time plot
// marks the restart and the manual outage in its legend.
func TestPlotsShowFaultyAgainstHealthy(t *testing.T) {
	plots, err := buildPlots(syntheticRun(600, []string{"acme"}))
	if err != nil {
		t.Fatal(err)
	}
	// The legend as drawn: the SVG's text elements.
	textRe := regexp.MustCompile(`<text[^>]*>([^<]*)</text>`)
	byName := map[string][]string{}
	for _, np := range plots {
		svg, err := renderPlot(np.plot, "svg")
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range textRe.FindAllSubmatch(svg, -1) {
			byName[np.name] = append(byName[np.name], html.UnescapeString(string(m[1])))
		}
	}
	wantPrefix := map[string][]string{
		"faulty_attempts":     {"acme first attempts/s", "acme retries/s"},
		"amplification":       {"acme (faulty)", "healthy", "pipeline, per interval"},
		"oldest_age":          {"acme (faulty)", "healthy"},
		"healthy_percentiles": {"p50", "p99"},
	}
	for name, want := range wantPrefix {
		got := byName[name]
		for _, w := range want {
			if !slices.Contains(got, w) {
				t.Errorf("%s legend %q lacks %q", name, got, w)
			}
		}
	}
	for _, name := range []string{"oldest_age", "healthy_percentiles", "healthy_latency"} {
		if !slices.ContainsFunc(byName[name], func(s string) bool { return strings.HasPrefix(s, "SLO ") }) {
			t.Errorf("%s legend %q has no SLO line", name, byName[name])
		}
	}
	for _, name := range []string{"attempts", "faulty_attempts", "amplification", "pending", "oldest_age", "healthy_percentiles", "dead_letters", "breaker"} {
		got := byName[name]
		for _, w := range []string{"scripted outage", "manual outage", "dispatcher restart"} {
			if !slices.Contains(got, w) {
				t.Errorf("%s legend %q does not mark the %s", name, got, w)
			}
		}
	}
}

func TestWritePlotsErrors(t *testing.T) {
	if _, err := WritePlots(t.TempDir(), nil); err == nil {
		t.Error("nil run: no error")
	}
	file := filepath.Join(t.TempDir(), "not-a-dir")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := WritePlots(file, syntheticRun(10, nil)); err == nil {
		t.Error("output dir is a file: no error")
	}
}

func TestWritePlotsBoundsFileSize(t *testing.T) {
	// A day at 1 s samples: without downsampling the attempts SVG holds
	// 86,400 points per series; with it, at most MaxPlotPoints.
	dir := t.TempDir()
	if _, err := WritePlots(dir, syntheticRun(86400, []string{"acme-0"})); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"attempts.svg", "attempts.png", "pending.svg", "amplification.svg"} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Size() > 400<<10 {
			t.Errorf("%s is %d bytes, want at most 400 KiB", name, fi.Size())
		}
	}
}

func TestAttemptsSeries(t *testing.T) {
	samples := []reports.Sample{
		{T: 60, FirstAttemptsPerS: 10, RetriesPerS: 0, SuccessesPerS: 9},
		{T: 120, FirstAttemptsPerS: 8, RetriesPerS: 5, SuccessesPerS: 12},
		{T: 180, FirstAttemptsPerS: 9, RetriesPerS: -1, SuccessesPerS: 9},         // negative retries: clamped
		{T: 240, FirstAttemptsPerS: math.NaN(), RetriesPerS: 3, SuccessesPerS: 2}, // unmeasured: 0
	}
	first, top, succ := attemptsSeries(samples, 60, MaxPlotPoints)
	wantFirst := plotter.XYs{{X: 1, Y: 10}, {X: 2, Y: 8}, {X: 3, Y: 9}, {X: 4, Y: 0}}
	wantTop := plotter.XYs{{X: 1, Y: 10}, {X: 2, Y: 13}, {X: 3, Y: 9}, {X: 4, Y: 3}}
	wantSucc := plotter.XYs{{X: 1, Y: 9}, {X: 2, Y: 12}, {X: 3, Y: 9}, {X: 4, Y: 2}}
	if !slices.Equal(first, wantFirst) || !slices.Equal(top, wantTop) || !slices.Equal(succ, wantSucc) {
		t.Errorf("got\n first %v\n top %v\n successes %v", first, top, succ)
	}

	// Long series: bounded, aligned, stacked, with peaks kept.
	run := syntheticRun(20000, nil)
	s := run.Timeseries.Samples
	s[777].RetriesPerS = 5000
	s[15000].FirstAttemptsPerS = 0 // a dip of first attempts
	first, top, succ = attemptsSeries(s, 1, MaxPlotPoints)
	if len(first) > MaxPlotPoints || len(top) != len(first) || len(succ) != len(first) {
		t.Fatalf("lengths %d %d %d, want equal and at most %d", len(first), len(top), len(succ), MaxPlotPoints)
	}
	byT := map[float64]reports.Sample{}
	for _, x := range s {
		byT[x.T] = x
	}
	for i := range first {
		x := byT[first[i].X]
		if first[i].X != top[i].X || top[i].X != succ[i].X {
			t.Fatalf("point %d: x values differ: %v %v %v", i, first[i].X, top[i].X, succ[i].X)
		}
		if first[i].Y != x.FirstAttemptsPerS || top[i].Y != x.FirstAttemptsPerS+x.RetriesPerS || succ[i].Y != x.SuccessesPerS {
			t.Fatalf("point %d at t=%v does not match its sample", i, first[i].X)
		}
	}
	if !slices.ContainsFunc(top, func(p plotter.XY) bool { return p.X == s[777].T }) {
		t.Error("the retry peak was dropped from the stacked top")
	}
	if !slices.ContainsFunc(first, func(p plotter.XY) bool { return p.X == s[15000].T && p.Y == 0 }) {
		t.Error("the first-attempt dip was dropped")
	}
}

func TestBandPolygon(t *testing.T) {
	bottom := plotter.XYs{{X: 0, Y: 1}, {X: 1, Y: 2}, {X: 2, Y: 1}}
	top := plotter.XYs{{X: 0, Y: 3}, {X: 1, Y: 5}, {X: 2, Y: 4}}
	want := plotter.XYs{{X: 0, Y: 1}, {X: 1, Y: 2}, {X: 2, Y: 1}, {X: 2, Y: 4}, {X: 1, Y: 5}, {X: 0, Y: 3}}
	if got := bandPolygon(bottom, top); !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if got := zeroLike(top); !slices.Equal(got, plotter.XYs{{X: 0}, {X: 1}, {X: 2}}) {
		t.Errorf("zeroLike: got %v", got)
	}
}

func TestBreakerSeries(t *testing.T) {
	states := []float64{0, 0, 2, 2, 2, 1, 0, 0}
	ts := &reports.Timeseries{BreakerPartners: []string{"acme-0", "short"}}
	for i, st := range states {
		// "short" carries no column: it reads as closed throughout.
		ts.Samples = append(ts.Samples, reports.Sample{T: float64(10 * (i + 1)), Breaker: []float64{st}})
	}
	partners, series := breakerSeries(ts.Samples, timeseriesColumns(ts), 1, MaxPlotPoints)
	if !slices.Equal(partners, []string{"acme-0", "short"}) {
		t.Fatalf("partners %v", partners)
	}
	// Change points plus the first and last samples.
	want := plotter.XYs{{X: 10, Y: 0}, {X: 30, Y: 2}, {X: 60, Y: 1}, {X: 70, Y: 0}, {X: 80, Y: 0}}
	if !slices.Equal(series[0], want) {
		t.Errorf("acme-0: got %v, want %v", series[0], want)
	}
	if !slices.Equal(series[1], plotter.XYs{{X: 10}, {X: 80}}) {
		t.Errorf("short: got %v", series[1])
	}

	// More partners than lines: the first maxBreakerLines.
	ts.BreakerPartners = make([]string, maxBreakerLines+3)
	if partners, _ := breakerSeries(ts.Samples, timeseriesColumns(ts), 1, MaxPlotPoints); len(partners) != maxBreakerLines {
		t.Errorf("%d lines, want %d", len(partners), maxBreakerLines)
	}

	// A breaker that flaps every sample is downsampled, not drawn in full.
	flap := &reports.Timeseries{BreakerPartners: []string{"flappy"}}
	for i := range 5000 {
		flap.Samples = append(flap.Samples, reports.Sample{T: float64(i), Breaker: []float64{float64(i % 3)}})
	}
	if _, s := breakerSeries(flap.Samples, timeseriesColumns(flap), 1, 100); len(s[0]) > 100 {
		t.Errorf("flapping breaker: %d points, want at most 100", len(s[0]))
	}
}

func TestDeadLetterSeries(t *testing.T) {
	ts := &reports.Timeseries{
		Reasons: []string{"permanent", "queue-full", "max-attempts"},
		Samples: []reports.Sample{
			{T: 1, DLQByReason: []float64{1, 0, 0}},
			{T: 2, DLQByReason: []float64{0, 0, 2}},
			{T: 3, DLQByReason: []float64{2}}, // short row: missing columns are 0
			{T: 4, DLQByReason: []float64{0, 0, 1}},
		},
	}
	reasons, series := deadLetterSeries(ts.Samples, timeseriesColumns(ts), 1, MaxPlotPoints)
	if !slices.Equal(reasons, []string{"permanent", "max-attempts"}) {
		t.Fatalf("reasons %v: queue-full has none and must be left out", reasons)
	}
	wantPermanent := plotter.XYs{{X: 1, Y: 1}, {X: 2, Y: 1}, {X: 3, Y: 3}, {X: 4, Y: 3}}
	wantMax := plotter.XYs{{X: 1, Y: 0}, {X: 2, Y: 2}, {X: 3, Y: 2}, {X: 4, Y: 3}}
	if !slices.Equal(series[0], wantPermanent) || !slices.Equal(series[1], wantMax) {
		t.Errorf("got %v and %v", series[0], series[1])
	}
	if r, s := deadLetterSeries(nil, timeseriesColumns(&reports.Timeseries{Reasons: []string{"permanent"}}), 1, 10); r != nil || s != nil {
		t.Errorf("no samples: got %v %v", r, s)
	}
}

func TestCDFSeries(t *testing.T) {
	got := cdfSeries([]reports.CDFPoint{
		{X: 0, P: 0.1},          // zero latency: clamped to the floor
		{X: math.NaN(), P: 0.2}, // dropped
		{X: 0.5, P: 0.7},
		{X: 3, P: 1.2}, // fraction clamped to 1
	}, MaxPlotPoints)
	// The first point is the rise from 0 at the smallest latency.
	want := plotter.XYs{{X: cdfFloorS, Y: 0}, {X: cdfFloorS, Y: 0.1}, {X: 0.5, Y: 0.7}, {X: 3, Y: 1}}
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	// A constant latency: a vertical rise at it, not a lone invisible point.
	if got := cdfSeries([]reports.CDFPoint{{X: 0.2, P: 1}}, MaxPlotPoints); !slices.Equal(got, plotter.XYs{{X: 0.2, Y: 0}, {X: 0.2, Y: 1}}) {
		t.Errorf("one-point CDF: got %v", got)
	}
	// A long CDF stays bounded.
	long := make([]reports.CDFPoint, 5000)
	for i := range long {
		long[i] = reports.CDFPoint{X: float64(i + 1), P: float64(i+1) / 5000}
	}
	if got := cdfSeries(long, 100); len(got) > 100 || got[len(got)-1] != (plotter.XY{X: 5000, Y: 1}) {
		t.Errorf("long CDF: %d points ending at %v", len(got), got[len(got)-1])
	}
	if got := cdfSeries(nil, MaxPlotPoints); len(got) != 0 {
		t.Errorf("empty CDF: got %v", got)
	}
}

func TestOrdinalBars(t *testing.T) {
	many := make([]int64, maxOrdinalBars+5)
	for i := range many {
		many[i] = 1
	}
	cases := []struct {
		name       string
		byOrdinal  []int64
		wantLabels []string
		wantTotal  float64
	}{
		{"none", nil, nil, 0},
		{"all zero", []int64{0, 0}, nil, 0},
		{"trailing zeros dropped", []int64{10, 3, 0, 1, 0, 0}, []string{"1", "2", "3", "4"}, 14},
		{"long tail summed into the last bar", many, nil, float64(len(many))},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			labels, heights := ordinalBars(tc.byOrdinal)
			if len(labels) != len(heights) {
				t.Fatalf("%d labels for %d bars", len(labels), len(heights))
			}
			var total float64
			for _, h := range heights {
				total += h
			}
			if total != tc.wantTotal {
				t.Errorf("bars sum to %v, want %v", total, tc.wantTotal)
			}
			if tc.wantLabels != nil && !slices.Equal(labels, tc.wantLabels) {
				t.Errorf("labels %v, want %v", labels, tc.wantLabels)
			}
			if len(labels) > maxOrdinalBars {
				t.Errorf("%d bars, want at most %d", len(labels), maxOrdinalBars)
			}
		})
	}
	labels, heights := ordinalBars(many)
	if labels[len(labels)-1] != "30+" || heights[len(heights)-1] != 6 {
		t.Errorf("last bar %s = %v, want 30+ = 6", labels[len(labels)-1], heights[len(heights)-1])
	}
}

func TestDecadeTicks(t *testing.T) {
	ticks := decadeTicks{}.Ticks(0.001, 100)
	var labels []string
	for _, tk := range ticks {
		if tk.Label != "" {
			labels = append(labels, tk.Label)
		}
	}
	if want := []string{"0.001", "0.01", "0.1", "1", "10", "100"}; !slices.Equal(labels, want) {
		t.Errorf("labels %v, want %v", labels, want)
	}
	if len(ticks) != 5*9+1 {
		t.Errorf("%d ticks, want 46 (9 per decade and the last)", len(ticks))
	}
	for _, r := range [][2]float64{{0, 10}, {-1, 10}, {10, 1}, {1, math.Inf(1)}} {
		if got := (decadeTicks{}).Ticks(r[0], r[1]); got != nil {
			t.Errorf("range %v: got %d ticks, want none", r, len(got))
		}
	}
}

func TestOutageShading(t *testing.T) {
	shade := newOutageShading([]reports.Outage{
		{StartS: 600, EndS: 1800},
		{StartS: 100, EndS: 100},          // empty: not shaded
		{StartS: 900, EndS: 300},          // inverted: not shaded
		{StartS: math.NaN(), EndS: 1e300}, // NaN start reads as 0
	}, 60)
	if shade == nil {
		t.Fatal("no shading")
	}
	if want := [][2]float64{{10, 30}, {0, 1e300 / 60}}; !slices.Equal(shade.windows, want) {
		t.Errorf("windows %v, want %v (minutes)", shade.windows, want)
	}
	// Shading must not stretch the time axis to the outage windows.
	if _, ok := any(shade).(plot.DataRanger); ok {
		t.Error("outage shading has a data range")
	}
	if s := newOutageShading([]reports.Outage{{StartS: 5, EndS: 1}}, 1); s != nil {
		t.Errorf("no valid window: got %v", s.windows)
	}
}

func TestChooseAxes(t *testing.T) {
	cases := []struct {
		spanS    float64
		wantDivS float64
	}{
		{0, 1},    // empty drill
		{600, 1},  // ten minutes still reads well in seconds
		{601, 60}, // beyond: minutes
		{86400, 60},
	}
	for _, tc := range cases {
		if got := chooseTimeAxis(tc.spanS).divS; got != tc.wantDivS {
			t.Errorf("time axis for %v s: unit %v s, want %v s", tc.spanS, got, tc.wantDivS)
		}
		if got := chooseDurationAxis(tc.spanS).divS; got != tc.wantDivS {
			t.Errorf("duration axis for %v s: unit %v s, want %v s", tc.spanS, got, tc.wantDivS)
		}
	}
}

func TestLegendSeconds(t *testing.T) {
	cases := []struct {
		s    float64
		want string
	}{
		{1800, "30m"},
		{7200, "2h"},
		{90, "90s"}, // not a whole number of minutes
		{0.25, "250ms"},
	}
	for _, tc := range cases {
		if got := legendSeconds(tc.s); got != tc.want {
			t.Errorf("legendSeconds(%v) = %q, want %q", tc.s, got, tc.want)
		}
	}
}

func BenchmarkWritePlots(b *testing.B) {
	run := syntheticRun(3600, []string{"acme-0", "globex-0"}) // 1 h at 1 s
	dir := b.TempDir()
	for b.Loop() {
		if _, err := WritePlots(dir, run); err != nil {
			b.Fatal(err)
		}
	}
}

// A DLQ replay is shaded on every time plot and chart, from its start
// until its replayed deliveries drained (the drill's end while one is
// pending); a replay that moved nothing is not.
func TestReplayWindowsMarked(t *testing.T) {
	run := syntheticRun(600, nil)
	drain := 50.0
	run.Summary.Replays = []reports.Replay{
		{Action: 1, AtS: 400, Replayed: 30, LastBatchS: 410, DrainTimeS: &drain},
		{Action: 2, AtS: 500, Replayed: 5, LastBatchS: 500},
		{Action: 3, AtS: 550},
	}
	if got := replayWindows(run.Summary); len(got) != 2 || got[0] != [2]float64{400, 450} || got[1] != [2]float64{500, 600} {
		t.Errorf("replay windows %v, want [400 450] and [500 600] (still pending: until the end)", got)
	}
	if m := timeMarks(run.Summary, 60); len(m.replays) != 2 || m.replays[0][0] != reports.RoundFloat(400.0/60) {
		t.Errorf("chart marks in minutes: %v", m.replays)
	}
	dir := t.TempDir()
	if _, err := WritePlots(dir, run); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"attempts", "pending"} {
		b, err := os.ReadFile(filepath.Join(dir, name+".svg"))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(b, []byte("DLQ replay")) {
			t.Errorf("%s.svg has no DLQ replay legend entry", name)
		}
	}
	run.Summary.Replays = nil
	if _, err := WritePlots(dir, run); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "pending.svg")); bytes.Contains(b, []byte("DLQ replay")) {
		t.Error("a run without replays has a DLQ replay legend entry")
	}
}

// TestLatencyAxesFitTheData: a latency axis ends a little past the data,
// not at an SLO far beyond it (the legend then says where the SLO is); an
// SLO within reach of the data is drawn on the axis.
func TestLatencyAxesFitTheData(t *testing.T) {
	for _, tc := range []struct {
		sloS       float64
		wantMaxS   [2]float64 // the CDF's x axis ends in this range
		wantLegend string
	}{
		{1800, [2]float64{10, 20}, "SLO 30m: beyond this scale"},
		{20, [2]float64{20, 30}, "SLO 20s"},
	} {
		run := syntheticRun(600, nil)
		run.Summary.SLOS = tc.sloS
		pts := make([]reports.CDFPoint, 0, 101)
		for k := 0; k <= 100; k++ {
			pts = append(pts, reports.CDFPoint{X: 0.05 + 0.1*float64(k), P: float64(k) / 100}) // ends at 10.05s
		}
		run.HealthyCDF, run.HealthyOutageCDF = pts, nil
		in := plotInput{run: run, summary: run.Summary, ts: run.Timeseries, time: chooseTimeAxis(600)}
		p, err := healthyLatencyPlot(in, "cdf")
		if err != nil {
			t.Fatal(err)
		}
		if p.X.Max < tc.wantMaxS[0] || p.X.Max > tc.wantMaxS[1] {
			t.Errorf("SLO %vs: the x axis ends at %vs, want within %v", tc.sloS, p.X.Max, tc.wantMaxS)
		}
		svg, err := renderPlot(p, "svg")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(html.UnescapeString(string(svg)), tc.wantLegend) {
			t.Errorf("SLO %vs: the legend does not say %q", tc.sloS, tc.wantLegend)
		}
	}
}
