package fakepartner

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

const ms = time.Millisecond

// draw returns n sorted samples of d from a fixed seed.
func draw(d *Dist, n int, seed uint64) []time.Duration {
	rng := rand.New(rand.NewPCG(seed, 1))
	xs := make([]time.Duration, n)
	for i := range xs {
		xs[i] = d.Sample(rng)
	}
	slices.Sort(xs)
	return xs
}

func sampleQuantile(sorted []time.Duration, q float64) time.Duration {
	return sorted[min(len(sorted)-1, int(q*float64(len(sorted))))]
}

func sampleMean(xs []time.Duration) float64 {
	var s float64
	for _, x := range xs {
		s += float64(x)
	}
	return s / float64(len(xs))
}

func relErr(got, want float64) float64 {
	if want == 0 {
		return math.Abs(got)
	}
	return math.Abs(got-want) / math.Abs(want)
}

// Samples agree with the analytic Quantile and Expected of every kind.
func TestDistSamplesMatchAnalytic(t *testing.T) {
	tests := []struct {
		name    string
		d       Dist
		tolQ    float64 // relative tolerance on quantiles
		tolMean float64 // relative tolerance on the mean
	}{
		// the drill's healthy partner
		{"lognormal 80ms/600ms", Dist{Kind: DistLognormal, P50: 80 * ms, P99: 600 * ms}, 0.03, 0.02},
		// a mean close to 0: a fifth of the mass is cut off and redrawn
		{"normal truncated", Dist{Kind: DistNormal, Mean: 10 * ms, Stddev: 12 * ms}, 0.03, 0.02},
		// the AWS jitter experiment's network delay
		{"abs-normal 10ms/2ms", Dist{Kind: DistAbsNormal, Mean: 10 * ms, Stddev: 2 * ms}, 0.02, 0.01},
		// folded around 0: mean 0 gives the half-normal
		{"abs-normal half", Dist{Kind: DistAbsNormal, Mean: 0, Stddev: 5 * ms}, 0.03, 0.02},
		{"uniform", Dist{Kind: DistUniform, Min: 20 * ms, Max: 120 * ms}, 0.02, 0.01},
		// alpha 2.5 has a finite variance, so the sample mean converges
		{"pareto min", Dist{Kind: DistPareto, Min: 10 * ms, Alpha: 2.5}, 0.05, 0.03},
		{"pareto p50", Dist{Kind: DistPareto, P50: 50 * ms, Alpha: 3}, 0.05, 0.03},
		{"empirical", Dist{Kind: DistEmpirical, Quantiles: []Quantile{{0, 10 * ms}, {0.5, 20 * ms}, {0.9, 50 * ms}, {1, 200 * ms}}}, 0.03, 0.02},
		{"constant", Dist{Kind: DistConstant, Value: 42 * ms}, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.d.Validate(); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			xs := draw(&tt.d, 200_000, 7)
			if xs[0] < 0 {
				t.Fatalf("negative sample %v", xs[0])
			}
			for _, q := range []float64{0.1, 0.5, 0.9, 0.99} {
				got, want := sampleQuantile(xs, q), tt.d.Quantile(q)
				if e := relErr(float64(got), float64(want)); e > tt.tolQ {
					t.Errorf("q%.2f: sampled %v, analytic %v (%.1f%% off)", q, got, want, 100*e)
				}
			}
			if e := relErr(sampleMean(xs), float64(tt.d.Expected())); e > tt.tolMean {
				t.Errorf("mean: sampled %v, analytic %v (%.1f%% off)", time.Duration(sampleMean(xs)), tt.d.Expected(), 100*e)
			}
		})
	}
}

// The lognormal's p50 and p99 are the drill's parameters.
func TestLognormalRecoversP50P99(t *testing.T) {
	d := Dist{Kind: DistLognormal, P50: 120 * ms, P99: 2 * time.Second}
	if q := d.Quantile(0.5); relErr(float64(q), float64(120*ms)) > 1e-9 {
		t.Errorf("Quantile(0.5) = %v, want 120ms", q)
	}
	if q := d.Quantile(0.99); relErr(float64(q), float64(2*time.Second)) > 1e-6 {
		t.Errorf("Quantile(0.99) = %v, want 2s", q)
	}
	xs := draw(&d, 200_000, 11)
	if e := relErr(float64(sampleQuantile(xs, 0.5)), float64(120*ms)); e > 0.02 {
		t.Errorf("sampled p50 %v is %.1f%% off 120ms", sampleQuantile(xs, 0.5), 100*e)
	}
	if e := relErr(float64(sampleQuantile(xs, 0.99)), float64(2*time.Second)); e > 0.04 {
		t.Errorf("sampled p99 %v is %.1f%% off 2s", sampleQuantile(xs, 0.99), 100*e)
	}
}

// Exact values of the analytic functions.
func TestDistExactValues(t *testing.T) {
	emp := Dist{Kind: DistEmpirical, Quantiles: []Quantile{{0, 10 * ms}, {0.5, 20 * ms}, {1, 100 * ms}}}
	tests := []struct {
		name string
		got  time.Duration
		want time.Duration
	}{
		{"empirical interpolates inside a segment", emp.Quantile(0.25), 15 * ms},
		{"empirical at a point", emp.Quantile(0.5), 20 * ms},
		{"empirical upper segment", emp.Quantile(0.75), 60 * ms},
		{"empirical mean is the trapezoid area", emp.Expected(), 37500 * time.Microsecond},
		// flat below the first point and above the last
		{"empirical below first q", (&Dist{Kind: DistEmpirical, Quantiles: []Quantile{{0.2, 5 * ms}, {1, 10 * ms}}}).Quantile(0.1), 5 * ms},
		{"pareto median from p50", (&Dist{Kind: DistPareto, P50: 80 * ms, Alpha: 1.2}).Quantile(0.5), 80 * ms},
		{"pareto q0 is the scale", (&Dist{Kind: DistPareto, Min: 10 * ms, Alpha: 2}).Quantile(0), 10 * ms},
		{"pareto alpha 2 mean is 2 xm", (&Dist{Kind: DistPareto, Min: 10 * ms, Alpha: 2}).Expected(), 20 * ms},
		{"pareto max caps the tail", (&Dist{Kind: DistPareto, Min: 10 * ms, Alpha: 0.5, Max: time.Second}).Quantile(0.9999), time.Second},
		{"pareto q1 without max is capped", (&Dist{Kind: DistPareto, Min: 10 * ms, Alpha: 1}).Quantile(1), MaxSample},
		{"uniform mean", (&Dist{Kind: DistUniform, Min: 10 * ms, Max: 30 * ms}).Expected(), 20 * ms},
		{"normal q0 is 0 (truncated)", (&Dist{Kind: DistNormal, Mean: 5 * ms, Stddev: 10 * ms}).Quantile(0), 0},
		{"normal with no spread", (&Dist{Kind: DistNormal, Mean: 5 * ms}).Quantile(0.9), 5 * ms},
		{"zero dist is constant 0", (&Dist{}).Quantile(0.5), 0},
	}
	for _, tt := range tests {
		if d := tt.got - tt.want; d < -time.Microsecond || d > time.Microsecond {
			t.Errorf("%s: got %v, want %v", tt.name, tt.got, tt.want)
		}
	}
}

// A Pareto's tail follows P(X > x) = (xm/x)^alpha.
func TestParetoTail(t *testing.T) {
	d := Dist{Kind: DistPareto, Min: 10 * ms, Alpha: 1.5}
	xs := draw(&d, 200_000, 3)
	for _, x := range []time.Duration{20 * ms, 100 * ms, time.Second} {
		i, _ := slices.BinarySearch(xs, x)
		got := float64(len(xs)-i) / float64(len(xs))
		want := math.Pow(float64(10*ms)/float64(x), 1.5)
		// relative error of a binomial proportion grows as the tail thins
		if e := relErr(got, want); e > 0.05+3/math.Sqrt(want*float64(len(xs))) {
			t.Errorf("P(X > %v) = %.5f, want %.5f", x, got, want)
		}
	}
	if xs[0] < 10*ms {
		t.Errorf("sample %v below the scale", xs[0])
	}
}

func TestDistValidate(t *testing.T) {
	tests := []struct {
		name string
		d    Dist
		want string // substring of the error; "" means valid
	}{
		{"zero value is a valid constant", Dist{}, ""},
		{"negative constant", Dist{Value: -ms}, "must not be negative"},
		{"uniform reversed", Dist{Kind: DistUniform, Min: 2 * ms, Max: ms}, "max (1ms) must be at least min (2ms)"},
		{"normal without spread or mean", Dist{Kind: DistNormal}, "needs mean or stddev"},
		{"abs-normal negative stddev", Dist{Kind: DistAbsNormal, Mean: ms, Stddev: -ms}, "stddev must not be negative"},
		{"lognormal missing p50", Dist{Kind: DistLognormal, P99: ms}, "p50 must be greater than 0"},
		{"lognormal p99 below p50", Dist{Kind: DistLognormal, P50: 3 * ms, P99: 2 * ms}, "p99 (2ms) must be greater than p50 (3ms)"},
		{"pareto without alpha", Dist{Kind: DistPareto, Min: ms}, "alpha must be"},
		{"pareto NaN alpha", Dist{Kind: DistPareto, Min: ms, Alpha: math.NaN()}, "alpha must be"},
		{"pareto without scale", Dist{Kind: DistPareto, Alpha: 1}, "needs min"},
		{"pareto both scales", Dist{Kind: DistPareto, Alpha: 1, Min: ms, P50: 2 * ms}, "not both"},
		{"pareto max below scale", Dist{Kind: DistPareto, Alpha: 1, Min: 2 * ms, Max: ms}, "max (1ms) must be at least the scale"},
		{"empirical one point", Dist{Kind: DistEmpirical, Quantiles: []Quantile{{0.5, ms}}}, "at least 2"},
		{"empirical q out of range", Dist{Kind: DistEmpirical, Quantiles: []Quantile{{0, ms}, {1.5, ms}}}, "quantile 2: q must be in [0, 1]"},
		{"empirical q not increasing", Dist{Kind: DistEmpirical, Quantiles: []Quantile{{0.5, ms}, {0.5, ms}}}, "must be greater than the previous q"},
		{"empirical values decreasing", Dist{Kind: DistEmpirical, Quantiles: []Quantile{{0, 2 * ms}, {1, ms}}}, "must not be below the previous value"},
		{"unknown kind", Dist{Kind: 99}, "unknown distribution kind"},
	}
	for _, tt := range tests {
		err := tt.d.Validate()
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: unexpected error %v", tt.name, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: error %v, want it to contain %q", tt.name, err, tt.want)
		}
	}
}

func TestParseDistKind(t *testing.T) {
	for _, k := range []DistKind{DistConstant, DistUniform, DistNormal, DistAbsNormal, DistLognormal, DistPareto, DistEmpirical} {
		got, err := ParseDistKind(k.String())
		if err != nil || got != k {
			t.Errorf("ParseDistKind(%q) = %v, %v", k.String(), got, err)
		}
	}
	if _, err := ParseDistKind("gaussian"); err == nil || !strings.Contains(err.Error(), "lognormal") {
		t.Errorf("ParseDistKind(gaussian) error %v, want the list of kinds", err)
	}
}

// Sampling any kind allocates nothing.
func TestDistSampleAllocs(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, d := range []Dist{
		{Kind: DistLognormal, P50: ms, P99: 10 * ms},
		{Kind: DistNormal, Mean: ms, Stddev: ms},
		{Kind: DistPareto, P50: ms, Alpha: 1},
		{Kind: DistEmpirical, Quantiles: []Quantile{{0, ms}, {0.5, 2 * ms}, {1, 3 * ms}}},
	} {
		if a := testing.AllocsPerRun(1000, func() { d.Sample(rng) }); a != 0 {
			t.Errorf("%s: %v allocs per sample", d.Kind, a)
		}
	}
}

// The Behaviour's sampler, which computes a distribution's parameters once,
// draws exactly what Dist.Sample draws, value for value, for every kind: a
// simulation's results must not depend on it.
func TestDistSamplerMatchesSample(t *testing.T) {
	dists := []Dist{
		{Kind: DistConstant, Value: 5 * ms},
		{Kind: DistUniform, Min: ms, Max: 9 * ms},
		{Kind: DistNormal, Mean: 20 * ms, Stddev: 15 * ms},
		{Kind: DistAbsNormal, Mean: 5 * ms, Stddev: 10 * ms},
		{Kind: DistLognormal, P50: 80 * ms, P99: 600 * ms},
		{Kind: DistPareto, Alpha: 1.5, P50: 50 * ms},
		{Kind: DistEmpirical, Quantiles: []Quantile{{0, ms}, {0.5, 10 * ms}, {1, 100 * ms}}},
	}
	for _, d := range dists {
		a, b := rand.New(rand.NewPCG(3, 4)), rand.New(rand.NewPCG(3, 4))
		s := newDistSampler(&d)
		for i := range 10_000 {
			if x, y := d.Sample(a), s.sample(b); x != y {
				t.Fatalf("%s: draw %d: Sample %v, sampler %v", d.Kind, i, x, y)
			}
		}
	}
}
