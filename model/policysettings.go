package model

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// This file declares the retry policy, breaker and budget settings as a
// drill writes them (policy.retry, policy.breaker, policy.budget), with
// the one validation of each. The drill format decodes into these types;
// Problems keys are relative to each table ("max_attempts").

// Bounds of the policy settings.
const (
	MaxPolicyAttempts   = 1000 // policy.retry.max_attempts
	MaxPolicyMultiplier = 1000 // policy.retry.multiplier
)

// The choices of the policy settings, the default first.
var (
	RetryAfterChoices  = []string{"honour", "ignore"}
	OnOpenChoices      = []string{"hold", "dead-letter"}
	BudgetScopeChoices = []string{"partner", "global"}
	OnExhaustedChoices = []string{"defer", "dead-letter"}
)

// NoBreaker is the trip value of a drill without a breaker.
const NoBreaker = "none"

// RetryPolicy is capped exponential backoff with jitter, as a drill
// writes it.
type RetryPolicy struct {
	MaxAttempts     int      `toml:"max_attempts" json:"max_attempts"` // 0 = no limit
	Base            Duration `toml:"base" json:"base"`
	Cap             Duration `toml:"cap" json:"cap"`
	Multiplier      float64  `toml:"multiplier" json:"multiplier"`
	Jitter          string   `toml:"jitter" json:"jitter"` // a JitterKinds name
	JitterRatio     float64  `toml:"jitter_ratio" json:"jitter_ratio"`
	DeliveryWindow  Duration `toml:"delivery_window" json:"delivery_window"`
	RetryAfter      string   `toml:"retry_after" json:"retry_after"` // a RetryAfterChoices name
	RetryAfterMax   Duration `toml:"retry_after_max" json:"retry_after_max"`
	RetryableStatus []int    `toml:"retryable_status" json:"retryable_status,omitempty"` // overrides
	PermanentStatus []int    `toml:"permanent_status" json:"permanent_status,omitempty"` // overrides
}

// BreakerPolicy is the per-partner circuit breaker; Trip "" or NoBreaker
// disables it.
type BreakerPolicy struct {
	Trip      string   `toml:"trip" json:"trip"` // NoBreaker or a TripRules name
	Threshold int      `toml:"threshold" json:"threshold"`
	Window    Duration `toml:"window" json:"window"`
	Ratio     float64  `toml:"ratio" json:"ratio"`
	MinCalls  int      `toml:"min_calls" json:"min_calls"`
	Cooldown  Duration `toml:"cooldown" json:"cooldown"`
	Probes    int      `toml:"probes" json:"probes"`
	OnOpen    string   `toml:"on_open" json:"on_open"` // an OnOpenChoices name
	// Count names the failures the breaker counts (BreakerCountNames);
	// empty counts every failure.
	Count []string `toml:"count" json:"count,omitempty"`
}

// BudgetPolicy is a gRPC-style retry token bucket; MaxTokens 0 disables
// it.
type BudgetPolicy struct {
	Scope       string  `toml:"scope" json:"scope"` // a BudgetScopeChoices name
	MaxTokens   float64 `toml:"max_tokens" json:"max_tokens"`
	TokenRatio  float64 `toml:"token_ratio" json:"token_ratio"`
	OnExhausted string  `toml:"on_exhausted" json:"on_exhausted"` // an OnExhaustedChoices name
}

// SettingProblem is one thing wrong with a setting. Choices, when the
// value is not one of them, lets a caller suggest the nearest.
type SettingProblem struct {
	Key, Msg string
	Value    string
	Choices  []string
}

// problems collects SettingProblems.
type problems []SettingProblem

func (ps *problems) bad(key, format string, args ...any) {
	*ps = append(*ps, SettingProblem{Key: key, Msg: fmt.Sprintf(format, args...)})
}

// choice reports whether v is one of choices, and a problem when not.
func (ps *problems) choice(key, v string, choices ...string) bool {
	for _, c := range choices {
		if v == c {
			return true
		}
	}
	*ps = append(*ps, SettingProblem{Key: key, Value: v, Choices: choices,
		Msg: fmt.Sprintf("%q is not one of %s", clipValue(v), joinOr(choices))})
	return false
}

func (ps *problems) positive(key string, d Duration) {
	if d.D <= 0 {
		ps.bad(key, "must be greater than 0 (got %v)", d.D)
	}
}

// joinOr writes items as "a, b or c".
func joinOr(items []string) string {
	if len(items) == 1 {
		return items[0]
	}
	return strings.Join(items[:len(items)-1], ", ") + " or " + items[len(items)-1]
}

// clipValue bounds a value echoed in a problem to 100 bytes.
func clipValue(s string) string {
	if len(s) <= 100 {
		return s
	}
	cut := 97
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// Problems reports everything wrong with the retry settings, defaults
// filled in.
func (r *RetryPolicy) Problems() []SettingProblem {
	var ps problems
	if r.MaxAttempts < 0 || r.MaxAttempts > MaxPolicyAttempts {
		ps.bad("max_attempts", "must be between 0 (no limit) and %d (got %d)", MaxPolicyAttempts, r.MaxAttempts)
	}
	ps.positive("base", r.Base)
	if r.Cap.D < r.Base.D {
		ps.bad("cap", "%v is below base (%v); cap must be at least base", r.Cap.D, r.Base.D)
	}
	if !(r.Multiplier >= 1) || r.Multiplier > MaxPolicyMultiplier {
		ps.bad("multiplier", "must be at least 1 and at most %d (got %v)", MaxPolicyMultiplier, r.Multiplier)
	}
	if ps.choice("jitter", r.Jitter, JitterNames()...) {
		j, _ := ParseJitter(r.Jitter)
		bo := Backoff{Jitter: j, JitterRatio: r.JitterRatio}
		for _, p := range bo.Problems() {
			ps.bad(p.Key, "%s", p.Msg)
		}
	}
	ps.choice("retry_after", r.RetryAfter, RetryAfterChoices...)
	ps.statuses(r.RetryableStatus, r.PermanentStatus)
	return ps
}

// statuses checks the status overrides.
func (ps *problems) statuses(retryable, permanent []int) {
	seen := map[int]bool{}
	for i, c := range retryable {
		if c < 100 || c > 599 {
			ps.bad("retryable_status["+strconv.Itoa(i)+"]", "%d is not an HTTP status (100..599)", c)
		}
		seen[c] = true
	}
	for i, c := range permanent {
		key := "permanent_status[" + strconv.Itoa(i) + "]"
		if c < 100 || c > 599 {
			ps.bad(key, "%d is not an HTTP status (100..599)", c)
		} else if seen[c] {
			ps.bad(key, "%d is also in retryable_status", c)
		}
	}
}

// Enabled reports whether the settings give a breaker.
func (b *BreakerPolicy) Enabled() bool { return b.Trip != "" && b.Trip != NoBreaker }

// Problems reports everything wrong with the breaker settings, defaults
// filled in; a disabled breaker's other settings are not read.
func (b *BreakerPolicy) Problems() []SettingProblem {
	var ps problems
	if !ps.choice("trip", b.Trip, append([]string{NoBreaker}, TripRuleNames()...)...) || !b.Enabled() {
		return ps
	}
	rule, _ := ParseTripRule(b.Trip)
	bs := BreakerSettings{Trip: rule, Threshold: b.Threshold, Window: b.Window.D, Ratio: b.Ratio, MinCalls: b.MinCalls}
	for _, p := range bs.Problems() {
		ps.bad(p.Key, "%s", p.Msg)
	}
	ps.positive("cooldown", b.Cooldown)
	if b.Probes < 1 {
		ps.bad("probes", "must be at least 1 (got %d)", b.Probes)
	}
	ps.choice("on_open", b.OnOpen, OnOpenChoices...)
	if _, err := ParseBreakerCount(b.Count); err != nil {
		ps.bad("count", "%v", err)
	}
	return ps
}

// Settings converts the breaker settings for Breaker.
func (b *BreakerPolicy) Settings() (BreakerSettings, error) {
	rule, err := ParseTripRule(b.Trip)
	if err != nil {
		return BreakerSettings{}, err
	}
	count, err := ParseBreakerCount(b.Count)
	if err != nil {
		return BreakerSettings{}, err
	}
	return BreakerSettings{
		Trip: rule, Threshold: b.Threshold, Window: b.Window.D, Ratio: b.Ratio,
		MinCalls: b.MinCalls, Cooldown: b.Cooldown.D, Probes: b.Probes, Count: count,
	}, nil
}

// DeadLetters reports whether an open breaker dead-letters a retryable
// failure (on_open = "dead-letter").
func (b *BreakerPolicy) DeadLetters() bool { return b.Enabled() && b.OnOpen == OnOpenChoices[1] }

// Enabled reports whether the settings give a budget.
func (g *BudgetPolicy) Enabled() bool { return g.MaxTokens > 0 }

// Global reports whether one budget serves every partner.
func (g *BudgetPolicy) Global() bool { return g.Scope == BudgetScopeChoices[1] }

// DeadLetters reports whether a retry the budget refuses is dead-lettered
// (on_exhausted = "dead-letter").
func (g *BudgetPolicy) DeadLetters() bool {
	return g.Enabled() && g.OnExhausted == OnExhaustedChoices[1]
}

// Problems reports everything wrong with the budget settings, defaults
// filled in.
func (g *BudgetPolicy) Problems() []SettingProblem {
	var ps problems
	ps.choice("scope", g.Scope, BudgetScopeChoices...)
	if g.MaxTokens < 0 {
		ps.bad("max_tokens", "must be at least 0 (got %v)", g.MaxTokens)
	}
	if g.TokenRatio < 0 {
		ps.bad("token_ratio", "must be at least 0 (got %v)", g.TokenRatio)
	}
	ps.choice("on_exhausted", g.OnExhausted, OnExhaustedChoices...)
	return ps
}

// Policy converts the settings to the policy core's Policy.
func (r *RetryPolicy) Policy(b *BreakerPolicy, g *BudgetPolicy) (*Policy, error) {
	j, err := ParseJitter(r.Jitter)
	if err != nil {
		return nil, err
	}
	p := &Policy{
		MaxAttempts: r.MaxAttempts,
		Backoff: Backoff{
			Base: r.Base.D, Cap: r.Cap.D, Multiplier: r.Multiplier,
			Jitter: j, JitterRatio: r.JitterRatio,
		},
		DeliveryWindow:        r.DeliveryWindow.D,
		IgnoreRetryAfter:      r.RetryAfter == RetryAfterChoices[1],
		RetryAfterMax:         r.RetryAfterMax.D,
		OnOpenDeadLetter:      b.OnOpen == OnOpenChoices[1],
		OnExhaustedDeadLetter: g.OnExhausted == OnExhaustedChoices[1],
	}
	if len(r.RetryableStatus)+len(r.PermanentStatus) > 0 {
		p.Classifier.Overrides = map[int]Class{}
		for _, s := range r.RetryableStatus {
			p.Classifier.Overrides[s] = ClassRetryable
		}
		for _, s := range r.PermanentStatus {
			p.Classifier.Overrides[s] = ClassPermanent
		}
	}
	return p, nil
}
