package sim

import (
	"testing"

	"github.com/stormdrill/stormdrill/drills"
)

// throttleDrill: one partner answers 429 with Retry-After: 30 for five
// minutes; a consecutive breaker with a 15-minute cooldown holds what it
// stops. countLine is the breaker's count key, or "".
func throttleDrill(t *testing.T, countLine string) *drills.Drill {
	t.Helper()
	src := `
name     = "throttle-count"
seed     = 3
duration = "10m"
drain    = "30m"
[source]
arrival = "poisson"
rate    = "1/s"
[[partners]]
name    = "api"
count   = 1
latency = { dist = "constant", value = "50ms" }
  [[partners.outages]]
  start       = "1m"
  for         = "5m"
  kind        = "throttle"
  retry_after = "30"
[policy.retry]
max_attempts = 0
base         = "1s"
cap             = "20s" # below Retry-After: every throttled retry waits its 30s
retry_after_max = "1m"
jitter       = "full"
[policy.breaker]
trip      = "consecutive"
threshold = 5
cooldown  = "15m"
on_open   = "hold"
` + countLine + "\n"
	d, err := drills.Parse("throttle-count.toml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// With every failure counted (today's default), five 429s open the breaker
// and deliveries wait out its 15-minute cooldown. With count leaving 429
// out, the breaker never opens and the throttled deliveries follow
// Retry-After: 30.
func TestBreakerCountLeavesThrottlingToRetryAfter(t *testing.T) {
	all := runDrill(t, throttleDrill(t, "")).Summary
	noThrottle := runDrill(t, throttleDrill(t, `count = ["5xx", "timeout", "reset", "refused"]`)).Summary
	if len(all.BreakerTransitions) == 0 || all.DrainTimeS == nil || *all.DrainTimeS < 5*60 {
		t.Errorf("counting 429s: %d breaker transitions, drain %v; want the breaker to hold deliveries for most of its 15m cooldown",
			len(all.BreakerTransitions), deref(all.DrainTimeS))
	}
	if n := len(noThrottle.BreakerTransitions); n != 0 {
		t.Errorf("not counting 429s: %d breaker transitions, want none", n)
	}
	// The last throttled deliveries wait one Retry-After (30s), then go.
	if d := noThrottle.DrainTimeS; d == nil || *d > 35 || *d < 10 {
		t.Errorf("not counting 429s: drain %v, want about the 30s Retry-After", deref(d))
	}
	if noThrottle.RetryAfterIgnored != 0 || noThrottle.Deliveries.DeadLettered != 0 || noThrottle.Deliveries.Pending != 0 {
		t.Errorf("not counting 429s: %+v, want everything delivered", noThrottle.Deliveries)
	}
	// A name the breaker does not know is refused.
	if _, err := drills.Parse("bad.toml", []byte(`name = "x"
[[partners]]
name = "a"
[policy.breaker]
trip  = "consecutive"
count = ["503"]
`)); err == nil {
		t.Error("count = [\"503\"] accepted")
	}
}

func deref(v *float64) any {
	if v == nil {
		return nil
	}
	return *v
}
