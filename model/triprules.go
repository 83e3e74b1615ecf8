package model

import (
	"fmt"
	"strings"
)

// This file declares every breaker trip rule, once: its name, a one-line
// doc, the settings it reads and their validation, how it decides to open
// a closed breaker, and its effect as the analytic plan states it. The
// drill format's validation, the key reference, the plan and Breaker all
// read these declarations. To add a rule, add a constant and a declaration
// here, and a case to its test.

// TripRule is how a closed breaker decides to open.
type TripRule uint8

// Trip rules, in the order of TripRules.
const (
	TripConsecutive TripRule = iota // Threshold failures in a row
	TripWindow                      // Threshold failures within Window
	TripRate                        // failure ratio >= Ratio over Window, once it holds MinCalls calls
)

// TripRuleInfo declares one trip rule.
type TripRuleInfo struct {
	Rule TripRule
	Name string // as written in a drill
	Doc  string // one line: when the breaker opens
	// Uses lists the settings the rule reads (threshold, window, ratio,
	// min_calls), as the drill names them; the key reference says so.
	Uses []string
	// Check reports what is wrong with the settings in Uses, keyed as the
	// drill names them.
	Check func(s *BreakerSettings) []Problem
	// FailuresToOpen is the plan's effect of the rule: how many failed
	// calls in a row open a closed breaker on a partner that fails every
	// call (an outage), from a clean state.
	FailuresToOpen func(s *BreakerSettings) int
	// Windowed: the rule counts the calls within window, so the plan's
	// fluid model keeps windowed counts; otherwise it keeps the run of
	// failures.
	Windowed bool
	// FluidOpens is the rule in the plan's fluid model: whether a closed
	// breaker opens, given its run of failures, or (Windowed) its failures
	// and calls within the window; the counts are fractional.
	FluidOpens func(s *BreakerSettings, run, fails, calls float64) bool
	// trips records a closed-state result at now (unix ns) and says whether
	// the breaker opens.
	trips func(b *Breaker, success bool, now int64) bool
}

func checkThreshold(s *BreakerSettings) []Problem {
	if s.Threshold < 1 {
		return []Problem{{"threshold", fmt.Sprintf("must be at least 1 (got %d)", s.Threshold)}}
	}
	return nil
}

func checkWindow(s *BreakerSettings) []Problem {
	if s.Window <= 0 {
		return []Problem{{"window", fmt.Sprintf("must be greater than 0 (got %v)", s.Window)}}
	}
	return nil
}

// fluidSlack absorbs the rounding of the fluid model's fractional counts.
const fluidSlack = 1e-9

// TripRules declares every trip rule, indexed by TripRule.
var TripRules = [...]TripRuleInfo{
	TripConsecutive: {
		Rule: TripConsecutive, Name: "consecutive",
		Doc:            "opens after threshold failures in a row",
		Uses:           []string{"threshold"},
		Check:          checkThreshold,
		FailuresToOpen: func(s *BreakerSettings) int { return max(s.Threshold, 1) },
		FluidOpens: func(s *BreakerSettings, run, _, _ float64) bool {
			return run >= float64(s.Threshold)-fluidSlack
		},
		trips: func(b *Breaker, success bool, _ int64) bool {
			if success {
				b.run = 0 // RecordClosedSuccess does the same
				return false
			}
			b.run++
			return b.run >= b.threshold
		},
	},
	TripWindow: {
		Rule: TripWindow, Name: "window",
		Doc:  "opens after threshold failures within window",
		Uses: []string{"threshold", "window"},
		Check: func(s *BreakerSettings) []Problem {
			return append(checkThreshold(s), checkWindow(s)...)
		},
		FailuresToOpen: func(s *BreakerSettings) int { return max(s.Threshold, 1) },
		Windowed:       true,
		FluidOpens: func(s *BreakerSettings, _, fails, _ float64) bool {
			return fails >= float64(s.Threshold)-fluidSlack
		},
		trips: func(b *Breaker, success bool, t int64) bool {
			if success {
				return false
			}
			m := b.memory()
			if len(m.failTimes) != b.threshold {
				m.failTimes = make([]int64, max(b.threshold, 1))
			}
			m.failTimes[m.failNext] = t
			m.failNext = (m.failNext + 1) % len(m.failTimes)
			if m.failCount < len(m.failTimes) {
				m.failCount++
			}
			// The oldest of the last Threshold failures is at failNext.
			return m.failCount == len(m.failTimes) && t-m.failTimes[m.failNext] < int64(b.window)
		},
	},
	TripRate: {
		Rule: TripRate, Name: "rate",
		Doc:  "opens when the failure ratio within window reaches ratio, once the window holds min_calls calls",
		Uses: []string{"window", "ratio", "min_calls"},
		Check: func(s *BreakerSettings) []Problem {
			ps := checkWindow(s)
			if !(s.Ratio > 0 && s.Ratio <= 1) {
				ps = append(ps, Problem{"ratio", fmt.Sprintf("must be in (0, 1] (got %v)", s.Ratio)})
			}
			if s.MinCalls < 1 {
				ps = append(ps, Problem{"min_calls", fmt.Sprintf("must be at least 1 (got %d)", s.MinCalls)})
			}
			return ps
		},
		FailuresToOpen: func(s *BreakerSettings) int { return max(s.MinCalls, 1) },
		Windowed:       true,
		FluidOpens: func(s *BreakerSettings, _, fails, calls float64) bool {
			return calls >= float64(s.MinCalls)-fluidSlack && fails >= s.Ratio*calls
		},
		trips: tripsRate,
	},
}

// RecordClosedSuccess is Record(gen, true, now) for a breaker that is
// closed and whose rule needs neither the time nor more than its first
// fields; it reports false, changing nothing, for any other breaker, which
// then needs Record.
func (b *Breaker) RecordClosedSuccess(gen uint64) bool {
	if b.state != StateClosed || b.gen != gen {
		return false
	}
	switch b.trip {
	case TripConsecutive:
		b.run = 0 // what its trips does with a success
		return true
	case TripWindow:
		return true // its trips ignores a success
	}
	return false
}

// memory returns the breaker's ruleMemory, made on first use.
func (b *Breaker) memory() *ruleMemory {
	if b.mem == nil {
		b.mem = new(ruleMemory)
	}
	return b.mem
}

func tripsRate(b *Breaker, success bool, t int64) bool {
	m := b.memory()
	if m.buckets == nil {
		m.buckets = make([]rateBucket, rateBuckets)
	}
	width := int64(b.window) / rateBuckets
	if width <= 0 {
		width = 1
	}
	// Floor, not truncate: before 1970 (or at time.Time{}) t is negative
	// and a truncated index would be negative.
	rem := t % width
	if rem < 0 {
		rem += width
	}
	start := t - rem
	idx := (start / width) % rateBuckets
	if idx < 0 {
		idx += rateBuckets
	}
	bk := &m.buckets[idx]
	if bk.start != start {
		*bk = rateBucket{start: start}
	}
	bk.calls++
	if !success {
		bk.fails++
	}
	var calls, fails int32
	for i := range m.buckets {
		if m.buckets[i].start > t-int64(b.window) {
			calls += m.buckets[i].calls
			fails += m.buckets[i].fails
		}
	}
	return !success && int(calls) >= b.minCalls && float64(fails) >= b.ratio*float64(calls)
}

// Info returns the rule's declaration; an unknown rule acts as
// consecutive.
func (r TripRule) Info() *TripRuleInfo {
	if int(r) < len(TripRules) {
		return &TripRules[r]
	}
	return &TripRules[TripConsecutive]
}

func (r TripRule) String() string {
	if int(r) < len(TripRules) {
		return TripRules[r].Name
	}
	return fmt.Sprintf("trip(%d)", r)
}

// TripRuleNames lists the trip rules' names in declaration order.
func TripRuleNames() []string {
	names := make([]string, len(TripRules))
	for i := range TripRules {
		names[i] = TripRules[i].Name
	}
	return names
}

// ParseTripRule parses a trip rule by name.
func ParseTripRule(s string) (TripRule, error) {
	for i := range TripRules {
		if TripRules[i].Name == s {
			return TripRule(i), nil
		}
	}
	names := TripRuleNames()
	return 0, fmt.Errorf("unknown breaker trip rule %q (want %s or %s)", s, strings.Join(names[:len(names)-1], ", "), names[len(names)-1])
}

// Problems reports what is wrong with the settings the trip rule reads,
// as given (before defaults); see TripRuleInfo.Check.
func (s *BreakerSettings) Problems() []Problem {
	if c := s.Trip.Info().Check; c != nil {
		return c(s)
	}
	return nil
}

// FailuresToOpen is how many failed calls in a row open a closed breaker
// with these settings (defaults filled in) on a partner that fails every
// call.
func (s BreakerSettings) FailuresToOpen() int {
	s.defaults()
	return s.Trip.Info().FailuresToOpen(&s)
}

// Known reports whether r is a declared rule.
func (r TripRule) Known() bool { return int(r) < len(TripRules) }
