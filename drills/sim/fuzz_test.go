package sim

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stormdrill/stormdrill/drills"
)

// fuzzSimEvents bounds the simulation of one fuzzed drill.
const fuzzSimEvents = 20_000

// checkRunsBounded runs a drill that validated for a bounded number of
// events: it must not panic, fail, overflow its clock or break the
// accounting identity.
func checkRunsBounded(t *testing.T, d *drills.Drill) {
	t.Helper()
	run, err := Run(d, Options{MaxEvents: fuzzSimEvents})
	if err != nil {
		t.Fatalf("a drill that validates failed to run: %v", err)
	}
	s := run.Summary
	end := (d.Duration.D + d.Drain.D).Seconds()
	if !(s.DrillTimeS >= 0 && s.DrillTimeS <= end+1) {
		t.Fatalf("drill_time_s %v outside [0, duration + drain = %v]: a clock overflowed", s.DrillTimeS, end)
	}
	if s.Deliveries.Lost != 0 {
		t.Fatalf("lost %d", s.Deliveries.Lost)
	}
	if s.Deliveries.Created < 0 || float64(s.Deliveries.Created) > float64(d.Limits.WithDefaults().Deliveries)+fuzzSimEvents {
		t.Fatalf("created %d deliveries; the ceiling is %d", s.Deliveries.Created, d.Limits.WithDefaults().Deliveries)
	}
}

// FuzzDrill decodes and validates a whole drill; any drill that validates
// also runs a bounded number of simulated events without panicking,
// overflowing or exceeding its ceilings.
func FuzzDrill(f *testing.F) {
	for _, pattern := range []string{"*.toml", "testdata/*.toml", "testdata/bad/*.toml"} {
		files, _ := filepath.Glob(filepath.Join(drillsDir, pattern))
		for _, file := range files {
			if data, err := os.ReadFile(file); err == nil && len(data) < 64<<10 {
				f.Add(data)
			}
		}
	}
	base := actionBase(f)
	f.Add([]byte(base + "[[actions]]\nkind = \"dlq-replay\"\nat = \"5m\"\nreason = \"max-attempts\"\ncohort = \"down\"\nbatch = 3\nrate = \"2/s\"\n" +
		"[[actions]]\nkind = \"outage-end\"\nat = \"2m\"\ncohort = \"down\"\n[[actions]]\nkind = \"pause-source\"\nat = \"30s\"\nfor = \"1m\"\n"))
	f.Add([]byte(strings.Replace(base, `kind = "unavailable" }`, `kind = "flap", period = "2s" }`, 1)))
	f.Add([]byte(strings.Replace(base, `arrival = "constant"`, `arrival = "ramp"`+"\nrate_to = \"0/s\"", 1)))
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := drills.Parse("fuzz.toml", data)
		if err != nil {
			if _, ok := drills.AsErrors(err); !ok {
				t.Fatalf("error %T is not Errors: %v", err, err)
			}
			return
		}
		checkRunsBounded(t, d)
	})
}

// FuzzTimeArithmetic builds drills from extreme durations, rates, speeds and
// token counts: whatever validates keeps every sum and product the runners
// form (start + for, duration + drain, now + cooldown, lease, scaled live
// times, arrival gaps, milli-tokens) inside an int64, and runs.
func FuzzTimeArithmetic(f *testing.F) {
	h := int64(time.Hour)
	f.Add(h, int64(10*time.Minute), int64(0), h/2, int64(30*time.Second), int64(30*time.Second), 1.0, 1.0, 0.0, int64(time.Second), false)
	f.Add(int64(1000)*h, int64(1000)*h, int64(999)*h, int64(1000)*h, int64(1000)*h, int64(1000)*h, 1e-6, 0.01, 1e12, int64(time.Millisecond), true)
	f.Add(int64(math.MaxInt64), int64(math.MaxInt64), int64(math.MaxInt64), int64(math.MaxInt64), int64(math.MaxInt64), int64(1), 1e-320, 1e-300, 1e17, int64(1), true)
	f.Fuzz(func(t *testing.T, duration, drain, start, dur, cooldown, lease int64, rate, speed, tokens float64, period int64, live bool) {
		ns := func(v int64) string { return fmt.Sprintf("%dns", max(v, 0)) }
		mode := "sim"
		speedLine := ""
		if live {
			mode = "live"
			speedLine = fmt.Sprintf("speed = %g\n", speed)
		}
		text := fmt.Sprintf(`name = "f"
mode = %q
duration = %q
drain = %q
%s[source]
rate = "%g/s"
[[partners]]
name = "a"
[[partners.outages]]
start = %q
for = %q
kind = "flap"
period = %q
[policy.breaker]
trip = "consecutive"
cooldown = %q
[policy.budget]
max_tokens = %g
[dispatcher]
lease_timeout = %q
`, mode, ns(duration), ns(drain), speedLine, rate, ns(start), ns(dur), ns(period), ns(cooldown), tokens, ns(lease))
		d, err := drills.Parse("fuzz.toml", []byte(text))
		if err != nil {
			return
		}
		// Every sum and product the runners form stays in range.
		sums := [][]time.Duration{
			{d.Duration.D, d.Drain.D},
			{d.Partners[0].Outages[0].Start.D, d.Partners[0].Outages[0].For.D, d.Policy.Breaker.Cooldown.D, d.Dispatcher.LeaseTimeout.D, d.Duration.D, d.Drain.D},
		}
		for _, parts := range sums {
			var total float64
			for _, p := range parts {
				total += float64(p)
			}
			if total >= math.MaxInt64/4 {
				t.Fatalf("sum of %v is %g ns: too close to overflow", parts, total)
			}
		}
		if d.Mode == "live" {
			for _, v := range []time.Duration{d.Duration.D + d.Drain.D, d.Dispatcher.LeaseTimeout.D, d.Policy.Breaker.Cooldown.D} {
				if w := float64(v) / d.Speed; w >= math.MaxInt64/4 {
					t.Fatalf("%v at speed %g is %g ns of wall time", v, d.Speed, w)
				}
			}
		}
		if gap := 1 / d.Source.Rate.PerSecond * 1e9; !(gap < math.MaxInt64/4) {
			t.Fatalf("arrival gap %g ns at %g/s", gap, d.Source.Rate.PerSecond)
		}
		if m := d.Policy.Budget.MaxTokens * 1000; m >= math.MaxInt64/4 {
			t.Fatalf("%g milli-tokens", m)
		}
		checkRunsBounded(t, d)
	})
}
