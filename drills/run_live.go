package drills

import (
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/stormdrill/stormdrill/fakepartner"
	"github.com/stormdrill/stormdrill/model/sim"
)

// This file holds what the live runner (package drills/live) shares with
// the simulation: the arrival schedule and the subscriber layout, so that
// both modes see the same events fanned out to the same subscribers.

// Arrivals is the source's schedule of event times in drill time: the same
// sequence RunSim draws for the same drill and seed.
type Arrivals struct {
	d     *Drill
	rng   *rand.Rand
	endNs int64
	next  int64 // drill ns of the next arrival; -1 when done
	burst bool
}

// NewArrivals returns the drill's arrival schedule.
func (d *Drill) NewArrivals() *Arrivals {
	a := &Arrivals{d: d, rng: sim.NewRand(d.Seed, "source"), endNs: int64(d.Duration.D)}
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

// LiveSubscriber is one subscriber endpoint: member Member of cohort Cohort.
type LiveSubscriber struct {
	Name    string // "<cohort>-<member>", the delivery's partner
	Cohort  int
	Member  int
	Healthy bool // no scripted outage hits it
}

// Subscribers lists every subscriber in the order the simulation numbers
// them, and Fanout the indexes an event fans out to (source.to).
func Subscribers(d *Drill, specs []fakepartner.Spec) (subs []LiveSubscriber, fanout []int) {
	targets := map[string]bool{}
	for _, n := range d.Source.To {
		targets[n] = true
	}
	for ci := range specs {
		sp := &specs[ci]
		for m := 0; m < sp.Count; m++ {
			healthy := true
			for _, o := range sp.Outages {
				if o.Hits(m) {
					healthy = false
				}
			}
			if len(targets) == 0 || targets[sp.Name] {
				fanout = append(fanout, len(subs))
			}
			subs = append(subs, LiveSubscriber{Name: sp.Name + "-" + strconv.Itoa(m), Cohort: ci, Member: m, Healthy: healthy})
		}
	}
	return subs, fanout
}
