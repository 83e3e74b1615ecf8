package external

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

func TestEarlyRetryThreshold(t *testing.T) {
	cases := []struct {
		n, m, k int
		p       float64
		ok      bool
	}{
		{4, 20, 4, 1.0 / 10626, true},              // 1/C(24,4)
		{5, 20, 5, 1.0 / 53130, true},              // 4 of 5 would be 5/C(25,4) = 3.95e-4
		{3, 20, 3, 1.0 / 1771, false},              // too few delayed: even 3 of 3 is 1/C(23,3)
		{1, 1000, 1, 1.0 / 1001, false},            // one delivery never reaches it with a sane control
		{100, 200, 9, 3.958674437264745e-05, true}, // 8 of 100 would be 1.26e-4
		{20, 0, 20, 1, false},                      // no control: every ordering fails
	}
	for _, c := range cases {
		k, p, ok := earlyRetryThreshold(c.n, c.m, restartFalseFailureRate)
		if k != c.k || ok != c.ok || math.Abs(p-c.p) > 1e-9*c.p {
			t.Errorf("earlyRetryThreshold(%d, %d) = %d, %g, %v; want %d, %g, %v", c.n, c.m, k, p, ok, c.k, c.p, c.ok)
		}
	}
	// Every size verify can use reaches the designed rate.
	for perCase := 1; perCase <= MaxVerifyPerCase; perCase++ {
		n, m := restartCohorts(perCase)
		if _, p, ok := earlyRetryThreshold(n, m, restartFalseFailureRate); !ok {
			t.Fatalf("--deliveries %d: restart cohorts %d and %d cannot reach the rate (best %g)", perCase, n, m, p)
		}
	}
}

func TestRuleRestartBoundaries(t *testing.T) {
	s := time.Second
	control := make([]time.Duration, restartMinControl)
	for i := range control {
		control[i] = 15*s + time.Duration(i)*s // shortest 15 s
	}
	same := func(gap, back time.Duration) []restartSample {
		out := make([]restartSample, restartMinDelayed)
		for i := range out {
			out[i] = restartSample{Gap: gap, Back: back}
		}
		return out
	}
	cases := []struct {
		name               string
		restarted          []restartSample
		forward, judgeable bool
	}{
		{"on time, inside the control's range", same(25*s, 1300*time.Millisecond), false, true},
		{"at the control's shortest: not sooner", same(15*s, 1300*time.Millisecond), false, true},
		{"just sooner than every control retry", same(15*s-time.Millisecond, 1300*time.Millisecond), true, true},
		{"retried as the system came back", same(1400*time.Millisecond, 1300*time.Millisecond), true, true},
		{"3 of 4 sooner: within chance", append(same(2*s, 1300*time.Millisecond)[:3], restartSample{Gap: 16 * s, Back: 1300 * time.Millisecond}), false, true},
		{"back after the control's shortest: cannot judge", same(16*s, 15*s), false, false},
		{"back just before it: judged", same(16*s, 15*s-time.Millisecond), false, true},
	}
	for _, c := range cases {
		r := ruleRestart(c.restarted, control)
		if r.Forward != c.forward || r.Judgeable != c.judgeable {
			t.Errorf("%s: forward %v judgeable %v, want %v %v (%s)", c.name, r.Forward, r.Judgeable, c.forward, c.judgeable, r)
		}
		if r.K != 4 || r.N != 4 || r.M != restartMinControl || r.ControlMin != 15*s {
			t.Errorf("%s: rule figures %+v", c.name, r)
		}
	}
}

// TestRuleRestartFalseFailureRate draws many runs of a correct system
// (the restarted and the control deliveries' delays from one distribution;
// a restarted retry no sooner than the system is back) for several
// policies. How many restarted retries precede every control retry must
// follow C(n,k)/C(n+m,k) whatever the distribution (at most that, with the
// restart's floor), checked at small sizes where the odds are large enough
// to count; at verify's sizes the rule must fail about as rarely as it
// states; and a system retrying as it comes back must always fail.
func TestRuleRestartFalseFailureRate(t *testing.T) {
	const trials = 10_000
	back := 1300 * time.Millisecond
	policies := []struct {
		name         string
		draw         func(r *rand.Rand) time.Duration
		aboveRestart bool // every delay is longer than the restart
	}{
		{"uniform 15-44 s", func(r *rand.Rand) time.Duration {
			return 15*time.Second + time.Duration(r.Int64N(int64(29*time.Second)))
		}, true},
		{"River 16 s ±10%", func(r *rand.Rand) time.Duration {
			return time.Duration(float64(16*time.Second) * (0.9 + 0.2*r.Float64()))
		}, true},
		{"exponential from 1 s, mean 3 s", func(r *rand.Rand) time.Duration {
			return time.Second + time.Duration(r.ExpFloat64()*float64(2*time.Second))
		}, false},
		{"no jitter, 50 ms of polling", func(r *rand.Rand) time.Duration {
			return 5*time.Second + time.Duration(r.Int64N(int64(50*time.Millisecond)))
		}, true},
	}
	draws := func(r *rand.Rand, draw func(*rand.Rand) time.Duration, n, m int, floor time.Duration) ([]restartSample, []time.Duration) {
		restarted := make([]restartSample, n)
		for j := range restarted {
			restarted[j] = restartSample{Gap: max(draw(r), floor), Back: back}
		}
		control := make([]time.Duration, m)
		for j := range control {
			control[j] = draw(r)
		}
		return restarted, control
	}
	within := func(got int, p float64) bool {
		want := p * trials
		return math.Abs(float64(got)-want) <= 5*math.Sqrt(want*(1-p))+1
	}
	for i, p := range policies {
		r := rand.New(rand.NewPCG(uint64(i)+1, 7))
		// Small sizes: the whole distribution of the count.
		const n, m = 4, 6
		var atLeast, atLeastFloor [n + 1]int
		for range trials {
			rs, c := draws(r, p.draw, n, m, 0)
			for k := 0; k <= ruleRestart(rs, c).Early; k++ {
				atLeast[k]++
			}
			rs, c = draws(r, p.draw, n, m, back)
			for k := 0; k <= ruleRestart(rs, c).Early; k++ {
				atLeastFloor[k]++
			}
		}
		for k := 1; k <= n; k++ {
			want := precedeProbability(n, m, k)
			if !within(atLeast[k], want) || float64(atLeastFloor[k]) > want*trials+5*math.Sqrt(want*trials)+1 {
				t.Errorf("%s: at least %d of %d before every one of %d: %d and %d (restart floor) in %d runs, want about %.0f",
					p.name, k, n, m, atLeast[k], atLeastFloor[k], trials, want*trials)
			}
		}
		// Verify's sizes: the rule itself.
		vn, vm := restartCohorts(DefaultVerifyPerCase)
		_, rate, _ := earlyRetryThreshold(vn, vm, restartFalseFailureRate)
		failures := 0
		for range trials {
			if rs, c := draws(r, p.draw, vn, vm, back); ruleRestart(rs, c).Forward {
				failures++
			}
		}
		if float64(failures) > rate*trials+5*math.Sqrt(rate*trials)+1 {
			t.Errorf("%s: the rule failed a correct system %d times in %d runs; designed for %.2g", p.name, failures, trials, rate)
		}
		if !p.aboveRestart {
			continue // a retry brought forward to the restart can look on time
		}
		// A system that retries as soon as it is back is always caught.
		for range 1000 {
			rs, c := draws(r, p.draw, vn, vm, 0)
			for j := range rs {
				rs[j].Gap = back + time.Duration(r.Int64N(int64(100*time.Millisecond)))
			}
			if rr := ruleRestart(rs, c); !rr.Forward || !rr.Judgeable {
				t.Fatalf("%s: a retry brought forward to the restart not caught: %s", p.name, rr)
			}
		}
	}
}
