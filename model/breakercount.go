package model

import (
	"fmt"
	"strings"
)

// BreakerCount is the set of failed outcomes a breaker counts against a
// partner (policy.breaker.count). A failure outside it, a throttling 429
// for instance, neither trips the breaker nor resets its run of failures:
// the delivery follows its own retry decision (Retry-After included).
type BreakerCount uint8

// The outcomes a breaker can count.
const (
	Count5xx     BreakerCount = 1 << iota // an HTTP 5xx status
	Count429                              // 429 Too Many Requests
	Count4xx                              // any other 4xx status (408, 409, 422, ...)
	CountTimeout                          // no answer before the attempt timeout
	CountReset                            // a connection with no whole answer: reset, closed, not HTTP, a body cut short
	CountRefused                          // connection refused
	// CountOther is a failure that is none of the above: an unexpected
	// status (1xx, 3xx: a redirect, which is not followed) or no status
	// and no error kind.
	CountOther

	// CountAll counts every failure: the default.
	CountAll = Count5xx | Count429 | Count4xx | CountTimeout | CountReset | CountRefused | CountOther
)

// breakerCountNames are the names written in a drill, in bit order.
var breakerCountNames = [...]string{"5xx", "429", "4xx", "timeout", "reset", "refused", "other"}

// BreakerCountNames lists the outcome names policy.breaker.count accepts.
func BreakerCountNames() []string { return append([]string(nil), breakerCountNames[:]...) }

// ParseBreakerCount reads a list of outcome names; an empty list is 0,
// every failure.
func ParseBreakerCount(names []string) (BreakerCount, error) {
	if len(names) == 0 {
		return 0, nil
	}
	var c BreakerCount
	for _, n := range names {
		found := false
		for i, known := range breakerCountNames {
			if strings.EqualFold(strings.TrimSpace(n), known) {
				bit := BreakerCount(1) << i
				if c&bit != 0 {
					return 0, fmt.Errorf("%q is listed twice", n)
				}
				c |= bit
				found = true
			}
		}
		if !found {
			return 0, fmt.Errorf("unknown outcome %q (want %s)", n, strings.Join(breakerCountNames[:], ", "))
		}
	}
	return c, nil
}

// String lists the outcomes, comma-separated, in bit order.
func (c BreakerCount) String() string {
	if c == 0 || c == CountAll {
		return "all failures"
	}
	return strings.Join(c.Names(), ", ")
}

// Names lists the outcomes by name in bit order; nil for every failure
// (0 or CountAll), the form ParseBreakerCount reads back.
func (c BreakerCount) Names() []string {
	if c == 0 || c == CountAll {
		return nil
	}
	var names []string
	for i, n := range breakerCountNames {
		if c&(BreakerCount(1)<<i) != 0 {
			names = append(names, n)
		}
	}
	return names
}

// KindOf is the outcome's kind as a breaker counts it. It is meaningful for
// failures only; a success is never counted.
func KindOf(o Outcome) BreakerCount {
	switch {
	case o.Status == 429:
		return Count429
	case o.Status >= 500 && o.Status < 600:
		return Count5xx
	case o.Status >= 400 && o.Status < 500:
		return Count4xx
	case o.Status != 0:
		return CountOther
	}
	switch o.Err {
	case ErrTimeout:
		return CountTimeout
	case ErrReset:
		return CountReset
	case ErrRefused:
		return CountRefused
	}
	return CountOther
}

// Counts reports whether the breaker counts failed outcome o.
func (c BreakerCount) Counts(o Outcome) bool {
	if c == 0 {
		c = CountAll
	}
	return c&KindOf(o) != 0
}
