package tally

import (
	"strconv"
	"time"

	"github.com/stormdrill/stormdrill/fakepartner"
)

// Subscriber is one subscriber endpoint: member Member of cohort Cohort.
type Subscriber struct {
	Name    string // "<cohort>-<member>", the delivery's partner
	Cohort  int
	Member  int
	Healthy bool // no scripted outage hits it
}

// Cohort is a group of identical subscribers.
type Cohort struct {
	Name        string
	Subscribers int
	Faulty      bool // has a scripted outage
}

// OutageWindow is one scripted outage and the subscribers it hits, the
// indexes [Lo, Hi) of Layout.Subscribers.
type OutageWindow struct {
	Cohort     int
	Kind       string
	Start, End time.Duration // drill time
	Lo, Hi     int
}

// Layout is the drill's subscribers in the order every mode numbers them,
// the ones an event fans out to, and the outage windows.
type Layout struct {
	Cohorts     []Cohort
	Subscribers []Subscriber
	Fanout      []int // subscriber indexes each event fans out to (source.to)
	Outages     []OutageWindow
	index       map[string]int
}

// NewLayout lays out the partner specs' subscribers; to names the cohorts
// an event fans out to (all when empty).
func NewLayout(specs []fakepartner.Spec, to []string) *Layout {
	l := &Layout{index: map[string]int{}}
	targets := map[string]bool{}
	for _, n := range to {
		targets[n] = true
	}
	for ci := range specs {
		sp := &specs[ci]
		base := len(l.Subscribers)
		l.Cohorts = append(l.Cohorts, Cohort{Name: sp.Name, Subscribers: sp.Count, Faulty: sp.Faulty()})
		for m := 0; m < sp.Count; m++ {
			healthy := true
			for i := range sp.Outages {
				if sp.Outages[i].Hits(m) {
					healthy = false
				}
			}
			if len(targets) == 0 || targets[sp.Name] {
				l.Fanout = append(l.Fanout, len(l.Subscribers))
			}
			name := sp.Name + "-" + strconv.Itoa(m)
			l.index[name] = len(l.Subscribers)
			l.Subscribers = append(l.Subscribers, Subscriber{Name: name, Cohort: ci, Member: m, Healthy: healthy})
		}
		for i := range sp.Outages {
			o := &sp.Outages[i]
			// The members an outage hits are a prefix of the cohort.
			hits := 0
			for m := 0; m < sp.Count; m++ {
				if o.Hits(m) {
					hits = m + 1
				}
			}
			l.Outages = append(l.Outages, OutageWindow{Cohort: ci, Kind: o.Kind.String(), Start: o.Start, End: o.End(), Lo: base, Hi: base + hits})
		}
	}
	return l
}

// Index returns the index of the subscriber named name.
func (l *Layout) Index(name string) (int, bool) {
	i, ok := l.index[name]
	return i, ok
}
