package drills

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/stormdrill/stormdrill/fakepartner"
)

// Limits are ceilings on the total work a drill asks for, so that a typo
// (a count with three zeros too many) is refused in well under a second
// instead of eating the machine. A drill may raise or lower them in its
// [limits] table; the command line raises them with --limit KEY=N (an
// override of limits.KEY). Zero means the default.
type Limits struct {
	// Deliveries bounds events × fan-out (the expected number of
	// deliveries the source creates).
	Deliveries int64 `toml:"deliveries"`
	// Subscribers bounds the sum of every cohort's count.
	Subscribers int `toml:"subscribers"`
	// Cohorts bounds the number of [[partners]] tables.
	Cohorts int `toml:"cohorts"`
	// Gates bounds the number of gates.
	Gates int `toml:"gates"`
	// Array bounds every other array: status lists, outages of one cohort,
	// faults, source.to, quantiles, includes.
	Array int `toml:"array"`
	// Samples bounds the time series: (duration + drain) / sample_interval.
	Samples int `toml:"samples"`
}

// Default ceilings. A simulated delivery costs about a microsecond and a few
// hundred bytes while pending, so the default deliveries ceiling is about a
// minute of simulation.
const (
	DefaultMaxDeliveries  = 50_000_000
	DefaultMaxSubscribers = 100_000
	DefaultMaxCohorts     = 1000
	DefaultMaxGates       = 100
	DefaultMaxArray       = 1000
	DefaultMaxSamples     = 100_000
)

// Ranges every value of a drill is held to, chosen so that no sum or product
// in the runners overflows an int64 of nanoseconds (about 2,562,047 h):
// every duration is at most MaxDurationValue, so the largest sum a runner
// forms (start + for + duration + drain + cooldown + lease, a handful of
// them) stays below 10,000 h, and divided by the smallest live speed below
// 1,000,000 h.
const (
	// MaxDurationValue bounds every duration key.
	MaxDurationValue = 1000 * time.Hour
	// MinRatePerSecond and MaxRatePerSecond bound every rate: the gap
	// between two arrivals stays between 1 µs and about 11.6 days.
	MinRatePerSecond = 1e-6
	MaxRatePerSecond = 1_000_000
	// MinSpeed and MaxSpeed bound a live drill's speed.
	MinSpeed = 0.01
	MaxSpeed = 1e6
	// MinLeaseTimeout bounds dispatcher.lease_timeout below, and
	// MinLiveLeaseWall bounds it in wall time (lease_timeout / speed) in
	// live mode: a shorter lease expires before a claim is sent.
	MinLeaseTimeout  = time.Millisecond
	MinLiveLeaseWall = 100 * time.Millisecond
	// MinFlapPeriod bounds a flap's period below (the fake partner's rule,
	// which its control API applies too).
	MinFlapPeriod = fakepartner.MinFlapPeriod
)

// WithDefaults returns the limits in force: the zero ones filled with
// their defaults.
func (l Limits) WithDefaults() Limits {
	if l.Deliveries == 0 {
		l.Deliveries = DefaultMaxDeliveries
	}
	if l.Subscribers == 0 {
		l.Subscribers = DefaultMaxSubscribers
	}
	if l.Cohorts == 0 {
		l.Cohorts = DefaultMaxCohorts
	}
	if l.Gates == 0 {
		l.Gates = DefaultMaxGates
	}
	if l.Array == 0 {
		l.Array = DefaultMaxArray
	}
	if l.Samples == 0 {
		l.Samples = DefaultMaxSamples
	}
	return l
}

// raiseHint tells how to raise the ceiling named key.
func raiseHint(key string) string {
	return fmt.Sprintf("raise it with limits.%s in the drill or --limit %s=N", key, key)
}

// validateLimits checks the limits table itself and every ceiling; it runs
// before the rest of validation.
func validateLimits(d *Drill) []problem {
	var ps []problem
	bad := func(key, format string, args ...any) {
		ps = append(ps, problem{key, fmt.Sprintf(format, args...)})
	}
	l := d.Limits
	for _, f := range []struct {
		key string
		v   int64
	}{{"deliveries", l.Deliveries}, {"subscribers", int64(l.Subscribers)}, {"cohorts", int64(l.Cohorts)},
		{"gates", int64(l.Gates)}, {"array", int64(l.Array)}, {"samples", int64(l.Samples)}} {
		if f.v < 0 {
			bad("limits."+f.key, "must be 0 (the default) or more (got %d)", f.v)
		}
	}
	// Arrays are bounded while the file is read, before any ceiling is known.
	for _, f := range []struct {
		key string
		v   int
	}{{"cohorts", l.Cohorts}, {"gates", l.Gates}, {"array", l.Array}} {
		if f.v > MaxArrayElements {
			bad("limits."+f.key, "at most %d, the most elements any array of a drill file may hold (got %d)", MaxArrayElements, f.v)
		}
	}
	if len(ps) > 0 {
		return ps
	}
	l = l.WithDefaults()

	if n := len(d.Partners); n > l.Cohorts {
		bad("partners", "%d cohorts; at most %d (%s)", n, l.Cohorts, raiseHint("cohorts"))
	}
	if n := len(d.Gates); n > l.Gates {
		bad("gates", "%d gates; at most %d (%s)", n, l.Gates, raiseHint("gates"))
	}
	checkArrays(reflect.ValueOf(d).Elem(), "", l.Array, &ps)

	// Subscribers and fan-out: counts are bounded one by one elsewhere, so
	// these sums cannot overflow.
	total, fanout := 0, 0
	to := map[string]bool{}
	for _, name := range d.Source.To {
		to[name] = true
	}
	for i := range d.Partners {
		c := max(d.Partners[i].Count, 0)
		total += c
		if len(to) == 0 || to[d.Partners[i].Name] {
			fanout += c
		}
	}
	if total > l.Subscribers {
		bad("partners", "%d subscribers in all cohorts; at most %d (%s)", total, l.Subscribers, raiseHint("subscribers"))
	}

	// Deliveries: the expected events times the fan-out.
	events, key, how := expectedEvents(d)
	if deliveries := events * float64(fanout); deliveries > float64(l.Deliveries) {
		bad(key, "the drill asks for about %.3g deliveries (%s × %d subscribers); at most %d (%s)",
			deliveries, how, fanout, l.Deliveries, raiseHint("deliveries"))
	}

	// Samples of the time series.
	if si := d.SampleInterval.D; si > 0 && d.Duration.D <= MaxDurationValue && d.Drain.D <= MaxDurationValue {
		span := float64(d.Duration.D) + float64(d.Drain.D)
		if n := span / float64(si); n > float64(l.Samples) {
			bad("sample_interval", "%v over duration + drain (%v) gives %.3g samples; at most %d (%s)",
				si, time.Duration(span), n, l.Samples, raiseHint("samples"))
		}
	}
	return ps
}

// expectedEvents estimates how many events the source creates, the key
// that decides it and how it was reckoned.
func expectedEvents(d *Drill) (float64, string, string) {
	s := &d.Source
	if arrivesOnce(s) {
		return float64(max(s.Events, 0)), "source.events", strconv.Itoa(s.Events) + " events"
	}
	mean := d.MeanEventRate()
	how := fmt.Sprintf("%g/s × %v", mean, d.Duration.D)
	if mean != s.Rate.PerSecond {
		how = "mean rate " + how
	}
	return mean * d.Duration.D.Seconds(), "source.rate", how
}

// checkArrays refuses any array under v longer than limit, except the
// partners and gates arrays, which have ceilings of their own, and refuses
// any duration above MaxDurationValue.
func checkArrays(v reflect.Value, path string, limit int, ps *[]problem) {
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		tag := strings.Split(t.Field(i).Tag.Get("toml"), ",")[0]
		if tag == "" || tag == "-" {
			continue
		}
		f := v.Field(i)
		p := joinKey(path, tag)
		switch {
		case f.Type() == durationType:
			if dv := f.Interface().(Duration); dv.D > MaxDurationValue {
				*ps = append(*ps, problem{p, fmt.Sprintf("%v is too long: at most %v", dv.D, MaxDurationValue)})
			}
		case f.Kind() == reflect.Struct && isTableType(f.Type()):
			checkArrays(f, p, limit, ps)
		case f.Kind() == reflect.Slice:
			if p != "partners" && p != "gates" && f.Len() > limit {
				*ps = append(*ps, problem{p, fmt.Sprintf("%d elements; at most %d (%s)", f.Len(), limit, raiseHint("array"))})
				continue
			}
			if isTableType(f.Type().Elem()) {
				for j := 0; j < f.Len(); j++ {
					checkArrays(f.Index(j), p+"["+strconv.Itoa(j)+"]", limit, ps)
				}
			}
		}
	}
}

// checkRanges holds every value to the ranges above that keeps the
// runners' arithmetic from overflowing.
func checkRanges(d *Drill) []problem {
	var ps []problem
	bad := func(key, format string, args ...any) {
		ps = append(ps, problem{key, fmt.Sprintf(format, args...)})
	}
	rate := func(key string, r Rate, zeroOK bool) {
		v := r.PerSecond
		if !r.Set || (zeroOK && v == 0) {
			return
		}
		if v < MinRatePerSecond {
			bad(key, "%g/s is too slow: at least %g/s (one event per %v), or leave it out", v, MinRatePerSecond, time.Duration(float64(time.Second)/MinRatePerSecond))
		}
	}
	rate("source.rate", d.Source.Rate, false)
	rate("source.rate_to", d.Source.RateTo, true)

	if d.Mode == "live" {
		if d.Speed < MinSpeed || d.Speed > MaxSpeed {
			bad("speed", "must be at least %g and at most %g (got %g)", MinSpeed, MaxSpeed, d.Speed)
		} else if wall := time.Duration(float64(d.Dispatcher.LeaseTimeout.D) / d.Speed); d.Dispatcher.LeaseTimeout.D > 0 && wall < MinLiveLeaseWall {
			bad("dispatcher.lease_timeout", "%v at speed %g is %v of wall time; at least %v of wall time (lease_timeout at least %v)",
				d.Dispatcher.LeaseTimeout.D, d.Speed, wall, MinLiveLeaseWall, time.Duration(float64(MinLiveLeaseWall)*d.Speed))
		}
	}
	if lt := d.Dispatcher.LeaseTimeout.D; lt > 0 && lt < MinLeaseTimeout && d.Mode != "live" {
		bad("dispatcher.lease_timeout", "%v is too short: at least %v", lt, MinLeaseTimeout)
	}

	end := d.Duration.D + d.Drain.D // both at most MaxDurationValue: no overflow
	for i := range d.Partners {
		p := &d.Partners[i]
		pre := "partners[" + strconv.Itoa(i) + "].outages["
		for j := range p.Outages {
			o := &p.Outages[j]
			key := pre + strconv.Itoa(j) + "]."
			if o.Start.D > MaxDurationValue || o.For.D > MaxDurationValue {
				continue // checkArrays said so
			}
			// An outage may run past the end (down for the rest of the
			// drill), but one that starts after it never happens.
			if d.Duration.D > 0 && o.Start.D >= end {
				bad(key+"start", "%v is at or after the drill's end (duration + drain = %v): the outage would never happen", o.Start.D, end)
			}
			// Two outages in force at once on one subscriber: the
			// partner plays one at a time, so the script would not do
			// what it says. members N hits subscribers 0..N-1, so any two
			// outages share subscriber 0.
			for k := 0; k < j; k++ {
				q := &p.Outages[k]
				if q.Start.D > MaxDurationValue || q.For.D > MaxDurationValue {
					continue
				}
				a, b := fakepartner.Outage{Start: o.Start.D, For: o.For.D}, fakepartner.Outage{Start: q.Start.D, For: q.For.D}
				if a.Overlaps(&b) {
					bad(key+"start", "overlaps outages[%d] (%v to %v) on the same subscribers; one subscriber has one outage at a time: move it, or make one outage that does both", k, q.Start.D, q.Start.D+q.For.D)
					break
				}
			}
		}
	}
	return ps
}
