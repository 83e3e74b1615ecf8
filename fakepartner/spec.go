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
}

// OutageKind is what a scripted outage does to calls.
type OutageKind uint8

// Outage kinds.
const (
	OutageUnavailable OutageKind = iota // 503
	OutageTimeout                       // never answers; the caller's timeout fires
	OutageReset                         // connection reset
	OutageThrottle                      // 429 with Retry-After
	OutageSlow                          // latency × Factor
	OutageFlap                          // 503 for the first half of each Period, normal for the second
)

var outageKindNames = [...]string{
	OutageUnavailable: "unavailable",
	OutageTimeout:     "timeout",
	OutageReset:       "reset",
	OutageThrottle:    "throttle",
	OutageSlow:        "slow",
	OutageFlap:        "flap",
}

// String returns the kind's name as written in a drill.
func (k OutageKind) String() string {
	if int(k) < len(outageKindNames) {
		return outageKindNames[k]
	}
	return fmt.Sprintf("OutageKind(%d)", int(k))
}

// MarshalText writes the kind's name (for JSON).
func (k OutageKind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// ParseOutageKind parses an outage kind name.
func ParseOutageKind(s string) (OutageKind, error) {
	for i, n := range outageKindNames {
		if strings.EqualFold(strings.TrimSpace(s), n) {
			return OutageKind(i), nil
		}
	}
	return 0, fmt.Errorf("unknown outage kind %q: want unavailable, timeout, reset, throttle, slow or flap", s)
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

// EffectiveAt reports whether the outage changes behaviour at t: inside the
// window and, for a flap, in the down half of its period.
func (o *Outage) EffectiveAt(t time.Duration) bool {
	if !o.ActiveAt(t) {
		return false
	}
	if o.Kind == OutageFlap && o.Period > 0 {
		return (t-o.Start)%o.Period < o.Period/2
	}
	return true
}

// Validate reports what is wrong with the outage, given the cohort size.
func (o *Outage) Validate(count int) error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if int(o.Kind) >= len(outageKindNames) {
		bad("unknown kind %d", int(o.Kind))
	}
	if o.Start < 0 {
		bad("start must not be negative (got %v)", o.Start)
	}
	if o.For <= 0 {
		bad("for must be greater than 0 (got %v)", o.For)
	}
	if o.Start > MaxSample || o.For > MaxSample {
		bad("start and for must be at most %v", MaxSample)
	}
	if o.Members < 0 {
		bad("members must not be negative (got %d)", o.Members)
	} else if count > 0 && o.Members > count {
		bad("members (%d) is more than the cohort's count (%d)", o.Members, count)
	}
	switch o.Kind {
	case OutageThrottle:
		if _, _, err := parseRetryAfter(o.RetryAfter); err != nil {
			bad("retry_after: %v", err)
		}
	case OutageSlow:
		if !(o.Factor > 0) || o.Factor > 1e6 {
			bad("slow: factor must be greater than 0 and at most 1e6 (got %v)", o.Factor)
		}
	case OutageFlap:
		if o.Period < 2 {
			bad("flap: period must be set (one down+up cycle, e.g. \"10s\")")
		}
	}
	if o.Kind != OutageThrottle && o.RetryAfter != "" {
		bad("retry_after only applies to kind throttle, not %s", o.Kind)
	}
	if o.Kind != OutageSlow && o.Factor != 0 {
		bad("factor only applies to kind slow, not %s", o.Kind)
	}
	if o.Kind != OutageFlap && o.Period != 0 {
		bad("period only applies to kind flap, not %s", o.Kind)
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
			return 0, 0, fmt.Errorf("%q: after \"date:\" put a non-negative duration with a unit, like \"date:30s\"", s)
		}
		return retryAfterDate, d, nil
	}
	n, err := strconv.ParseUint(s, 10, 32)
	if err != nil || n > uint64(MaxSample/time.Second) {
		return 0, 0, fmt.Errorf("%q: want delta-seconds (\"5\"), \"date:30s\" or \"garbage\"", s)
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

// Faulty reports whether the cohort has any scripted outage.
func (s *Spec) Faulty() bool { return len(s.Outages) > 0 }

// FaultAt returns the outage that governs that member's behaviour at drill
// time t: the first outage, in list order, that hits the member and is
// effective at t (a flap in its up half is not).
func (s *Spec) FaultAt(member int, t time.Duration) (Outage, bool) {
	for i := range s.Outages {
		o := &s.Outages[i]
		if o.Hits(member) && o.EffectiveAt(t) {
			return *o, true
		}
	}
	return Outage{}, false
}
