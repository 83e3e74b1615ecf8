package fakepartner

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"time"
)

// DistKind names a latency distribution.
type DistKind uint8

// Distribution kinds. The zero Dist is DistConstant with Value 0.
const (
	DistConstant  DistKind = iota // always Value
	DistUniform                   // uniform in [Min, Max]
	DistNormal                    // normal(Mean, Stddev) truncated at 0 (resampled, not clamped)
	DistAbsNormal                 // |normal(Mean, Stddev)|, the folded normal
	DistLognormal                 // lognormal through P50 and P99
	DistPareto                    // Pareto with shape Alpha, scale Min or derived from P50
	DistEmpirical                 // piecewise-linear inverse CDF through Quantiles
)

var distKindNames = [...]string{
	DistConstant:  "constant",
	DistUniform:   "uniform",
	DistNormal:    "normal",
	DistAbsNormal: "abs-normal",
	DistLognormal: "lognormal",
	DistPareto:    "pareto",
	DistEmpirical: "empirical",
}

// String returns the kind's name as written in a drill.
func (k DistKind) String() string {
	if int(k) < len(distKindNames) {
		return distKindNames[k]
	}
	return fmt.Sprintf("DistKind(%d)", int(k))
}

// ParseDistKind parses a distribution name; "" means constant.
func ParseDistKind(s string) (DistKind, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "constant":
		return DistConstant, nil
	case "uniform":
		return DistUniform, nil
	case "normal":
		return DistNormal, nil
	case "abs-normal", "absnormal", "abs_normal", "folded-normal":
		return DistAbsNormal, nil
	case "lognormal":
		return DistLognormal, nil
	case "pareto":
		return DistPareto, nil
	case "empirical":
		return DistEmpirical, nil
	}
	return 0, fmt.Errorf("unknown distribution %q: want constant, uniform, normal, abs-normal, lognormal, pareto or empirical", s)
}

// Quantile is one point (Q, Value) of an empirical distribution.
type Quantile struct {
	Q     float64
	Value time.Duration
}

// Dist is a latency distribution. Which fields matter depends on Kind:
//
//	constant   Value
//	uniform    Min, Max
//	normal     Mean, Stddev (truncated at 0)
//	abs-normal Mean, Stddev (|X|)
//	lognormal  P50, P99
//	pareto     Alpha and either Min (the scale) or P50; Max, if set, caps samples
//	empirical  Quantiles: q in [0, 1] strictly increasing, values not decreasing
type Dist struct {
	Kind      DistKind
	Value     time.Duration
	Min       time.Duration
	Max       time.Duration
	Mean      time.Duration
	Stddev    time.Duration
	P50       time.Duration
	P99       time.Duration
	Alpha     float64
	Quantiles []Quantile
}

// MaxSample caps every sample, quantile and mean, so that a heavy tail can
// neither overflow a time.Duration nor stall a drill for centuries.
const MaxSample = 1000 * time.Hour

// z99 is the standard normal quantile at 0.99.
const z99 = 2.3263478740408408

// maxNormalRejections bounds the rejection loop of the truncated normal;
// after it the sample falls back to the exact inverse CDF.
const maxNormalRejections = 64

// Validate reports what is wrong with d, naming the fields.
func (d *Dist) Validate() error {
	switch d.Kind {
	case DistConstant:
		return d.nonNegative("value", d.Value)
	case DistUniform:
		return d.validateUniform()
	case DistNormal, DistAbsNormal:
		return d.validateNormal()
	case DistLognormal:
		return d.validateLognormal()
	case DistPareto:
		return d.validatePareto()
	case DistEmpirical:
		return d.validateEmpirical()
	}
	return fmt.Errorf("unknown distribution kind %d", int(d.Kind))
}

// nonNegative refuses a negative parameter.
func (d *Dist) nonNegative(name string, v time.Duration) error {
	if v < 0 {
		return fmt.Errorf("%s: %s must not be negative (got %v)", d.Kind, name, v)
	}
	return nil
}

func (d *Dist) validateUniform() error {
	if err := d.nonNegative("min", d.Min); err != nil {
		return err
	}
	if d.Max < d.Min {
		return fmt.Errorf("uniform: max (%v) must be at least min (%v)", d.Max, d.Min)
	}
	return nil
}

func (d *Dist) validateNormal() error {
	if err := d.nonNegative("mean", d.Mean); err != nil {
		return err
	}
	if err := d.nonNegative("stddev", d.Stddev); err != nil {
		return err
	}
	if d.Kind == DistNormal && d.Mean == 0 && d.Stddev == 0 {
		return fmt.Errorf("normal: needs mean or stddev greater than 0")
	}
	return nil
}

func (d *Dist) validateLognormal() error {
	if d.P50 <= 0 {
		return fmt.Errorf("lognormal: p50 must be greater than 0 (got %v)", d.P50)
	}
	if d.P99 <= d.P50 {
		return fmt.Errorf("lognormal: p99 (%v) must be greater than p50 (%v)", d.P99, d.P50)
	}
	return nil
}

func (d *Dist) validatePareto() error {
	if !(d.Alpha > 0) || math.IsInf(d.Alpha, 0) {
		return fmt.Errorf("pareto: alpha must be a number greater than 0 (got %v)", d.Alpha)
	}
	switch {
	case d.Min > 0 && d.P50 > 0:
		return fmt.Errorf("pareto: give either min (the scale) or p50, not both")
	case d.Min <= 0 && d.P50 <= 0:
		return fmt.Errorf("pareto: needs min (the scale) or p50 greater than 0")
	}
	if d.Max != 0 && d.Max < d.paretoScale() {
		return fmt.Errorf("pareto: max (%v) must be at least the scale (%v)", d.Max, d.paretoScale())
	}
	return nil
}

func (d *Dist) validateEmpirical() error {
	if len(d.Quantiles) < 2 {
		return fmt.Errorf("empirical: needs at least 2 quantiles (got %d)", len(d.Quantiles))
	}
	for i, q := range d.Quantiles {
		if !(q.Q >= 0 && q.Q <= 1) {
			return fmt.Errorf("empirical: quantile %d: q must be in [0, 1] (got %v)", i+1, q.Q)
		}
		if q.Value < 0 {
			return fmt.Errorf("empirical: quantile %d: value must not be negative (got %v)", i+1, q.Value)
		}
		if i == 0 {
			continue
		}
		p := d.Quantiles[i-1]
		if q.Q <= p.Q {
			return fmt.Errorf("empirical: quantile %d: q (%v) must be greater than the previous q (%v)", i+1, q.Q, p.Q)
		}
		if q.Value < p.Value {
			return fmt.Errorf("empirical: quantile %d: value (%v) must not be below the previous value (%v)", i+1, q.Value, p.Value)
		}
	}
	return nil
}

// Sample draws one latency using rng, which the caller owns. It does not
// allocate. d must be valid (see Validate); an invalid d gives a sample
// clamped to [0, MaxSample], never a panic.
func (d *Dist) Sample(rng *rand.Rand) time.Duration {
	switch d.Kind {
	case DistConstant:
		return clampNs(float64(d.Value))
	case DistUniform:
		return clampNs(float64(d.Min) + rng.Float64()*float64(d.Max-d.Min))
	case DistNormal:
		mu, sd := float64(d.Mean), float64(d.Stddev)
		for range maxNormalRejections {
			if x := mu + sd*rng.NormFloat64(); x >= 0 {
				return clampNs(x)
			}
		}
		return d.Quantile(rng.Float64())
	case DistAbsNormal:
		return clampNs(math.Abs(float64(d.Mean) + float64(d.Stddev)*rng.NormFloat64()))
	case DistLognormal:
		mu, sigma := d.lognormalParams()
		return clampNs(exp(mu + float64(sigma*rng.NormFloat64())))
	case DistPareto, DistEmpirical:
		return d.Quantile(rng.Float64())
	}
	return 0
}

// Quantile returns the q-quantile (q in [0, 1]). It is exact for every kind
// except abs-normal, which is solved numerically to well under a nanosecond.
func (d *Dist) Quantile(q float64) time.Duration {
	if !(q >= 0) { // also NaN
		q = 0
	}
	if q > 1 {
		q = 1
	}
	switch d.Kind {
	case DistConstant:
		return clampNs(float64(d.Value))
	case DistUniform:
		return clampNs(float64(d.Min) + q*float64(d.Max-d.Min))
	case DistNormal:
		mu, sd := float64(d.Mean), float64(d.Stddev)
		if sd == 0 {
			return clampNs(mu)
		}
		lo := normCDF(-mu / sd) // mass below 0, cut off
		return clampNs(mu + sd*normQuantile(lo+q*(1-lo)))
	case DistAbsNormal:
		return d.absNormalQuantile(q)
	case DistLognormal:
		mu, sigma := d.lognormalParams()
		return clampNs(math.Exp(mu + sigma*normQuantile(q)))
	case DistPareto:
		xm, alpha := d.paretoScale(), d.Alpha
		if alpha <= 0 {
			return 0
		}
		x := float64(xm) * math.Pow(1-q, -1/alpha) // +Inf at q = 1, clamped below
		if d.Max > 0 && x > float64(d.Max) {
			x = float64(d.Max)
		}
		return clampNs(x)
	case DistEmpirical:
		return d.empiricalQuantile(q)
	}
	return 0
}

// Expected returns the distribution's mean (the method cannot be called
// Mean: that is a field), accounting for the MaxSample cap
// (so a Pareto with alpha <= 1 has a finite, if very large, mean).
func (d *Dist) Expected() time.Duration {
	switch d.Kind {
	case DistConstant, DistUniform:
		return clampNs((float64(d.Quantile(0)) + float64(d.Quantile(1))) / 2)
	case DistNormal:
		mu, sd := float64(d.Mean), float64(d.Stddev)
		if sd == 0 {
			return clampNs(mu)
		}
		a := -mu / sd
		return clampNs(mu + sd*normPDF(a)/(1-normCDF(a)))
	case DistAbsNormal:
		mu, sd := float64(d.Mean), float64(d.Stddev)
		if sd == 0 {
			return clampNs(math.Abs(mu))
		}
		return clampNs(sd*math.Sqrt(2/math.Pi)*math.Exp(-mu*mu/(2*sd*sd)) + mu*(1-2*normCDF(-mu/sd)))
	case DistLognormal:
		mu, sigma := d.lognormalParams()
		return clampNs(math.Exp(mu + sigma*sigma/2))
	case DistPareto:
		// E[min(X, M)] = xm + xm^a (M^(1-a) - xm^(1-a)) / (1-a); xm (1 + ln(M/xm)) at a = 1.
		xm, a := float64(d.paretoScale()), d.Alpha
		m := float64(MaxSample)
		if d.Max > 0 && float64(d.Max) < m {
			m = float64(d.Max)
		}
		if xm <= 0 || a <= 0 || m <= xm {
			return clampNs(xm)
		}
		if math.Abs(a-1) < 1e-12 {
			return clampNs(xm * (1 + math.Log(m/xm)))
		}
		// Written in ratios to stay finite for large and small a.
		return clampNs(xm + xm*(math.Pow(m/xm, 1-a)-1)/(1-a))
	case DistEmpirical:
		qs := d.Quantiles
		if len(qs) == 0 {
			return 0
		}
		// Flat below the first and above the last point, trapezoids between.
		sum := qs[0].Q*float64(qs[0].Value) + (1-qs[len(qs)-1].Q)*float64(qs[len(qs)-1].Value)
		for i := 1; i < len(qs); i++ {
			sum += (qs[i].Q - qs[i-1].Q) * (float64(qs[i].Value) + float64(qs[i-1].Value)) / 2
		}
		return clampNs(sum)
	}
	return 0
}

// distSampler is a Dist with the parameters its samples derive from
// computed once: a lognormal's two logarithms cost as much as the sample.
// It samples exactly as Dist.Sample does, draw for draw.
type distSampler struct {
	d         *Dist
	mu, sigma float64 // lognormal only
}

func newDistSampler(d *Dist) distSampler {
	s := distSampler{d: d}
	if d.Kind == DistLognormal {
		s.mu, s.sigma = d.lognormalParams()
	}
	return s
}

func (s *distSampler) sample(rng *rand.Rand) time.Duration {
	if s.d.Kind == DistLognormal {
		return clampNs(exp(s.mu + float64(s.sigma*rng.NormFloat64())))
	}
	return s.d.Sample(rng)
}

func (d *Dist) lognormalParams() (mu, sigma float64) {
	p50, p99 := float64(d.P50), float64(d.P99)
	if p50 <= 0 {
		return math.Inf(-1), 0
	}
	mu = math.Log(p50)
	if p99 > p50 {
		sigma = (math.Log(p99) - mu) / z99
	}
	return mu, sigma
}

// paretoScale is xm: Min, or derived from the median P50 = xm 2^(1/alpha).
func (d *Dist) paretoScale() time.Duration {
	if d.Min > 0 || d.Alpha <= 0 {
		return d.Min
	}
	return clampNs(float64(d.P50) / math.Pow(2, 1/d.Alpha))
}

func (d *Dist) empiricalQuantile(q float64) time.Duration {
	qs := d.Quantiles
	n := len(qs)
	if n == 0 {
		return 0
	}
	if q <= qs[0].Q {
		return clampNs(float64(qs[0].Value))
	}
	if q >= qs[n-1].Q {
		return clampNs(float64(qs[n-1].Value))
	}
	// Smallest i with qs[i].Q >= q; written out so nothing escapes to the heap.
	lo, hi := 1, n-1
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if qs[mid].Q < q {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	a, b := qs[lo-1], qs[lo]
	f := (q - a.Q) / (b.Q - a.Q)
	return clampNs(float64(a.Value) + f*float64(b.Value-a.Value))
}

// absNormalQuantile solves F(x) = Φ((x-μ)/σ) - Φ((-x-μ)/σ) = q by bisection.
func (d *Dist) absNormalQuantile(q float64) time.Duration {
	mu, sd := float64(d.Mean), float64(d.Stddev)
	if sd == 0 {
		return clampNs(math.Abs(mu))
	}
	if q >= 1 {
		return MaxSample
	}
	cdf := func(x float64) float64 { return normCDF((x-mu)/sd) - normCDF((-x-mu)/sd) }
	lo, hi := 0.0, math.Abs(mu)+40*sd
	for range 200 {
		if hi-lo < 0.25 {
			break
		}
		mid := (lo + hi) / 2
		if cdf(mid) < q {
			lo = mid
		} else {
			hi = mid
		}
	}
	return clampNs((lo + hi) / 2)
}

func normCDF(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }

func normPDF(x float64) float64 { return math.Exp(-x*x/2) / math.Sqrt(2*math.Pi) }

// normQuantile is Φ⁻¹(p); ±Inf at 0 and 1.
func normQuantile(p float64) float64 {
	if p <= 0 {
		return math.Inf(-1)
	}
	if p >= 1 {
		return math.Inf(1)
	}
	if p < 0.5 {
		return -math.Sqrt2 * math.Erfcinv(2*p) // keeps precision in the far left tail
	}
	return math.Sqrt2 * math.Erfinv(2*p-1)
}

// clampNs rounds nanoseconds to a Duration in [0, MaxSample]; NaN is 0.
func clampNs(x float64) time.Duration {
	if !(x > 0) {
		return 0
	}
	if x >= float64(MaxSample) {
		return MaxSample
	}
	return time.Duration(x + 0.5) // round: exp(log(x)) lands just below x
}
