package drills

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"time"
)

// This file declares every arrival kind (source.arrival), once: its name,
// a one-line doc, the validation of the source keys it reads, when its
// events arrive, and the event rate the analytic plan assumes. Validation,
// the key reference, the plan and both runners read these declarations.
// To add a kind, add a declaration here and a case to its test.

// ArrivalKind declares one arrival process of the source.
type ArrivalKind struct {
	Name string // as written in source.arrival
	Doc  string // one line: when events arrive
	// Check reports what is wrong with the source keys the kind reads;
	// keys are full ("source.rate").
	Check func(d *Drill) []problem
	// Once: the kind releases source.events events at source.at and no
	// more (First and Gap are not used).
	Once bool
	// First is the drill time (ns) of the first arrival of a source that
	// stops at endNs; Gap is the time from an arrival at t to the next.
	// Both runners draw from them, in the same order, from the source's
	// own random stream.
	First func(s *Source, endNs int64, rng *rand.Rand) int64
	Gap   func(s *Source, endNs, t int64, rng *rand.Rand) int64
	// PlanRate is the events per second the analytic plan assumes.
	PlanRate func(d *Drill) float64
	// MeanRate is the mean events per second over the duration.
	MeanRate func(d *Drill) float64
	// EventRate, for a source whose rate is not steady, is the analytic
	// plan's event rate at drill time t; nil: PlanRate throughout.
	EventRate func(d *Drill) func(t time.Duration) float64
}

// ArrivalKinds declares every arrival kind.
var ArrivalKinds = []ArrivalKind{
	{
		Name: "constant", Doc: "one event every 1/rate",
		Check: needRate, First: startAtZero, Gap: constantGap,
		PlanRate: steadyRate, MeanRate: steadyRate,
	},
	{
		Name: "poisson", Doc: "a Poisson process at rate: exponential gaps of mean 1/rate",
		Check: needRate,
		// The first arrival is one gap in, and is released even if it
		// falls after the end.
		First:    func(s *Source, endNs int64, rng *rand.Rand) int64 { return poissonGap(s, endNs, 0, rng) },
		Gap:      poissonGap,
		PlanRate: steadyRate, MeanRate: steadyRate,
	},
	{
		Name: "ramp", Doc: "one event every 1/rate, the rate moving linearly from rate to rate_to over the duration",
		Check: func(d *Drill) []problem {
			ps := needRate(d)
			if !d.Source.RateTo.Set {
				ps = append(ps, problem{"source.rate_to", "ramp arrivals need rate_to, the rate at the end"})
			}
			return ps
		},
		First: startAtZero,
		Gap: func(s *Source, endNs, t int64, _ *rand.Rand) int64 {
			frac := float64(t) / float64(endNs)
			return gapAt(s.Rate.PerSecond + (s.RateTo.PerSecond-s.Rate.PerSecond)*frac)
		},
		// The plan sizes for the peak.
		PlanRate:  func(d *Drill) float64 { return max(d.Source.Rate.PerSecond, d.Source.RateTo.PerSecond) },
		MeanRate:  func(d *Drill) float64 { return (d.Source.Rate.PerSecond + d.Source.RateTo.PerSecond) / 2 },
		EventRate: rampEventRate,
	},
	{
		Name: "burst", Doc: "source.events events released at once, at source.at",
		Check: func(d *Drill) []problem {
			var ps []problem
			s := &d.Source
			if s.Events < 1 || s.Events > limBurstEvents {
				ps = append(ps, problem{"source.events", fmt.Sprintf("burst arrivals need events between 1 and %d (got %d)", limBurstEvents, s.Events)})
			}
			if d.Duration.D > 0 && s.At.D >= d.Duration.D {
				ps = append(ps, problem{"source.at", fmt.Sprintf("%v is not before duration (%v)", s.At.D, d.Duration.D)})
			}
			return ps
		},
		Once: true,
		// Spread over the duration, the burst's mean rate.
		PlanRate:  burstMeanRate,
		MeanRate:  burstMeanRate,
		EventRate: burstEventRate,
	},
}

func steadyRate(d *Drill) float64 { return d.Source.Rate.PerSecond }

func burstMeanRate(d *Drill) float64 {
	if d.Duration.D <= 0 {
		return 0
	}
	return float64(d.Source.Events) / d.Duration.D.Seconds()
}

// rampEventRate moves linearly from rate to rate_to over the duration.
func rampEventRate(d *Drill) func(t time.Duration) float64 {
	from, to, length := d.Source.Rate.PerSecond, d.Source.RateTo.PerSecond, d.Duration.D
	return func(t time.Duration) float64 {
		if length <= 0 || t >= length {
			return to
		}
		return from + (to-from)*float64(t)/float64(length)
	}
}

// burstEventRate releases every event at once; the plan's model spreads
// them over one second.
func burstEventRate(d *Drill) func(t time.Duration) float64 {
	at, events := d.Source.At.D, float64(d.Source.Events)
	return func(t time.Duration) float64 {
		if t >= at && t < at+time.Second {
			return events
		}
		return 0
	}
}

// PlanEventRate is the plan's event rate at drill time t, for a source
// whose rate is not steady; nil when it is (PlanRate throughout).
func (d *Drill) PlanEventRate() func(t time.Duration) float64 {
	if k := arrivalKind(d.Source.Arrival); k != nil && k.EventRate != nil {
		return k.EventRate(d)
	}
	return nil
}

// MeanEventRate is the source's mean events per second over the drill's
// duration.
func (d *Drill) MeanEventRate() float64 {
	if k := arrivalKind(d.Source.Arrival); k != nil {
		return k.MeanRate(d)
	}
	return d.Source.Rate.PerSecond
}

// PlanRate is the events per second the analytic plan assumes for the
// drill's source, as its arrival kind declares it.
func (d *Drill) PlanRate() (float64, error) {
	k := arrivalKind(d.Source.Arrival)
	if k == nil {
		return 0, fmt.Errorf("source.arrival: %q is not one of %s", clip(d.Source.Arrival), joinChoices(ArrivalKindNames()))
	}
	return k.PlanRate(d), nil
}

// ArrivalKindNames lists the arrival kinds' names in declaration order.
func ArrivalKindNames() []string {
	names := make([]string, len(ArrivalKinds))
	for i := range ArrivalKinds {
		names[i] = ArrivalKinds[i].Name
	}
	return names
}

// arrivalKind returns the declaration named name; nil when none is.
func arrivalKind(name string) *ArrivalKind {
	for i := range ArrivalKinds {
		if ArrivalKinds[i].Name == name {
			return &ArrivalKinds[i]
		}
	}
	return nil
}

func needRate(d *Drill) []problem {
	if !d.Source.Rate.Set || d.Source.Rate.PerSecond <= 0 {
		return []problem{{"source.rate", d.Source.Arrival + " arrivals need a rate greater than 0, like \"12/s\""}}
	}
	return nil
}

func startAtZero(*Source, int64, *rand.Rand) int64 { return 0 }

func constantGap(s *Source, _, _ int64, _ *rand.Rand) int64 { return gapAt(s.Rate.PerSecond) }

func poissonGap(s *Source, _, _ int64, rng *rand.Rand) int64 {
	rate := s.Rate.PerSecond
	if rate <= 0 {
		return math.MaxInt64 / 2
	}
	return gapNs(rng.ExpFloat64() / rate)
}

// gapAt is 1/rate in ns, at least 1; a rate of 0 or less never arrives.
func gapAt(rate float64) int64 {
	if rate <= 0 {
		return math.MaxInt64 / 2
	}
	return gapNs(1 / rate)
}

// gapNs converts a gap in seconds to ns, at least 1. A gap past the drill's
// end stops the source; clamping it first keeps the conversion to int64
// from wrapping (a rate near 0 at the end of a ramp, or an exponential draw
// far in the tail).
func gapNs(gap float64) int64 { return max(1, int64(min(gap, maxArrivalGapS)*1e9)) }

// maxArrivalGapS is longer than any drill (MaxDurationValue) and far from
// int64 nanoseconds' limit.
const maxArrivalGapS = 10 * float64(MaxDurationValue/time.Second)

// arrivalGap is the time from t (drill ns) to the next arrival of a source
// that stops at endNs, as its kind declares it. Both runners draw from it,
// so the simulated and the live source keep the same schedule.
func arrivalGap(s *Source, endNs, t int64, rng *rand.Rand) int64 {
	if k := arrivalKind(s.Arrival); k != nil && k.Gap != nil {
		return k.Gap(s, endNs, t, rng)
	}
	return math.MaxInt64 / 2
}

// firstArrival is the drill time (ns) of the source's first arrival.
func firstArrival(s *Source, endNs int64, rng *rand.Rand) int64 {
	k := arrivalKind(s.Arrival)
	switch {
	case k == nil:
		return 0
	case k.Once:
		return int64(s.At.D)
	}
	return k.First(s, endNs, rng)
}

// arrivesOnce reports whether the source releases all its events at once.
func arrivesOnce(s *Source) bool {
	k := arrivalKind(s.Arrival)
	return k != nil && k.Once
}

// arrivalDoc is the key reference's text for source.arrival, from the
// declarations.
func arrivalDoc() string {
	parts := make([]string, len(ArrivalKinds))
	for i, k := range ArrivalKinds {
		parts[i] = "`" + k.Name + "` (" + k.Doc + ")"
	}
	return "Arrival process: " + joinChoices(parts) + "."
}

// joinChoices writes items as "a, b or c".
func joinChoices(items []string) string {
	if len(items) <= 1 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " or " + items[len(items)-1]
}
