package experiments

import (
	"errors"
	"math"
	"math/big"
	"math/rand/v2"
	"sort"
	"testing"
)

// relClose reports whether got is within rel (relative) of want.
func relClose(got, want, rel float64) bool {
	if want == 0 {
		return math.Abs(got) <= rel
	}
	return math.Abs(got-want) <= rel*math.Abs(want)
}

// erlangCDirect is the textbook closed form computed in 256-bit floats, so
// that a^c and c! cannot overflow:
//
//	C = (a^c/c! · c/(c−a)) / (Σ_{k<c} a^k/k! + a^c/c! · c/(c−a)).
func erlangCDirect(c int, a float64) float64 {
	const prec = 256
	nf := func(v float64) *big.Float { return new(big.Float).SetPrec(prec).SetFloat64(v) }
	A := nf(a)
	term := nf(1) // a^k/k!
	sum := nf(0)
	for k := 0; k < c; k++ {
		sum.Add(sum, term)
		term.Mul(term, A)
		term.Quo(term, nf(float64(k+1)))
	}
	// term is now a^c/c!
	last := new(big.Float).SetPrec(prec).Mul(term, nf(float64(c)))
	last.Quo(last, nf(float64(c)-a))
	den := new(big.Float).SetPrec(prec).Add(sum, last)
	v, _ := new(big.Float).SetPrec(prec).Quo(last, den).Float64()
	return v
}

func TestErlangCTextbook(t *testing.T) {
	cases := []struct {
		name                string
		c                   int
		lambda, mu          float64
		pWait, lq, wq, w, l float64
	}{
		// Two servers at half load: P(wait) = Lq = Wq = 1/3 (standard example).
		{"c2-rho0.5", 2, 1, 1, 1.0 / 3, 1.0 / 3, 1.0 / 3, 4.0 / 3, 4.0 / 3},
		// c = 1 is M/M/1: P(wait) = ρ, Lq = ρ²/(1−ρ), Wq = ρ/(μ−λ), W = 1/(μ−λ).
		{"mm1-rho0.5", 1, 0.5, 1, 0.5, 0.25 / 0.5, 0.5 / 0.5, 1 / 0.5, 0.5 / 0.5},
		// M/M/1 at ρ = 0.9.
		{"mm1-rho0.9", 1, 9, 10, 0.9, 0.81 / 0.1, 0.9 / 1, 1.0 / 1, 9 * 1.0},
	}
	for _, tc := range cases {
		m, err := SolveMMc(tc.c, tc.lambda, tc.mu)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		for _, f := range []struct {
			what      string
			got, want float64
		}{{"PWait", m.PWait, tc.pWait}, {"Lq", m.Lq, tc.lq}, {"Wq", m.Wq, tc.wq}, {"W", m.W, tc.w}, {"L", m.L, tc.l}} {
			if !relClose(f.got, f.want, 1e-6) {
				t.Errorf("%s: %s = %.9g, want %.9g", tc.name, f.what, f.got, f.want)
			}
		}
	}
}

func TestErlangCAgainstDirectSum(t *testing.T) {
	cases := []struct {
		c          int
		lambda, mu float64
	}{
		{5, 4, 1},       // ρ = 0.8
		{10, 8, 1},      // 8 Erlangs on 10 servers, the published ≈ 0.409 case
		{3, 0.3, 0.5},   // light load
		{20, 19.5, 1},   // heavy load
		{500, 480, 1},   // a^c and c! overflow float64: the recursion must not care
		{2000, 1990, 2}, // large pool, a = 995
	}
	for _, tc := range cases {
		got, err := ErlangC(tc.c, tc.lambda, tc.mu)
		if err != nil {
			t.Fatalf("c=%d λ=%g μ=%g: %v", tc.c, tc.lambda, tc.mu, err)
		}
		want := erlangCDirect(tc.c, tc.lambda/tc.mu)
		if !relClose(got, want, 1e-9) {
			t.Errorf("c=%d λ=%g μ=%g: ErlangC = %.12g, direct sum %.12g", tc.c, tc.lambda, tc.mu, got, want)
		}
	}
	// The published value for 10 servers and 8 Erlangs is 0.4092 (Erlang C
	// tables, four digits).
	got, _ := ErlangC(10, 8, 1)
	if math.Abs(got-0.4092) > 0.00005 {
		t.Errorf("ErlangC(10, 8 Erlangs) = %.6f, published 0.4092", got)
	}
}

func TestErlangCEdges(t *testing.T) {
	if pw, err := ErlangC(4, 0, 1); err != nil || pw != 0 {
		t.Errorf("no arrivals: got %v, %v; want 0, nil", pw, err)
	}
	m, err := SolveMMc(4, 0, 1)
	if err != nil || m.Wq != 0 || m.L != 0 || m.W != 1 || m.WqP99 != 0 {
		t.Errorf("no arrivals: got %+v, %v", m, err)
	}
	unstable := []struct {
		c          int
		lambda, mu float64
	}{
		{1, 1, 1}, // ρ = 1 exactly
		{2, 5, 1}, // ρ = 2.5
	}
	for _, tc := range unstable {
		_, err := ErlangC(tc.c, tc.lambda, tc.mu)
		if !errors.Is(err, ErrUnstable) {
			t.Errorf("ErlangC(%d, %g, %g): err %v, want ErrUnstable", tc.c, tc.lambda, tc.mu, err)
		}
		m, err := SolveMMc(tc.c, tc.lambda, tc.mu)
		if !errors.Is(err, ErrUnstable) || m.Rho != tc.lambda/(float64(tc.c)*tc.mu) || m.Wq != 0 {
			t.Errorf("SolveMMc(%d, %g, %g) = %+v, %v; want ρ filled and ErrUnstable", tc.c, tc.lambda, tc.mu, m, err)
		}
	}
	bad := []struct {
		c          int
		lambda, mu float64
	}{
		{0, 1, 1},                    // no servers
		{MaxErlangServers + 1, 1, 1}, // beyond the bound
		{2, -1, 1},                   // negative arrivals
		{2, math.NaN(), 1},           // NaN
		{2, math.Inf(1), 1},          // infinite arrivals
		{2, 1, 0},                    // no service
	}
	for _, tc := range bad {
		if _, err := ErlangC(tc.c, tc.lambda, tc.mu); err == nil || errors.Is(err, ErrUnstable) {
			t.Errorf("ErlangC(%d, %v, %v): err %v, want an argument error", tc.c, tc.lambda, tc.mu, err)
		}
	}
}

func TestWqP99(t *testing.T) {
	// M/M/1: P(Wq > t) = ρ·e^(−μ(1−ρ)t), so the p99 is ln(100ρ)/(μ(1−ρ)).
	m, err := SolveMMc(1, 0.5, 1)
	if err != nil {
		t.Fatal(err)
	}
	if want := math.Log(50) / 0.5; !relClose(m.WqP99, want, 1e-12) {
		t.Errorf("M/M/1 ρ=0.5: WqP99 = %v, want %v", m.WqP99, want)
	}
	if tail := 0.5 * math.Exp(-1*(1-0.5)*m.WqP99); !relClose(tail, 0.01, 1e-9) {
		t.Errorf("M/M/1 tail at WqP99 = %v, want 0.01", tail)
	}
	// Fewer than 1% wait at all: the p99 wait is 0.
	m, _ = SolveMMc(10, 1, 1)
	if m.PWait > 0.01 || m.WqP99 != 0 {
		t.Errorf("light load: PWait %v, WqP99 %v; want ≤ 0.01 and 0", m.PWait, m.WqP99)
	}
}

// TestMMcBySimulation checks the mean and p99 queue wait against a
// first-come-first-served c-server queue simulated with a fixed seed
// (Kiefer–Wolfowitz workload vector), an estimate independent of the
// closed forms.
func TestMMcBySimulation(t *testing.T) {
	const (
		c       = 3
		lambda  = 2.4
		mu      = 1.0
		n       = 400_000
		warmups = 10_000
	)
	m, err := SolveMMc(c, lambda, mu)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(7, 11))
	work := make([]float64, c) // remaining work per server, sorted ascending
	waits := make([]float64, 0, n)
	for i := 0; i < n+warmups; i++ {
		wait := work[0]
		work[0] += rng.ExpFloat64() / mu
		gap := rng.ExpFloat64() / lambda
		for j := range work {
			work[j] = math.Max(0, work[j]-gap)
		}
		sort.Float64s(work)
		if i >= warmups {
			waits = append(waits, wait)
		}
	}
	sum := 0.0
	for _, w := range waits {
		sum += w
	}
	if mean := sum / n; !relClose(mean, m.Wq, 0.05) {
		t.Errorf("simulated mean wait %.4f, Erlang C Wq %.4f", mean, m.Wq)
	}
	sort.Float64s(waits)
	if p99 := waits[n*99/100]; !relClose(p99, m.WqP99, 0.05) {
		t.Errorf("simulated p99 wait %.4f, Erlang C WqP99 %.4f", p99, m.WqP99)
	}
}

func TestMinWorkers(t *testing.T) {
	const mu = 10.0 // 100ms per attempt
	// Minimal: c meets the target and c−1 does not.
	for _, tc := range []struct{ lambda, target float64 }{
		{5, 1},      // light: one worker is enough
		{95, 0.05},  // ρ near 1 on 10 workers
		{950, 0.01}, // big pool, tight target
		{300, 0},    // target 0: fewer than 1% may wait
	} {
		c, ok := MinWorkers(tc.lambda, mu, tc.target, MaxPlanWorkers)
		if !ok {
			t.Fatalf("λ=%g target %g: none found", tc.lambda, tc.target)
		}
		m, err := SolveMMc(c, tc.lambda, mu)
		if err != nil || m.WqP99 > tc.target {
			t.Errorf("λ=%g: %d workers give p99 %v (err %v), want ≤ %g", tc.lambda, c, m.WqP99, err, tc.target)
		}
		if c > 1 {
			if m, err := SolveMMc(c-1, tc.lambda, mu); err == nil && m.WqP99 <= tc.target {
				t.Errorf("λ=%g: %d workers already meet the target; MinWorkers said %d", tc.lambda, c-1, c)
			}
		}
	}
	// Monotone: more load never needs fewer workers; a looser target never
	// needs more.
	prev := 0
	for lambda := 0.0; lambda <= 2000; lambda += 37 {
		c, ok := MinWorkers(lambda, mu, 0.5, MaxPlanWorkers)
		if !ok || c < prev {
			t.Fatalf("λ=%g: MinWorkers = %d, %v; previous load needed %d", lambda, c, ok, prev)
		}
		prev = c
	}
	prev = math.MaxInt
	for _, target := range []float64{0, 0.001, 0.01, 0.1, 1, 10, 100} {
		c, ok := MinWorkers(400, mu, target, MaxPlanWorkers)
		if !ok || c > prev {
			t.Fatalf("target %g: MinWorkers = %d, %v; tighter target needed %d", target, c, ok, prev)
		}
		prev = c
	}
	// Not reachable within maxC, and bad arguments.
	if c, ok := MinWorkers(400, mu, 0.1, 10); ok {
		t.Errorf("λ=400 on at most 10 workers: got %d, want none", c)
	}
	if _, ok := MinWorkers(math.NaN(), mu, 1, 10); ok {
		t.Errorf("NaN arrival rate accepted")
	}
	if _, ok := MinWorkers(1, mu, -1, 10); ok {
		t.Errorf("negative target accepted")
	}
}
