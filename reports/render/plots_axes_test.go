package render

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/stormdrill/stormdrill/reports"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
)

func tickLabels(ticks []plot.Tick) []string {
	var labels []string
	for _, tk := range ticks {
		if tk.Label != "" {
			labels = append(labels, tk.Label)
		}
	}
	return labels
}

func TestNiceTicks(t *testing.T) {
	cases := []struct {
		lo, hi float64
		want   []string
	}{
		{0, 2625, []string{"0", "500", "1,000", "1,500", "2,000", "2,500"}},                      // separators, no decimals
		{0, 60, []string{"0", "10", "20", "30", "40", "50", "60"}},                               // minutes of a 1h drill
		{0, 1.05, []string{"0.0", "0.2", "0.4", "0.6", "0.8", "1.0"}},                            // one decimal, all alike
		{-0.3, 2.3, []string{"0.0", "0.5", "1.0", "1.5", "2.0"}},                                 // a range below 0
		{0, 2.6e6, []string{"0", "500,000", "1,000,000", "1,500,000", "2,000,000", "2,500,000"}}, // large counts
	}
	for _, c := range cases {
		if got := tickLabels(niceTicks{}.Ticks(c.lo, c.hi)); !slices.Equal(got, c.want) {
			t.Errorf("Ticks(%v, %v) labels %v, want %v", c.lo, c.hi, got, c.want)
		}
	}
	// Degenerate ranges: no ticks rather than a loop or a panic.
	for _, r := range [][2]float64{{1, 1}, {2, 1}, {0, math.Inf(1)}, {math.NaN(), 1}} {
		if got := (niceTicks{}).Ticks(r[0], r[1]); got != nil {
			t.Errorf("range %v: %d ticks, want none", r, len(got))
		}
	}
}

func TestCountDecadeTicks(t *testing.T) {
	got := tickLabels(countDecadeTicks{}.Ticks(0.5, 1e7))
	want := []string{"1", "10", "100", "1k", "10k", "100k", "1M", "10M"}
	if !slices.Equal(got, want) {
		t.Errorf("labels %v, want %v", got, want)
	}
}

// TestOrdinalsPlotLogScale: the ordinal bars are drawn on a log axis that
// shows the smallest bar (4 attempts next to 1.5 million) and leaves room
// above the tallest, and the bars hold their counts as labels.
func TestOrdinalsPlotLogScale(t *testing.T) {
	s := &reports.Summary{Attempts: reports.Attempts{ByOrdinal: []int64{1500000, 14000, 150, 4, 0}}}
	p, err := ordinalsPlot(plotInput{summary: s, ts: &reports.Timeseries{}}, "Attempts by ordinal")
	if err != nil || p == nil {
		t.Fatalf("ordinalsPlot: %v, %v", p, err)
	}
	if _, ok := p.Y.Scale.(plot.LogScale); !ok {
		t.Errorf("y scale %T, want plot.LogScale", p.Y.Scale)
	}
	if !(p.Y.Min > 0 && p.Y.Min < 4) || p.Y.Max < 1500000*3 {
		t.Errorf("y range [%v, %v], want (0, 4) to at least 4.5e6", p.Y.Min, p.Y.Max)
	}
	// Each bar is labelled with its count: the SVG holds every one.
	svg, err := renderPlot(p, "svg")
	if err != nil {
		t.Fatal(err)
	}
	for _, label := range []string{">1,500,000<", ">14,000<", ">150<", ">4<", ">1M<"} {
		if !strings.Contains(string(svg), label) {
			t.Errorf("SVG has no text %s", label)
		}
	}
	// Every bar 0: still drawable, on an empty decade.
	p, err = ordinalsPlot(plotInput{summary: &reports.Summary{Attempts: reports.Attempts{ByOrdinal: []int64{0, 0}}}, ts: &reports.Timeseries{}}, "t")
	if err != nil {
		t.Fatal(err)
	}
	if p != nil {
		if _, err := renderPlot(p, "png"); err != nil {
			t.Errorf("rendering all-zero bars: %v", err)
		}
	}
}

func TestCompactCount(t *testing.T) {
	cases := []struct {
		v    float64
		want string
	}{
		{0.1, "0.1"}, {1, "1"}, {100, "100"}, {1000, "1k"}, {1e5, "100k"}, {1e6, "1M"}, {1e9, "1G"},
	}
	for _, c := range cases {
		if got := compactCount(c.v); got != c.want {
			t.Errorf("compactCount(%v) = %q, want %q", c.v, got, c.want)
		}
	}
}

// TestPlotFont: the plots are set in Liberation Sans (the HTML around them
// is sans-serif), and the SVG names generic fallbacks for viewers without it.
func TestPlotFont(t *testing.T) {
	p := newPlot("title", "x", "y")
	for name, f := range map[string]font.Variant{
		"title": p.Title.TextStyle.Font.Variant, "x tick": p.X.Tick.Label.Font.Variant,
		"y label": p.Y.Label.TextStyle.Font.Variant, "legend": p.Legend.TextStyle.Font.Variant,
	} {
		if f != "Sans" {
			t.Errorf("%s font variant %q, want Sans", name, f)
		}
	}
	svg, err := renderPlot(p, "svg")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(svg), "font-family:'Liberation Sans',") || !strings.Contains(string(svg), "sans-serif;") {
		t.Error("SVG has no sans-serif font list")
	}
	if strings.Contains(string(svg), "Serif") {
		t.Error("SVG still names a serif font")
	}
}

func TestBreakerRows(t *testing.T) {
	tr := func(at float64, partner, from, to string) reports.BreakerTransition {
		return reports.BreakerTransition{Partner: partner, AtS: at, From: from, To: to}
	}
	cases := []struct {
		name string
		in   []reports.BreakerTransition
		want []breakerRow
	}{
		{"one failed probe stays as it is", []reports.BreakerTransition{
			tr(60, "a", "closed", "open"), tr(90, "a", "open", "half-open"), tr(90, "a", "half-open", "open"),
		}, []breakerRow{
			{"1m", "a", "closed", "open"}, {"1m30s", "a", "open", "half-open"}, {"1m30s", "a", "half-open", "open"},
		}},
		{"three failed probes then recovery", []reports.BreakerTransition{
			tr(60, "a", "closed", "open"),
			tr(90, "a", "open", "half-open"), tr(90, "a", "half-open", "open"),
			tr(120, "a", "open", "half-open"), tr(121, "a", "half-open", "open"),
			tr(151, "a", "open", "half-open"), tr(151, "a", "half-open", "open"),
			tr(181, "a", "open", "half-open"), tr(182, "a", "half-open", "closed"),
		}, []breakerRow{
			{"1m", "a", "closed", "open"},
			{"1m30s – 2m31s", "a", "open", "half-open → open, 3 times (each probe failed)"},
			{"3m01s", "a", "open", "half-open"}, {"3m02s", "a", "half-open", "closed"},
		}},
		{"another partner's probe breaks the run", []reports.BreakerTransition{
			tr(1, "a", "open", "half-open"), tr(1, "a", "half-open", "open"),
			tr(2, "b", "open", "half-open"), tr(2, "b", "half-open", "open"),
		}, []breakerRow{
			{"1s", "a", "open", "half-open"}, {"1s", "a", "half-open", "open"},
			{"2s", "b", "open", "half-open"}, {"2s", "b", "half-open", "open"},
		}},
		{"none", nil, nil},
	}
	for _, c := range cases {
		if got := breakerRows(c.in); !slices.Equal(got, c.want) {
			t.Errorf("%s:\n got %v\nwant %v", c.name, got, c.want)
		}
	}
}
