package drills

import (
	"fmt"
	"strconv"

	"github.com/stormdrill/stormdrill/fakepartner"
)

// retryAfterInflation is how much a Retry-After may grow on the wire, by
// rounding up to whole wall seconds, before SpeedWarnings speaks up.
const retryAfterInflation = 1.5

// SpeedWarnings returns advice for a live drill whose speed makes the
// wire's whole wall seconds distort a throttle's Retry-After: D drill
// seconds go out as ceil(D/speed) wall seconds, which the system under
// drill waits as ceil(D/speed)×speed drill seconds. One line per outage
// concerned; none in other modes or at speed 1.
func (d *Drill) SpeedWarnings() []string {
	if d.Mode != "live" || d.Speed <= 1 {
		return nil
	}
	clock := fakepartner.WallClock{Speed: d.Speed}
	var out []string
	for i, p := range d.Partners {
		for j, o := range p.Outages {
			secs, err := strconv.ParseUint(o.RetryAfter, 10, 32)
			if err != nil || secs == 0 {
				continue // not delta-seconds (validation has its say)
			}
			wall := clock.RetryAfterSeconds(secs)
			if waited := float64(wall) * d.Speed; waited > retryAfterInflation*float64(secs) {
				out = append(out, fmt.Sprintf("partners[%d].outages[%d].retry_after: at speed %g a Retry-After of %d drill seconds goes out as %d wall %s, which the dispatcher waits as %g drill seconds; at a speed of at most %d it is less than doubled, and exact when the speed divides %d",
					i, j, d.Speed, secs, wall, plural(wall, "second", "seconds"), waited, secs, secs))
			}
		}
	}
	return out
}

func plural(n uint64, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
