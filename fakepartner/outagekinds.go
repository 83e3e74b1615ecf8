package fakepartner

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/stormdrill/stormdrill/model"
)

// This file declares every outage kind, once: its name, a one-line doc,
// the keys it uses and their validation, how a subscriber answers while it
// is in force, and its effect on attempts as the analytic plan counts it.
// Validation, `stormdrill keys`, docs/drill-keys.md, the plan, the simulated
// partner and the HTTP server all read these declarations. To add a kind,
// add a constant and a declaration here, and a case to its test.

// OutageKind is what a scripted outage does to calls.
type OutageKind uint8

// Outage kinds, in the order of OutageKinds.
const (
	OutageUnavailable OutageKind = iota // 503
	OutageTimeout                       // never answers; the caller's timeout fires
	OutageReset                         // connection reset
	OutageThrottle                      // 429 with Retry-After
	OutageSlow                          // latency × Factor
	OutageFlap                          // 503 for the first half of each Period, normal for the second
	OutageEmpty                         // the connection closes with no answer
	OutageGarbage                       // bytes that are not HTTP, then close
	OutageTruncated                     // a 200 whose body is cut short
	OutageDribble                       // headers at once, the body over DribbleOver
	OutageRefused                       // the connection is refused
	OutageLostAck                       // served and recorded; the answer is dropped (reset)
	OutageRedirect                      // 307 Temporary Redirect
)

// OutageKindInfo declares one outage kind.
type OutageKindInfo struct {
	Kind OutageKind
	Name string // as written in a drill
	Doc  string // one line: what a partner does in it
	// Uses lists the keys of the outage, besides start, for and members,
	// that the kind reads; any other such key given is a mistake.
	Uses []string
	// Check reports what is wrong with the keys in Uses; nil when none.
	Check func(o *Outage) []Problem
	// EffectiveAt reports whether the outage changes behaviour at since,
	// the time from its start (inside its window); nil means always.
	EffectiveAt func(o *Outage, since time.Duration) bool
	// Answer is how a subscriber answers a call at drill time now while
	// the outage governs it: either at once (served false: the call is
	// counted as faulted) or by serving it normally with its latency
	// multiplied by factor (served true). It draws nothing from b's random
	// stream, so an outage does not shift the draws of later calls.
	Answer func(o *Outage, b *Behaviour, now time.Duration, clock WallClock) (c Call, factor float64, served bool)
	// Effect is what the outage does to the attempts it governs, for the
	// analytic plan.
	Effect func(o *Outage) OutageEffect
	// PerCall: the kind can also strike single calls at random, with a
	// probability (partners[].faults); the keys it uses are then the
	// cohort's (Spec.DribbleOver).
	PerCall bool
	// NotPerCall says why a kind that is not PerCall cannot strike single
	// calls, when the reason is not that it is an outage's shape (a
	// slowdown, a flap); empty otherwise.
	NotPerCall string
	// Caller is what the dispatcher sees of an answer of this kind and how
	// it classes it; one line for the table of kinds in docs/drill-keys.md.
	Caller string
	// Counts is the breaker count class (policy.breaker.count) of a call
	// the kind fails; 0 for a kind that fails no call by itself.
	Counts model.BreakerCount
	// Up: the partner is up while the outage is in force, only slower, so
	// external mode counts no calls while down during it.
	Up bool
	// ClosesListener: over HTTP the cohort's listener is closed while the
	// outage governs it, so that connections are refused.
	ClosesListener bool
}

// OutageEffect is what an outage does to the attempts it governs, as the
// analytic plan counts them.
type OutageEffect struct {
	// FailShare is the share of attempts during the outage that fail by the
	// outage itself: 1 for a hard outage, ½ for a flap, 0 for a slowdown.
	FailShare float64
	// LatencyFactor multiplies the latency of the attempts it serves; an
	// attempt whose latency then passes the caller's timeout fails too.
	LatencyFactor float64
	// Hangs: failing attempts last until the caller's attempt timeout
	// instead of being answered at once.
	Hangs bool
	// RetryAfter: failing answers carry the outage's Retry-After.
	RetryAfter bool
}

// Problem is one thing wrong with a spec: the key it concerns, relative to
// the thing validated ("factor", "outages[2].retry_after"), and what is
// wrong with it.
type Problem struct{ Key, Msg string }

func (p Problem) Error() string { return p.Key + ": " + p.Msg }

func fastAnswer(r Result) Call { return Call{Latency: FastAnswerLatency, Result: r} }

// wireAnswer is a fast failing answer that the HTTP server writes as w.
func wireAnswer(w Wire) Call {
	return Call{Latency: FastAnswerLatency, Result: Result{Kind: ResultReset}, Wire: w}
}

// failEffect is the plan's effect of a kind that fails every call it
// governs at once (or after answer_after).
func failEffect(*Outage) OutageEffect { return OutageEffect{FailShare: 1, LatencyFactor: 1} }

// OutageKinds declares every outage kind, indexed by OutageKind.
var OutageKinds = [...]OutageKindInfo{
	OutageUnavailable: {
		Kind: OutageUnavailable, Name: "unavailable",
		Counts: model.Count5xx,
		Doc:    "every call is answered 503 (at once, or after answer_after)",
		Caller: "HTTP 503: `5xx`, retryable",
		Uses:   []string{"answer_after"},
		Check:  checkAnswerAfter,
		Answer: func(*Outage, *Behaviour, time.Duration, WallClock) (Call, float64, bool) {
			return fastAnswer(Result{Status: http.StatusServiceUnavailable, Kind: ResultHTTP}), 0, false
		},
		Effect: func(*Outage) OutageEffect { return OutageEffect{FailShare: 1, LatencyFactor: 1} },
	},
	OutageTimeout: {
		Kind: OutageTimeout, Name: "timeout",
		Counts:  model.CountTimeout,
		Doc:     "calls are never answered; the caller's attempt timeout fires",
		Caller:  "its attempt timeout: `timeout`, retryable",
		PerCall: true,
		Answer: func(*Outage, *Behaviour, time.Duration, WallClock) (Call, float64, bool) {
			return Call{Latency: NoAnswerLatency, NoAnswer: true, Result: Result{Kind: ResultTimeout}}, 0, false
		},
		Effect: func(*Outage) OutageEffect { return OutageEffect{FailShare: 1, LatencyFactor: 1, Hangs: true} },
	},
	OutageReset: {
		Kind: OutageReset, Name: "reset",
		Counts:  model.CountReset,
		Doc:     "every connection is reset (at once, or after answer_after)",
		Caller:  "connection reset by peer: `reset`, retryable",
		PerCall: true,
		Uses:    []string{"answer_after"},
		Check:   checkAnswerAfter,
		Answer: func(*Outage, *Behaviour, time.Duration, WallClock) (Call, float64, bool) {
			return fastAnswer(Result{Kind: ResultReset}), 0, false
		},
		Effect: func(*Outage) OutageEffect { return OutageEffect{FailShare: 1, LatencyFactor: 1} },
	},
	OutageThrottle: {
		Kind: OutageThrottle, Name: "throttle",
		Counts: model.Count429,
		Doc:    "every call is answered 429, with the Retry-After of retry_after (at once, or after answer_after)",
		Caller: "HTTP 429: `429`, retryable, its Retry-After a lower bound on the delay",
		Uses:   []string{"retry_after", "answer_after"},
		Check: func(o *Outage) []Problem {
			if _, _, err := parseRetryAfter(o.RetryAfter); err != nil {
				return append(checkAnswerAfter(o), Problem{"retry_after", err.Error()})
			}
			return checkAnswerAfter(o)
		},
		Answer: func(o *Outage, b *Behaviour, now time.Duration, clock WallClock) (Call, float64, bool) {
			return fastAnswer(Result{Status: http.StatusTooManyRequests, Kind: ResultHTTP,
				RetryAfter: b.retryAfter(o.RetryAfter, now, clock)}), 0, false
		},
		Effect: func(*Outage) OutageEffect { return OutageEffect{FailShare: 1, LatencyFactor: 1, RetryAfter: true} },
	},
	OutageSlow: {
		Kind: OutageSlow, Name: "slow",
		Up:     true,
		Doc:    "calls are served as usual, with the latency multiplied by factor",
		Caller: "the usual answers, later; `timeout` when past the attempt timeout",
		Uses:   []string{"factor"},
		Check: func(o *Outage) []Problem {
			if !(o.Factor >= 1 && o.Factor <= MaxSlowFactor) {
				return []Problem{{"factor", fmt.Sprintf("slow outages need a factor of at least 1 and at most %.0f (got %v)", float64(MaxSlowFactor), o.Factor)}}
			}
			return nil
		},
		Answer: func(o *Outage, _ *Behaviour, _ time.Duration, _ WallClock) (Call, float64, bool) {
			return Call{}, o.Factor, true
		},
		Effect: func(o *Outage) OutageEffect { return OutageEffect{LatencyFactor: o.Factor} },
	},
	OutageFlap: {
		Kind: OutageFlap, Name: "flap",
		Counts: model.Count5xx,
		Doc:    "503 in the first half of each period (at once, or after answer_after), served as usual in the second",
		Caller: "HTTP 503 or the usual answer: `5xx`, retryable",
		Uses:   []string{"period", "answer_after"},
		Check: func(o *Outage) []Problem {
			if o.Period < MinFlapPeriod {
				return append(checkAnswerAfter(o), Problem{"period", fmt.Sprintf("flap outages need a period of at least %v, one down+up cycle, e.g. \"10s\" (got %v)", MinFlapPeriod, o.Period)})
			}
			return checkAnswerAfter(o)
		},
		EffectiveAt: func(o *Outage, since time.Duration) bool {
			return o.Period <= 0 || since%o.Period < o.Period/2
		},
		Answer: func(*Outage, *Behaviour, time.Duration, WallClock) (Call, float64, bool) {
			return fastAnswer(Result{Status: http.StatusServiceUnavailable, Kind: ResultHTTP}), 0, false
		},
		Effect: func(*Outage) OutageEffect { return OutageEffect{FailShare: 0.5, LatencyFactor: 1} },
	},
	OutageEmpty: {
		Kind: OutageEmpty, Name: "empty",
		Counts:  model.CountReset,
		Doc:     "the connection is closed with no answer at all (at once, or after answer_after)",
		Caller:  "EOF before any answer: `reset`, retryable",
		PerCall: true,
		Uses:    []string{"answer_after"},
		Check:   checkAnswerAfter,
		Answer: func(*Outage, *Behaviour, time.Duration, WallClock) (Call, float64, bool) {
			return wireAnswer(WireEmpty), 0, false
		},
		Effect: failEffect,
	},
	OutageGarbage: {
		Kind: OutageGarbage, Name: "garbage",
		Counts:  model.CountReset,
		Doc:     "the answer is bytes that are not HTTP, then the connection closes (at once, or after answer_after)",
		Caller:  "a malformed HTTP response: `reset`, retryable",
		PerCall: true,
		Uses:    []string{"answer_after"},
		Check:   checkAnswerAfter,
		Answer: func(*Outage, *Behaviour, time.Duration, WallClock) (Call, float64, bool) {
			return wireAnswer(WireGarbage), 0, false
		},
		Effect: failEffect,
	},
	OutageTruncated: {
		Kind: OutageTruncated, Name: "truncated",
		Counts:  model.CountReset,
		Doc:     "a 200 whose body is cut short (Content-Length promises more), then the connection closes; the delivery is not recorded (at once, or after answer_after)",
		Caller:  "unexpected EOF reading the body: `reset`, retryable, never a success",
		PerCall: true,
		Uses:    []string{"answer_after"},
		Check:   checkAnswerAfter,
		Answer: func(*Outage, *Behaviour, time.Duration, WallClock) (Call, float64, bool) {
			return wireAnswer(WireTruncated), 0, false
		},
		Effect: failEffect,
	},
	OutageDribble: {
		Kind: OutageDribble, Name: "dribble",
		Doc:     "calls are served as usual, but the body of the answer is spread over dribble_over after the headers",
		Caller:  "the usual answer once the body is in; `timeout` when that is past the attempt timeout",
		PerCall: true,
		Uses:    []string{"dribble_over"},
		Check: func(o *Outage) []Problem {
			if o.DribbleOver <= 0 || o.DribbleOver > MaxSample {
				return []Problem{{"dribble_over", fmt.Sprintf("dribble outages need dribble_over, above 0 and at most %v (got %v)", MaxSample, o.DribbleOver)}}
			}
			return nil
		},
		Answer: func(o *Outage, _ *Behaviour, _ time.Duration, _ WallClock) (Call, float64, bool) {
			return Call{Wire: WireDribble, Dribble: o.DribbleOver}, 1, true
		},
		Effect: func(*Outage) OutageEffect { return OutageEffect{LatencyFactor: 1} },
	},
	OutageRefused: {
		Kind: OutageRefused, Name: "refused",
		Counts:         model.CountRefused,
		ClosesListener: true,
		Doc:            "connections are refused; over HTTP the cohort gets a listener of its own, closed while the outage lasts, so it hits the whole cohort",
		Caller:         "connection refused: `refused`, retryable",
		NotPerCall: "a connection is refused when it is opened, before the partner can tell which call it would carry, " +
			"and a kept-alive connection carries many calls; so refused hits a whole cohort for a while, never single calls",
		Check: func(o *Outage) []Problem {
			if o.Members != 0 {
				return []Problem{{"members", "a refused outage hits the whole cohort (its listener is closed); put the subscribers it hits in a cohort of their own"}}
			}
			return nil
		},
		Answer: func(*Outage, *Behaviour, time.Duration, WallClock) (Call, float64, bool) {
			return fastAnswer(Result{Kind: ResultRefused}), 0, false
		},
		Effect: failEffect,
	},
	OutageLostAck: {
		Kind: OutageLostAck, Name: "lost-ack",
		Counts:  model.CountReset,
		Doc:     "calls are served and recorded as usual, but a success's answer is dropped (the connection is reset), so the retry is a duplicate",
		Caller:  "connection reset by peer: `reset`, retryable; the partner has the delivery",
		PerCall: true,
		Answer: func(*Outage, *Behaviour, time.Duration, WallClock) (Call, float64, bool) {
			return Call{Wire: WireDropAnswer}, 1, true
		},
		Effect: failEffect,
	},
	OutageRedirect: {
		Kind: OutageRedirect, Name: "redirect",
		Counts:  model.CountOther,
		Doc:     "every call is answered 307 Temporary Redirect (at once, or after answer_after); the dispatcher does not follow it",
		Caller:  "HTTP 307: `other`, permanent by default (dead-lettered `permanent`; `policy.retry.retryable_status = [307]` makes it retryable)",
		PerCall: true,
		Uses:    []string{"answer_after"},
		Check:   checkAnswerAfter,
		Answer: func(*Outage, *Behaviour, time.Duration, WallClock) (Call, float64, bool) {
			return fastAnswer(Result{Status: http.StatusTemporaryRedirect, Kind: ResultHTTP}), 0, false
		},
		Effect: failEffect,
	},
}

// checkAnswerAfter checks the answer_after distribution of a kind that
// answers its failures.
func checkAnswerAfter(o *Outage) []Problem {
	if o.AnswerAfter == nil {
		return nil
	}
	if err := o.AnswerAfter.Validate(); err != nil {
		return []Problem{{"answer_after", err.Error()}}
	}
	return nil
}

// MaxSlowFactor is the largest latency multiplier of a slow outage.
const MaxSlowFactor = 1e6

// Info returns the kind's declaration; an unknown kind gets a zero one.
func (k OutageKind) Info() *OutageKindInfo {
	if int(k) < len(OutageKinds) {
		return &OutageKinds[k]
	}
	return &OutageKindInfo{}
}

// OutageKindNames lists the outage kinds' names in declaration order.
func OutageKindNames() []string {
	names := make([]string, len(OutageKinds))
	for i := range OutageKinds {
		names[i] = OutageKinds[i].Name
	}
	return names
}

// String returns the kind's name as written in a drill.
func (k OutageKind) String() string {
	if int(k) < len(OutageKinds) {
		return OutageKinds[k].Name
	}
	return fmt.Sprintf("OutageKind(%d)", int(k))
}

// MarshalText writes the kind's name (for JSON).
func (k OutageKind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// ParseOutageKind parses an outage kind name.
func ParseOutageKind(s string) (OutageKind, error) {
	for i := range OutageKinds {
		if strings.EqualFold(strings.TrimSpace(s), OutageKinds[i].Name) {
			return OutageKind(i), nil
		}
	}
	names := OutageKindNames()
	return 0, fmt.Errorf("unknown outage kind %q: want %s or %s", s, strings.Join(names[:len(names)-1], ", "), names[len(names)-1])
}

// outageKeys are the outage keys that only some kinds use, with whether
// the outage gives them.
func outageKeys(o *Outage) [5]struct {
	key   string
	given bool
} {
	return [5]struct {
		key   string
		given bool
	}{{"retry_after", o.RetryAfter != ""}, {"factor", o.Factor != 0}, {"period", o.Period != 0}, {"answer_after", o.AnswerAfter != nil},
		{"dribble_over", o.DribbleOver != 0}}
}

// PerCallKindNames lists the kinds that can strike single calls
// (OutageKindInfo.PerCall), in declaration order.
func PerCallKindNames() []string {
	var names []string
	for i := range OutageKinds {
		if OutageKinds[i].PerCall {
			names = append(names, OutageKinds[i].Name)
		}
	}
	return names
}
