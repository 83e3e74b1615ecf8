package render

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestDownsample(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	noisy := func(n int) ([]float64, []float64) {
		xs := make([]float64, n)
		ys := make([]float64, n)
		for i := range xs {
			xs[i] = float64(i)
			ys[i] = rng.NormFloat64()
		}
		return xs, ys
	}
	spiky := func(n, peakAt, dipAt int) ([]float64, []float64) {
		xs, ys := noisy(n)
		ys[peakAt] = 1e6
		ys[dipAt] = -1e6
		return xs, ys
	}
	cases := []struct {
		name string
		xs   []float64
		ys   []float64
		max  int
	}{
		{"noise, 10x too long", nil, nil, 100},
		{"single spike and dip inside one bucket", nil, nil, 50},
		{"spike at the second point, dip at the second last", nil, nil, 10},
		{"max just above two: first and last only", nil, nil, 3},
		{"odd max", nil, nil, 101},
		{"flat line", make([]float64, 500), make([]float64, 500), 20},
	}
	cases[0].xs, cases[0].ys = noisy(1000)
	cases[1].xs, cases[1].ys = spiky(5000, 2500, 2501)
	cases[2].xs, cases[2].ys = spiky(300, 1, 298)
	cases[3].xs, cases[3].ys = noisy(40)
	cases[4].xs, cases[4].ys = spiky(7777, 0, 7776)
	for i := range cases[5].xs {
		cases[5].xs[i] = float64(i)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			x, y := Downsample(tc.xs, tc.ys, tc.max)
			if len(x) != len(y) {
				t.Fatalf("len(x) %d != len(y) %d", len(x), len(y))
			}
			if len(x) > tc.max {
				t.Fatalf("got %d points, want at most %d", len(x), tc.max)
			}
			n := len(tc.xs)
			if x[0] != tc.xs[0] || y[0] != tc.ys[0] || x[len(x)-1] != tc.xs[n-1] || y[len(y)-1] != tc.ys[n-1] {
				t.Errorf("first or last point lost: got (%v,%v)…(%v,%v)", x[0], y[0], x[len(x)-1], y[len(y)-1])
			}
			if !slices.IsSorted(x) {
				t.Errorf("points out of time order")
			}
			// Every kept point is a point of the input.
			for i := range x {
				j := int(x[i])
				if tc.xs[j] != x[i] || tc.ys[j] != y[i] {
					t.Fatalf("point %d (%v,%v) is not an input point", i, x[i], y[i])
				}
			}
			if tc.max >= 4 {
				if got, want := slices.Max(y), slices.Max(tc.ys); got != want {
					t.Errorf("global max %v lost, kept max %v", want, got)
				}
				if got, want := slices.Min(y), slices.Min(tc.ys); got != want {
					t.Errorf("global min %v lost, kept min %v", want, got)
				}
			}
		})
	}
}

func TestDownsampleSmallIsIdentity(t *testing.T) {
	xs := []float64{0, 1, 2, 3, 4}
	ys := []float64{5, -1, 7, 7, 2}
	for _, max := range []int{5, 6, MaxPlotPoints} {
		x, y := Downsample(xs, ys, max)
		if !slices.Equal(x, xs) || !slices.Equal(y, ys) {
			t.Errorf("max %d: got %v %v, want the input", max, x, y)
		}
		x[0] = 99 // a copy: the caller's slice is untouched
		if xs[0] != 0 {
			t.Fatalf("Downsample returned the input slice, not a copy")
		}
	}
}

func TestDownsampleEdges(t *testing.T) {
	xs := []float64{0, 1, 2, 3}
	ys := []float64{4, 3, 2, 1}
	cases := []struct {
		name   string
		xs, ys []float64
		max    int
		wantX  []float64
	}{
		{"empty input", nil, nil, 10, []float64{}},
		{"max 0 keeps nothing", xs, ys, 0, []float64{}},
		{"negative max keeps nothing", xs, ys, -3, []float64{}},
		{"max 1 keeps the first point", xs, ys, 1, []float64{0}},
		{"max 2 keeps first and last", xs, ys, 2, []float64{0, 3}},
		{"unequal lengths use the shorter", xs, ys[:2], 10, []float64{0, 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			x, y := Downsample(tc.xs, tc.ys, tc.max)
			if !slices.Equal(x, tc.wantX) || len(y) != len(x) {
				t.Errorf("got x %v y %v, want x %v", x, y, tc.wantX)
			}
		})
	}
}

func TestDownsampleNaN(t *testing.T) {
	n := 100
	xs := make([]float64, n)
	ys := make([]float64, n)
	for i := range xs {
		xs[i] = float64(i)
		ys[i] = math.NaN()
	}
	ys[50] = 3
	x, y := Downsample(xs, ys, 10)
	if len(x) > 10 {
		t.Fatalf("got %d points", len(x))
	}
	if !slices.Contains(y, 3) {
		t.Errorf("the only number among NaNs was dropped: %v", y)
	}
}

func TestDownsampleIndicesSharedAcrossSeries(t *testing.T) {
	// Two series peaking at different places: both peaks survive, and the
	// indices are shared (one x set), increasing and unique.
	n := 3000
	a := make([]float64, n)
	b := make([]float64, n)
	a[1234] = 10
	b[2345] = -10
	idx := downsampleIndices(n, [][]float64{a, b}, 100)
	if len(idx) > 100 {
		t.Fatalf("got %d indices", len(idx))
	}
	for i := 1; i < len(idx); i++ {
		if idx[i] <= idx[i-1] {
			t.Fatalf("indices not strictly increasing at %d: %v", i, idx[i-1:i+1])
		}
	}
	if !slices.Contains(idx, 1234) || !slices.Contains(idx, 2345) {
		t.Errorf("a peak of one of the series was dropped")
	}
}
