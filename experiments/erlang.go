package experiments

import (
	"errors"
	"fmt"
	"math"
)

// MaxErlangServers bounds c in ErlangC and SolveMMc: the recursion is O(c)
// and no worker pool the harness plans for comes near it.
const MaxErlangServers = 1_000_000

// P99Tail is the tail probability behind WqP99.
const P99Tail = 0.01

// ErrUnstable reports an M/M/c queue with ρ ≥ 1: the queue grows without
// bound and there is no steady-state wait to report.
var ErrUnstable = errors.New("unstable: offered load is at or above capacity (ρ ≥ 1)")

// MMc is the steady state of an M/M/c queue: Poisson arrivals at Lambda per
// second, C servers each completing Mu per second. Times are in seconds.
type MMc struct {
	C      int     `json:"c"`
	Lambda float64 `json:"lambda_per_s"`
	Mu     float64 `json:"mu_per_s"`
	Rho    float64 `json:"rho"`      // λ/(cμ), utilisation of each server
	PWait  float64 `json:"p_wait"`   // Erlang C: probability an arrival waits
	Lq     float64 `json:"lq"`       // mean number waiting
	Wq     float64 `json:"wq_s"`     // mean wait in queue
	W      float64 `json:"w_s"`      // mean time in system, Wq + 1/μ
	L      float64 `json:"l"`        // mean number in system, λW (Little)
	WqP99  float64 `json:"wq_p99_s"` // 99th percentile of the queue wait
}

func checkMMcArgs(c int, lambda, mu float64) error {
	switch {
	case c < 1:
		return fmt.Errorf("servers: %d, want at least 1", c)
	case c > MaxErlangServers:
		return fmt.Errorf("servers: %d, want at most %d", c, MaxErlangServers)
	case math.IsNaN(lambda) || math.IsInf(lambda, 0) || lambda < 0:
		return fmt.Errorf("arrival rate: %v, want a finite number ≥ 0", lambda)
	case math.IsNaN(mu) || math.IsInf(mu, 0) || mu <= 0:
		return fmt.Errorf("service rate: %v, want a finite number > 0", mu)
	}
	return nil
}

// erlangB returns the Erlang B blocking probability for c servers and
// offered load a = λ/μ by the recursion B(k) = a·B(k−1) / (k + a·B(k−1)),
// which stays in [0, 1] and never forms a^c or c! (those overflow for pools
// of a few hundred workers).
func erlangB(c int, a float64) float64 {
	b := 1.0
	for k := 1; k <= c; k++ {
		b = a * b / (float64(k) + a*b)
	}
	return b
}

// erlangCFromB converts Erlang B to Erlang C: C = B / (1 − ρ(1 − B)).
func erlangCFromB(b, rho float64) float64 {
	return b / (1 - rho*(1-b))
}

// ErlangC returns the probability that an arrival has to wait in an M/M/c
// queue with c servers, arrival rate lambda and per-server service rate mu.
// It returns an error wrapping ErrUnstable when λ ≥ cμ, and an error for
// arguments out of range.
func ErlangC(c int, lambda, mu float64) (pWait float64, err error) {
	if err := checkMMcArgs(c, lambda, mu); err != nil {
		return 0, err
	}
	rho := lambda / (float64(c) * mu)
	if rho >= 1 {
		return 0, fmt.Errorf("%w: ρ = %.4g", ErrUnstable, rho)
	}
	if lambda == 0 {
		return 0, nil
	}
	return erlangCFromB(erlangB(c, lambda/mu), rho), nil
}

// SolveMMc returns the steady state of an M/M/c queue. When the queue is
// unstable it returns an error wrapping ErrUnstable and an MMc with only C,
// Lambda, Mu and Rho filled in (every other figure would be infinite).
func SolveMMc(c int, lambda, mu float64) (MMc, error) {
	if err := checkMMcArgs(c, lambda, mu); err != nil {
		return MMc{}, err
	}
	m := MMc{C: c, Lambda: lambda, Mu: mu, Rho: lambda / (float64(c) * mu)}
	pw, err := ErlangC(c, lambda, mu)
	if err != nil {
		return m, err
	}
	m.fill(pw)
	return m, nil
}

// fill derives the queue figures from P(wait).
func (m *MMc) fill(pWait float64) {
	m.PWait = pWait
	m.Lq = pWait * m.Rho / (1 - m.Rho)
	if m.Lambda > 0 {
		m.Wq = m.Lq / m.Lambda
	}
	m.W = m.Wq + 1/m.Mu
	m.L = m.Lambda * m.W
	m.WqP99 = waitQuantile(pWait, float64(m.C)*m.Mu-m.Lambda, P99Tail)
}

// waitQuantile inverts the M/M/c wait tail P(Wq > t) = pWait·e^(−drift·t):
// the t with tail probability q, or 0 when fewer than q of arrivals wait.
func waitQuantile(pWait, drift, q float64) float64 {
	if pWait <= q || drift <= 0 {
		return 0
	}
	return math.Log(pWait/q) / drift
}

// MinWorkers returns the smallest worker count c ≤ maxC for which the
// M/M/c queue is stable and its p99 queue wait is at most p99Target
// seconds, and false when no c up to maxC does (or the arguments are out of
// range). The p99 wait does not grow with c, so the first c that meets the
// target is the answer.
func MinWorkers(lambda, mu float64, p99Target float64, maxC int) (int, bool) {
	if maxC > MaxErlangServers {
		maxC = MaxErlangServers
	}
	if checkMMcArgs(1, lambda, mu) != nil || math.IsNaN(p99Target) || p99Target < 0 || maxC < 1 {
		return 0, false
	}
	a := lambda / mu
	b := 1.0 // Erlang B for 0 servers, advanced one server per step
	for c := 1; c <= maxC; c++ {
		b = a * b / (float64(c) + a*b)
		rho := lambda / (float64(c) * mu)
		if rho >= 1 {
			continue
		}
		pw := 0.0
		if lambda > 0 {
			pw = erlangCFromB(b, rho)
		}
		if waitQuantile(pw, float64(c)*mu-lambda, P99Tail) <= p99Target {
			return c, true
		}
	}
	return 0, false
}
