package drills

import (
	"math/rand/v2"
	"time"

	"github.com/stormdrill/stormdrill/model/seed"
)

// This file holds the arrival schedule that the simulator (drills/sim) and
// the live runner (drills/live) both draw from, so that both modes see the
// same events (the subscriber layout is the tally's).

// Arrivals is the source's schedule of event times in drill time, drawn from
// the source's own random stream: the same sequence in every mode for the
// same drill and seed.
type Arrivals struct {
	d     *Drill
	rng   *rand.Rand
	endNs int64
	next  int64 // drill ns of the next arrival; -1 when done
	burst bool
}

// NewArrivals returns the drill's arrival schedule.
func (d *Drill) NewArrivals() *Arrivals {
	a := &Arrivals{d: d, rng: seed.NewRand(d.Seed, "source"), endNs: int64(d.Duration.D)}
	// Like the simulation: the first arrival is released even if it falls
	// after the end.
	a.burst = arrivesOnce(&d.Source)
	a.next = firstArrival(&d.Source, a.endNs, a.rng)
	return a
}

// Next returns the next arrival: its drill time and how many events it
// releases (more than one only for a burst). ok is false when the source is
// done.
func (a *Arrivals) Next() (at time.Duration, events int, ok bool) {
	if a.next < 0 {
		return 0, 0, false
	}
	t := a.next
	if a.burst {
		a.next = -1
		return time.Duration(t), max(1, a.d.Source.Events), true
	}
	n := t + a.gap(t)
	if n < a.endNs {
		a.next = n
	} else {
		a.next = -1
	}
	return time.Duration(t), 1, true
}

// gap is the time from t to the next arrival, drawn as the simulation does.
func (a *Arrivals) gap(t int64) int64 { return arrivalGap(&a.d.Source, a.endNs, t, a.rng) }
