package model

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// This file declares the retry policy, breaker and budget settings as a
// drill writes them (policy.retry, policy.breaker, policy.budget), with
// their defaults and the one validation of each (Problems). The drill
// format (TOML) and the live dispatcher's configuration file (JSON) both
// decode into these types, durations written as text with a unit;
// Problems keys are relative to each table ("max_attempts").

// Bounds of the policy settings. They keep every sum and product the
// runners form (now + delay, milli-tokens) far from overflow.
const (
	MaxPolicyAttempts   = 1000 // policy.retry.max_attempts
	MaxPolicyMultiplier = 1000 // policy.retry.multiplier
	// MaxPolicyDuration bounds every duration of a retry policy or
	// breaker.
	MaxPolicyDuration = 1000 * time.Hour
	// MaxBudgetTokens bounds policy.budget.max_tokens: Budget counts
	// milli-tokens in an int64.
	MaxBudgetTokens = 1e9
	// MaxStatusOverrides bounds retryable_status and permanent_status
	// together.
	MaxStatusOverrides = 1000
)

// Defaults of the policy settings: what an absent key takes, in a drill
// and in the dispatcher's file alike (DefaultPolicySettings).
const (
	DefaultRetryAttempts    = 5
	DefaultRetryBase        = time.Second
	DefaultRetryCap         = 5 * time.Minute
	DefaultJitter           = "full"
	DefaultBreakerThreshold = 5
	DefaultBreakerWindow    = 60 * time.Second
	DefaultBreakerRatio     = 0.5
	DefaultBreakerMinCalls  = 10
	DefaultBreakerCooldown  = 30 * time.Second
	DefaultBreakerProbes    = 1
	DefaultBudgetTokenRatio = 0.1
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

// PolicySettings is a drill's [policy] table, and a partner's "policy"
// object in the dispatcher's file: the retry policy with its breaker and
// budget.
type PolicySettings struct {
	Retry   RetryPolicy   `toml:"retry" json:"retry"`
	Breaker BreakerPolicy `toml:"breaker" json:"breaker"`
	Budget  BudgetPolicy  `toml:"budget" json:"budget"`
}

// DefaultPolicySettings returns every policy setting at its default: no
// breaker and no budget. A decoder that leaves absent keys alone (JSON)
// decodes over it, then calls FillDerived.
func DefaultPolicySettings() PolicySettings {
	return PolicySettings{
		Retry: RetryPolicy{
			MaxAttempts: DefaultRetryAttempts, Base: Duration{D: DefaultRetryBase}, Cap: Duration{D: DefaultRetryCap},
			Multiplier: DefaultMultiplier, Jitter: DefaultJitter, JitterRatio: DefaultJitterRatio,
			RetryAfter: RetryAfterChoices[0], RetryAfterMax: Duration{D: DefaultRetryCap},
		},
		Breaker: BreakerPolicy{
			Trip: NoBreaker, Threshold: DefaultBreakerThreshold, Window: Duration{D: DefaultBreakerWindow},
			Ratio: DefaultBreakerRatio, MinCalls: DefaultBreakerMinCalls, Cooldown: Duration{D: DefaultBreakerCooldown},
			Probes: DefaultBreakerProbes, OnOpen: OnOpenChoices[0],
		},
		Budget: BudgetPolicy{Scope: BudgetScopeChoices[0], TokenRatio: DefaultBudgetTokenRatio, OnExhausted: OnExhaustedChoices[0]},
	}
}

// FillDerived sets the defaults that follow another setting: an absent
// retry_after_max is cap.
func (p *PolicySettings) FillDerived() {
	if !p.Retry.RetryAfterMax.Set {
		p.Retry.RetryAfterMax = Duration{D: p.Retry.Cap.D}
	}
}

// Problems reports everything wrong with the settings, defaults filled
// in, each key under its table ("retry.base", "breaker.trip").
func (p *PolicySettings) Problems() []SettingProblem {
	var ps []SettingProblem
	for _, t := range []struct {
		table string
		ps    []SettingProblem
	}{{"retry.", p.Retry.Problems()}, {"breaker.", p.Breaker.Problems()}, {"budget.", p.Budget.Problems()}} {
		for _, sp := range t.ps {
			sp.Key = t.table + sp.Key
			ps = append(ps, sp)
		}
	}
	return ps
}

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
	ps.bounded(key, d)
}

// bounded holds a duration to MaxPolicyDuration.
func (ps *problems) bounded(key string, d Duration) {
	if d.D > MaxPolicyDuration {
		ps.bad(key, "must be at most %v (got %v)", MaxPolicyDuration, d.D)
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
	ps.bounded("cap", r.Cap)
	ps.bounded("delivery_window", r.DeliveryWindow)
	ps.bounded("retry_after_max", r.RetryAfterMax)
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
	if ps.choice("retry_after", r.RetryAfter, RetryAfterChoices...) && r.RetryAfter == RetryAfterChoices[0] && r.RetryAfterMax.D <= 0 {
		ps.bad("retry_after_max", "%v with retry_after = \"honour\" would honour no Retry-After; give a positive maximum or set retry_after = \"ignore\"", r.RetryAfterMax.D)
	}
	ps.statuses(r.RetryableStatus, r.PermanentStatus)
	return ps
}

// statuses checks the status overrides.
func (ps *problems) statuses(retryable, permanent []int) {
	if n := len(retryable) + len(permanent); n > MaxStatusOverrides {
		ps.bad("retryable_status", "%d status overrides with permanent_status; at most %d", n, MaxStatusOverrides)
		return
	}
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
	ps.bounded("window", b.Window)
	ps.positive("cooldown", b.Cooldown)
	if b.Probes < 1 {
		ps.bad("probes", "must be at least 1 (got %d)", b.Probes)
	}
	for _, n := range []struct {
		key string
		v   int
	}{{"threshold", b.Threshold}, {"min_calls", b.MinCalls}, {"probes", b.Probes}} {
		if n.v > math.MaxInt32 {
			ps.bad(n.key, "must be at most %d (got %d)", math.MaxInt32, n.v)
		}
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
	if !(g.MaxTokens >= 0) || g.MaxTokens > MaxBudgetTokens {
		ps.bad("max_tokens", "must be at least 0 (0: no budget) and at most %g (got %v)", float64(MaxBudgetTokens), g.MaxTokens)
	}
	if !(g.TokenRatio >= 0) || g.TokenRatio > MaxBudgetTokens {
		ps.bad("token_ratio", "must be at least 0 and at most %g (got %v)", float64(MaxBudgetTokens), g.TokenRatio)
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
