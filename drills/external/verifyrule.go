package external

import (
	"fmt"
	"sort"
	"time"
)

// The restart scenario's rule. A correct system keeps a delayed delivery's
// run time across a SIGKILL and restart, so the first-retry delay of a
// delivery whose delay spanned the restart is drawn from the same
// distribution as that of a delivery failed the same way without a
// restart (the control), whatever the policy and its jitter; a restart
// can only make it later (nothing runs while the system is down). The
// rule therefore uses nothing but ranks: with n restarted deliveries and
// m control deliveries, the restart "brought retries forward" when at
// least k of the n were retried sooner after their failure than every one
// of the m. For a correct system every ordering of the n+m delays is
// equally likely (or the restarted ones are later), so that happens with
// probability at most C(n,k) / C(n+m,k) (the k smallest of n+m are all
// restarted ones), and k is the least number that keeps this at or below
// restartFalseFailureRate. A system that retries at once when it comes
// back is caught whenever it was back sooner than the control's shortest
// delay; when it was not, a retry brought forward looks like one on time
// and the scenario says it could not judge.
const (
	// restartFalseFailureRate is the probability, designed for, that the
	// rule fails a correct system in one run.
	restartFalseFailureRate = 1e-4
	// restartMinDelayed is the least number of deliveries delayed across
	// the restart: with fewer, no k reaches the rate with a control of
	// restartMinControl (4 of 4 before all of 20: 1/10626).
	restartMinDelayed = 4
	// restartMinControl is the least number of control deliveries.
	restartMinControl = 20
	// restartMaxControl bounds the control cohort.
	restartMaxControl = 2 * MaxVerifyPerCase
)

// restartCohorts returns how many deliveries the restart scenario delays
// across the restart (n) and fails after it as the control (m), for
// perCase deliveries per scenario.
func restartCohorts(perCase int) (n, m int) {
	n = max(perCase, restartMinDelayed)
	m = min(max(restartMinControl, 2*n), restartMaxControl)
	return n, m
}

// precedeProbability is the probability that the k smallest of n+m
// exchangeable values all belong to the n: C(n,k) / C(n+m,k).
func precedeProbability(n, m, k int) float64 {
	if k <= 0 {
		return 1
	}
	if k > n {
		return 0
	}
	p := 1.0
	for i := 0; i < k; i++ {
		p *= float64(n-i) / float64(n+m-i)
	}
	return p
}

// earlyRetryThreshold is the least k such that "at least k of n restarted
// deliveries retried before every one of m control deliveries" happens to
// a correct system with probability at most rate; ok is false when even
// k = n does not reach it.
func earlyRetryThreshold(n, m int, rate float64) (k int, p float64, ok bool) {
	for k = 1; k <= n; k++ {
		if p = precedeProbability(n, m, k); p <= rate {
			return k, p, true
		}
	}
	return n, precedeProbability(n, m, n), false
}

// restartSample is one restarted delivery as the rule sees it.
type restartSample struct {
	Gap  time.Duration // from the end of the failed attempt to the retry's arrival
	Back time.Duration // from the end of the failed attempt to the system being ready again
}

// restartRuling is the rule's verdict with its figures.
type restartRuling struct {
	Forward    bool // at least K of N were retried before every control retry
	Judgeable  bool // at least K of N failed long enough before the system was back
	Early      int  // restarted deliveries retried before every control retry
	Judgeables int  // restarted deliveries back sooner than the control's shortest delay
	N, M, K    int
	Rate       float64       // the false-failure probability of the rule at N, M, K
	ControlMin time.Duration // the control's shortest first-retry delay
	ControlMax time.Duration
}

// ruleRestart applies the rule to the restarted deliveries' samples and
// the control's first-retry delays. Neither may be empty.
func ruleRestart(restarted []restartSample, control []time.Duration) restartRuling {
	c := append([]time.Duration(nil), control...)
	sort.Slice(c, func(i, j int) bool { return c[i] < c[j] })
	r := restartRuling{N: len(restarted), M: len(c), ControlMin: c[0], ControlMax: c[len(c)-1]}
	var ok bool
	r.K, r.Rate, ok = earlyRetryThreshold(r.N, r.M, restartFalseFailureRate)
	for _, s := range restarted {
		if s.Gap < r.ControlMin {
			r.Early++
		}
		if s.Back < r.ControlMin {
			r.Judgeables++
		}
	}
	r.Judgeable = ok && r.Judgeables >= r.K
	r.Forward = ok && r.Early >= r.K
	return r
}

// String states the rule's figures for a verdict's evidence.
func (r restartRuling) String() string {
	return fmt.Sprintf("%d of %d retried before every one of %d control retries (%v–%v after their failure); the rule fails at %d of %d (false-failure rate %.1g)",
		r.Early, r.N, r.M, r.ControlMin.Round(time.Millisecond), r.ControlMax.Round(time.Millisecond), r.K, r.N, r.Rate)
}
