package tally

import (
	"strconv"
	"strings"
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
	Outages     []OutageWindow
	// fanoutCohorts marks the cohorts an event fans out to (source.to); a
	// run asks once (Fanout), so the subscribers' indexes are not kept.
	fanoutCohorts []bool
	// cohortBase is the index of each cohort's first subscriber, and
	// cohortIndex the cohorts by name (the last of a name): Index reads a
	// name's cohort and member off it rather than keeping a map of every
	// subscriber's name, which would cost about 50 bytes a subscriber.
	cohortBase  []int
	cohortIndex map[string]int
}

// NewLayout lays out the partner specs' subscribers; to names the cohorts
// an event fans out to (all when empty).
func NewLayout(specs []fakepartner.Spec, to []string) *Layout {
	l := &Layout{cohortIndex: make(map[string]int, len(specs))}
	targets := map[string]bool{}
	for _, n := range to {
		targets[n] = true
	}
	// Sized up front: no slice is grown past what it holds, and the names
	// share one string.
	subs, nameLen := 0, 0
	for ci := range specs {
		sp := &specs[ci]
		subs += sp.Count
		for m := 0; m < sp.Count; m++ {
			nameLen += len(sp.Name) + 1 + decimalLen(m)
		}
	}
	l.Subscribers = make([]Subscriber, 0, subs)
	l.fanoutCohorts = make([]bool, len(specs))
	l.Cohorts = make([]Cohort, 0, len(specs))
	l.cohortBase = make([]int, 0, len(specs))
	buf := make([]byte, 0, nameLen)
	for ci := range specs {
		sp := &specs[ci]
		for m := 0; m < sp.Count; m++ {
			buf = strconv.AppendInt(append(append(buf, sp.Name...), '-'), int64(m), 10)
		}
	}
	names, off := string(buf), 0
	for ci := range specs {
		sp := &specs[ci]
		base := len(l.Subscribers)
		l.Cohorts = append(l.Cohorts, Cohort{Name: sp.Name, Subscribers: sp.Count, Faulty: sp.Faulty()})
		l.cohortBase = append(l.cohortBase, base)
		l.cohortIndex[sp.Name] = ci
		l.fanoutCohorts[ci] = len(targets) == 0 || targets[sp.Name]
		for m := 0; m < sp.Count; m++ {
			healthy := true
			for i := range sp.Outages {
				if sp.Outages[i].Hits(m) {
					healthy = false
				}
			}
			n := len(sp.Name) + 1 + decimalLen(m)
			l.Subscribers = append(l.Subscribers, Subscriber{Name: names[off : off+n], Cohort: ci, Member: m, Healthy: healthy})
			off += n
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

// Fanout lists the indexes of the subscribers each event fans out to
// (source.to), in order.
func (l *Layout) Fanout() []int {
	n := 0
	for ci, c := range l.Cohorts {
		if l.fanoutCohorts[ci] {
			n += c.Subscribers
		}
	}
	out := make([]int, 0, n)
	for ci, c := range l.Cohorts {
		if l.fanoutCohorts[ci] {
			for m := range c.Subscribers {
				out = append(out, l.cohortBase[ci]+m)
			}
		}
	}
	return out
}

// decimalLen is the length of strconv.Itoa(m) for m >= 0.
func decimalLen(m int) int {
	n := 1
	for ; m >= 10; m /= 10 {
		n++
	}
	return n
}

// Index returns the index of the subscriber named name ("<cohort>-<member>").
func (l *Layout) Index(name string) (int, bool) {
	dash := strings.LastIndexByte(name, '-')
	if dash < 0 {
		return 0, false
	}
	m, ok := memberOf(name[dash+1:])
	if !ok {
		return 0, false
	}
	cohort := name[:dash]
	ci, known := l.cohortIndex[cohort]
	if !known {
		return 0, false
	}
	// Two cohorts of one name (validation refuses them): the later one's
	// subscribers, then the earlier one's past its size, as a map of every
	// name built in order would answer.
	for ; ci >= 0; ci-- {
		if l.Cohorts[ci].Name == cohort && m < l.Cohorts[ci].Subscribers {
			return l.cohortBase[ci] + m, true
		}
	}
	return 0, false
}

// memberOf reads a member number as strconv.Itoa spells it: decimal digits,
// no sign, no leading zero.
func memberOf(s string) (int, bool) {
	if len(s) == 0 || len(s) > 18 || (s[0] == '0' && len(s) > 1) {
		return 0, false
	}
	m := 0
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		m = m*10 + int(s[i]-'0')
	}
	return m, true
}
