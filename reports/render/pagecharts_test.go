package render

import (
	"math"
	"strings"
	"testing"
)

// Categories become grouped bars: each series sits at its own offset
// within its category and has no value at the other series' x; numbers
// stay lines at their x.
func TestPageChartGroupedBars(t *testing.T) {
	nan := math.NaN()
	spec, err := pageChartSpec(PageChart{ID: "c", XNames: []string{"full", "equal"}, Series: []PageSeries{
		{Label: "a", Values: []float64{1, 2}, Err: []float64{0.1, 0.2}},
		{Label: "b", Values: []float64{3, nan}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	wantX := []float64{-0.2, 0.2, 0.8, 1.2}
	if !spec.Bars || len(spec.X) != len(wantX) {
		t.Fatalf("bars %v, x %v; want grouped bars at %v", spec.Bars, spec.X, wantX)
	}
	for i, x := range wantX {
		if math.Abs(spec.X[i]-x) > 1e-9 {
			t.Errorf("x[%d] = %v, want %v", i, spec.X[i], x)
		}
	}
	a, b := spec.Series[0], spec.Series[1]
	if a.Values[0] != 1 || a.Values[2] != 2 || !math.IsNaN(float64(a.Values[1])) || a.Err[2] != 0.2 {
		t.Errorf("series a: %v ± %v", a.Values, a.Err)
	}
	if b.Values[1] != 3 || !math.IsNaN(float64(b.Values[3])) || b.Err != nil {
		t.Errorf("series b: %v ± %v", b.Values, b.Err)
	}
	line, err := pageChartSpec(PageChart{ID: "l", X: []float64{1, 3}, Points: true, Series: []PageSeries{{Label: "a", Values: []float64{5, 6}}}})
	if err != nil || line.Bars || line.X[1] != 3 || line.Series[0].Values[1] != 6 || line.Outages == nil {
		t.Errorf("line chart: %+v, %v", line, err)
	}
	if _, err := pageChartSpec(PageChart{ID: "bad", X: []float64{1, 2}, Series: []PageSeries{{Label: "a", Values: []float64{1}}}}); err == nil || !strings.Contains(err.Error(), "bad") {
		t.Errorf("a series shorter than x: err %v", err)
	}
}
