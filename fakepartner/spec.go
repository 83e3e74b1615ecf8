package fakepartner

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Limits on a Spec, so that a typo cannot make a drill allocate the machine.
const (
	MaxCount       = 1_000_000 // subscribers in one cohort
	MaxConcurrency = 10_000    // servers of one subscriber
	MaxOutages     = 1_000     // scripted outages of one cohort
)

// Spec is the behaviour of one cohort of identical fake subscribers.
type Spec struct {
	Name            string
	Count           int // subscribers in the cohort, members 0..Count-1
	Latency         Dist
	TransientErrors float64 // probability of a 503 that clears on retry
	PermanentErrors float64 // probability of a 422 (bad data)
	Concurrency     int     // servers per subscriber; 0 = unlimited
	RejectWhenBusy  bool    // answer 503 at once instead of queueing when all servers are busy
	Contended       bool    // optimistic concurrency on one row: conflicting writes fail with 409
	NetworkDelay    Dist    // contended: one hop (caller→partner, and read→write)
	Outages         []Outage
	// CallFaults strike single calls outside outages, each with its
	// probability (a kind whose declaration has PerCall); at most one per
	// call, drawn in list order. DribbleOver is their dribble's duration.
	CallFaults  []CallFault
	DribbleOver time.Duration
}

// CallFault is a fault kind that strikes a call with probability P.
type CallFault struct {
	Kind OutageKind
	P    float64
}

// callFault picks the per-call fault that u, uniform in [0, 1), draws;
// false for none.
func (s *Spec) callFault(u float64) (OutageKind, bool) {
	for _, f := range s.CallFaults {
		if u < f.P {
			return f.Kind, true
		}
		u -= f.P
	}
	return 0, false
}

// Outage is one scripted fault: from Start for For, in drill time.
type Outage struct {
	Start time.Duration
	For   time.Duration
	Kind  OutageKind
	// RetryAfter (throttle) is "" (no header), "N" (delta-seconds), "date:D"
	// (an HTTP-date D after the response) or "garbage" (unparseable).
	RetryAfter string
	Factor     float64       // slow: latency multiplier
	Period     time.Duration // flap: one down+up cycle
	Members    int           // subscribers hit, members 0..Members-1; 0 = all
	// AnswerAfter, if set, is how long a failing call takes to be answered
	// (a partner that fails slowly holds the caller's worker); nil answers
	// at once (FastAnswerLatency).
	AnswerAfter *Dist
	DribbleOver time.Duration // dribble: how long the body of an answer takes
}

// GarbageRetryAfter is the Retry-After value sent for RetryAfter "garbage":
// neither delta-seconds nor an HTTP-date.
const GarbageRetryAfter = "soon, probably"

// End is when the outage window closes.
func (o *Outage) End() time.Duration { return o.Start + o.For }

// Hits reports whether the outage applies to that member of the cohort.
func (o *Outage) Hits(member int) bool { return o.Members == 0 || (member >= 0 && member < o.Members) }

// ActiveAt reports whether t is inside the window [Start, Start+For).
func (o *Outage) ActiveAt(t time.Duration) bool { return t >= o.Start && t < o.End() }

// MinFlapPeriod bounds a flap's period below: a shorter one is not an
// outage anybody scripts, and below 2ns it has no down half.
const MinFlapPeriod = time.Millisecond

// Overlaps reports whether two outages of one cohort are in force at once
// on some subscriber. The partner plays one outage at a time, so a script
// or a control request with both would not do what it says; members N hits
// subscribers 0..N-1, so any two outages share subscriber 0.
func (o *Outage) Overlaps(p *Outage) bool {
	return o.For > 0 && p.For > 0 && o.Start < p.End() && p.Start < o.End()
}

// EffectiveAt reports whether the outage changes behaviour at t: inside the
// window and, for a flap, in the down half of its period.
func (o *Outage) EffectiveAt(t time.Duration) bool {
	if !o.ActiveAt(t) {
		return false
	}
	if f := o.Kind.Info().EffectiveAt; f != nil {
		return f(o, t-o.Start)
	}
	return true
}

// Problems reports everything wrong with the outage, given the cohort size,
// each with the outage key it concerns ("for", "factor", …). It is the one
// validation of an outage: the drill format and the control API call it.
func (o *Outage) Problems(count int) []Problem {
	var ps []Problem
	bad := func(key, format string, args ...any) { ps = append(ps, Problem{key, fmt.Sprintf(format, args...)}) }
	info := o.Kind.Info()
	if info.Name == "" {
		bad("kind", "unknown kind %d", int(o.Kind))
	}
	if o.Start < 0 {
		bad("start", "must not be negative (got %v)", o.Start)
	} else if o.Start > MaxSample {
		bad("start", "at most %v (got %v)", MaxSample, o.Start)
	}
	if o.For <= 0 {
		bad("for", "must be greater than 0 (got %v): the outage would end before it starts", o.For)
	} else if o.For > MaxSample {
		bad("for", "at most %v (got %v)", MaxSample, o.For)
	}
	if o.Members < 0 {
		bad("members", "must not be negative (got %d)", o.Members)
	} else if count > 0 && o.Members > count {
		bad("members", "%d is more than the cohort's count (%d)", o.Members, count)
	}
	if info.Check != nil {
		ps = append(ps, info.Check(o)...)
	}

	for _, k := range outageKeys(o) {
		if !k.given {
			continue
		}
		used := false
		for _, u := range info.Uses {
			used = used || u == k.key
		}
		if !used && info.Name != "" {
			bad(k.key, "applies only to kind %s, not %s", kindsUsing(k.key), info.Name)
		}
	}
	return ps
}

// kindsUsing names the kinds that use an outage key.
func kindsUsing(key string) string {
	var names []string
	for i := range OutageKinds {
		for _, u := range OutageKinds[i].Uses {
			if u == key {
				names = append(names, OutageKinds[i].Name)
			}
		}
	}
	return strings.Join(names, " or ")
}

// Validate reports what is wrong with the outage, given the cohort size:
// Problems, joined.
func (o *Outage) Validate(count int) error {
	var errs []error
	for _, p := range o.Problems(count) {
		errs = append(errs, p)
	}
	return errors.Join(errs...)
}

// retryAfterMode is how a throttle's Retry-After header is written.
type retryAfterMode uint8

const (
	retryAfterNone retryAfterMode = iota
	retryAfterSeconds
	retryAfterDate
	retryAfterGarbage
)

// parseRetryAfter parses an Outage.RetryAfter; for "date:D" it returns D.
func parseRetryAfter(s string) (retryAfterMode, time.Duration, error) {
	switch {
	case s == "":
		return retryAfterNone, 0, nil
	case s == "garbage":
		return retryAfterGarbage, 0, nil
	case strings.HasPrefix(s, "date:"):
		d, err := time.ParseDuration(strings.TrimPrefix(s, "date:"))
		if err != nil || d < 0 || d > MaxSample {
			return 0, 0, fmt.Errorf("%q: after \"date:\" put a non-negative duration with a unit, at most %v, like \"date:30s\"", s, MaxSample)
		}
		return retryAfterDate, d, nil
	}
	n, err := strconv.ParseUint(s, 10, 32)
	if err != nil || n > uint64(MaxSample/time.Second) {
		return 0, 0, fmt.Errorf("%q: want seconds (\"5\"), \"date:30s\" or \"garbage\"; seconds at most %d", s, MaxSample/time.Second)
	}
	return retryAfterSeconds, 0, nil
}

// Validate reports everything that is wrong with the spec, one error per
// problem, each naming the partner and the field.
func (s *Spec) Validate() error {
	var errs []error
	prefix := "partner"
	if s.Name != "" {
		prefix = fmt.Sprintf("partner %q", s.Name)
	}
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf(prefix+": "+format, args...))
	}
	if s.Name == "" {
		bad("name is empty")
	} else if strings.ContainsAny(s.Name, "/?#% \t\r\n") {
		bad("name must not contain '/', '?', '#', '%%' or spaces (it is part of a URL path)")
	}
	if s.Count < 1 || s.Count > MaxCount {
		bad("count must be between 1 and %d (got %d)", MaxCount, s.Count)
	}
	if err := s.Latency.Validate(); err != nil {
		bad("latency: %v", err)
	}
	prob := func(name string, p float64) {
		if !(p >= 0 && p <= 1) {
			bad("%s must be a probability in [0, 1] (got %v)", name, p)
		}
	}
	prob("transient_errors", s.TransientErrors)
	prob("permanent_errors", s.PermanentErrors)
	if s.Concurrency < 0 || s.Concurrency > MaxConcurrency {
		bad("concurrency must be between 0 (unlimited) and %d (got %d)", MaxConcurrency, s.Concurrency)
	}
	if s.RejectWhenBusy && s.Concurrency == 0 {
		bad("rejecting when busy needs a concurrency limit (concurrency is 0, unlimited)")
	}
	if err := s.NetworkDelay.Validate(); err != nil {
		bad("network_delay: %v", err)
	}
	total := 0.0
	for i, f := range s.CallFaults {
		info := f.Kind.Info()
		switch {
		case !info.PerCall:
			bad("faults: %s cannot strike single calls (per call: %s)", f.Kind, strings.Join(PerCallKindNames(), ", "))
		case !(f.P >= 0 && f.P <= 1):
			bad("faults.%s must be a probability in [0, 1] (got %v)", f.Kind, f.P)
		}
		for _, g := range s.CallFaults[:i] {
			if g.Kind == f.Kind {
				bad("faults: %s is given twice", f.Kind)
			}
		}
		total += f.P
	}
	if total > 1 {
		bad("faults: the per-call probabilities add up to %.4g; at most 1 (one fault at most strikes a call)", total)
	}
	if s.hasCallFault(OutageDribble) != (s.DribbleOver != 0) || s.DribbleOver < 0 || s.DribbleOver > MaxSample {
		bad("dribble_over (%v) is needed with faults.dribble, above 0 and at most %v, and only with it", s.DribbleOver, MaxSample)
	}
	if len(s.Outages) > MaxOutages {
		bad("too many outages (%d; at most %d)", len(s.Outages), MaxOutages)
	}
	for i := range s.Outages {
		if err := s.Outages[i].Validate(s.Count); err != nil {
			bad("outage %d (%s): %v", i+1, s.Outages[i].Kind, strings.ReplaceAll(err.Error(), "\n", "; "))
		}
	}
	return errors.Join(errs...)
}

func (s *Spec) hasCallFault(k OutageKind) bool {
	for _, f := range s.CallFaults {
		if f.Kind == k && f.P > 0 {
			return true
		}
	}
	return false
}

// Faulty reports whether the cohort has any scripted outage.
func (s *Spec) Faulty() bool { return len(s.Outages) > 0 }

// FaultAt returns the outage that governs that member's behaviour at drill
// time t: the first outage, in list order, that hits the member and is
// effective at t (a flap in its up half is not).
func (s *Spec) FaultAt(member int, t time.Duration) (Outage, bool) {
	if o := s.faultAt(member, t); o != nil {
		return *o, true
	}
	return Outage{}, false
}

// faultAt is FaultAt as a pointer into s.Outages; nil when none governs.
func (s *Spec) faultAt(member int, t time.Duration) *Outage {
	return Governing(s.Outages, member, t, NoCut)
}

// NoCut is Governing's cut when the script is whole.
const NoCut = time.Duration(-1)

// Governing returns the outage of a script that governs member at drill
// time t: the first, in list order, that hits the member and is effective
// at t, among those that start after cut (an operator's cut of the
// script; NoCut: all). The simulated partner and the HTTP server both ask
// it; nil when none governs.
func Governing(script []Outage, member int, t, cut time.Duration) *Outage {
	for i := range script {
		o := &script[i]
		if o.Start > cut && o.Governs(member, t) {
			return o
		}
	}
	return nil
}

// Governs reports whether o hits member and is effective at t, measured
// as its Start is.
func (o *Outage) Governs(member int, t time.Duration) bool {
	return o.Hits(member) && o.EffectiveAt(t)
}
