package dispatcher

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stormdrill/stormdrill/model"
)

func validConfig() Config {
	c := Defaults()
	c.Owner = "d-1"
	c.PartnersURL = "http://127.0.0.1:8080"
	c.AlertURL = "http://127.0.0.1:8080/alerts"
	c.Seed = 7
	c.Clock.Speed = 20
	healthy := model.DefaultPolicySettings()
	healthy.Retry.Cap = model.Duration{D: time.Minute}
	healthy.Retry.DeliveryWindow = model.Duration{D: 30 * time.Minute}
	healthy.Retry.RetryAfterMax = model.Duration{D: time.Minute}
	healthy.Retry.RetryableStatus, healthy.Retry.PermanentStatus = []int{409}, []int{503}
	healthy.Breaker.Trip, healthy.Breaker.Probes = "rate", 2
	healthy.Budget = model.BudgetPolicy{Scope: "global", MaxTokens: 10, TokenRatio: 0.1, OnExhausted: "defer"}
	acme := model.DefaultPolicySettings()
	acme.Retry.Jitter, acme.Retry.RetryAfter = "hash", "ignore"
	acme.Breaker.OnOpen = "dead-letter"
	acme.Budget = model.BudgetPolicy{Scope: "global", MaxTokens: 10, TokenRatio: 0.1, OnExhausted: "dead-letter"}
	c.Partners = []Partner{
		{Name: "healthy", Members: 3, URL: "/p/healthy/{member}", Concurrency: 4, Policy: healthy},
		{Name: "acme", URL: "http://127.0.0.1:9090/hook", Policy: acme},
	}
	return c
}

func TestValidConfigPasses(t *testing.T) {
	c := validConfig()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if got := c.Endpoints(); !reflect.DeepEqual(got, []string{"healthy-0", "healthy-1", "healthy-2", "acme"}) {
		t.Errorf("endpoints %v", got)
	}
}

// TestValidateNamesEachBadField: one broken field each, and the error
// names it by its file key.
func TestValidateNamesEachBadField(t *testing.T) {
	cases := []struct {
		key    string
		break_ func(c *Config)
	}{
		{"owner", func(c *Config) { c.Owner = "" }},
		{"owner", func(c *Config) { c.Owner = "a\tb" }},
		{"workers", func(c *Config) { c.Workers = 0 }},
		{"workers", func(c *Config) { c.Workers = 10_000_000 }},
		{"claim_batch", func(c *Config) { c.ClaimBatch = 0 }},
		{"claim_batch", func(c *Config) { c.ClaimBatch = -1 }},
		{"held_limit", func(c *Config) { c.HeldLimit = c.ClaimBatch - 1 }},
		{"held_limit", func(c *Config) { c.HeldLimit = MaxHeldLimit + 1 }},
		{"lease_timeout", func(c *Config) { c.LeaseTimeout = 0 }},
		{"lease_timeout", func(c *Config) { c.LeaseTimeout = time.Nanosecond }},
		{"lease_timeout", func(c *Config) { c.LeaseTimeout = 500 * time.Millisecond }}, // 25ms of wall time at ×20
		{"lease_timeout", func(c *Config) { c.LeaseTimeout = MaxLeaseTimeout + 1 }},
		{"attempt_timeout", func(c *Config) { c.AttemptTimeout = 0 }},
		{"attempt_timeout", func(c *Config) { c.AttemptTimeout = -time.Second }},
		{"claim_poll", func(c *Config) { c.ClaimPoll = 0 }},
		{"alert_interval", func(c *Config) { c.AlertInterval = 0 }},
		{"alert_url", func(c *Config) { c.AlertURL = "http://192.0.2.1/alerts" }},
		{"partners_url", func(c *Config) { c.PartnersURL = "https://127.0.0.1" }},
		{"speed", func(c *Config) { c.Clock.Speed = 0 }},
		{"speed", func(c *Config) { c.Clock.Speed = 2e6 }},
		{"partners", func(c *Config) { c.Partners = nil }},
		{"partners[0].name", func(c *Config) { c.Partners[0].Name = "a b" }},
		{"partners[2].name", func(c *Config) {
			c.Partners = append(c.Partners, Partner{Name: "acme", URL: "/x", Policy: model.DefaultPolicySettings()})
		}},
		{"partners[1].name", func(c *Config) { c.Partners[1].Name = "healthy-1" }},
		{"partners[2].name", func(c *Config) {
			c.Partners = append(c.Partners, Partner{Name: "healthy", Members: 1, URL: "/x", Policy: model.DefaultPolicySettings()})
		}},
		{"partners[0].members", func(c *Config) { c.Partners[0].Members = -1 }},
		{"partners", func(c *Config) { c.Partners[0].Members = MaxEndpoints }},
		{"partners[0].url", func(c *Config) { c.Partners[0].URL = "" }},
		{"partners[1].url", func(c *Config) { c.Partners[1].URL = "http://example.com/hook" }},
		{"partners[0].concurrency", func(c *Config) { c.Partners[0].Concurrency = -1 }},
		{"partners[0].policy.retry.max_attempts", func(c *Config) { c.Partners[0].Policy.Retry.MaxAttempts = -1 }},
		{"partners[0].policy.retry.base", func(c *Config) { c.Partners[0].Policy.Retry.Base.D = 0 }},
		{"partners[0].policy.retry.cap", func(c *Config) { c.Partners[0].Policy.Retry.Cap.D = model.MaxPolicyDuration + 1 }},
		{"partners[0].policy.retry.multiplier", func(c *Config) { c.Partners[0].Policy.Retry.Multiplier = 0.5 }},
		{"partners[0].policy.retry.jitter", func(c *Config) { c.Partners[0].Policy.Retry.Jitter = "bogus" }},
		{"partners[0].policy.retry.jitter_ratio", func(c *Config) {
			c.Partners[0].Policy.Retry.Jitter, c.Partners[0].Policy.Retry.JitterRatio = "proportional", 2
		}},
		{"partners[0].policy.retry.retryable_status[0]", func(c *Config) { c.Partners[0].Policy.Retry.RetryableStatus[0] = 999 }},
		{"partners[0].policy.retry.retry_after", func(c *Config) { c.Partners[0].Policy.Retry.RetryAfter = "obey" }},
		{"partners[0].policy.breaker.trip", func(c *Config) { c.Partners[0].Policy.Breaker.Trip = "sometimes" }},
		{"partners[0].policy.breaker.ratio", func(c *Config) { c.Partners[0].Policy.Breaker.Ratio = 1.5 }},
		{"partners[0].policy.breaker.cooldown", func(c *Config) { c.Partners[0].Policy.Breaker.Cooldown.D = 0 }},
		{"partners[0].policy.breaker.on_open", func(c *Config) { c.Partners[0].Policy.Breaker.OnOpen = "drop" }},
		{"partners[0].policy.budget.max_tokens", func(c *Config) { c.Partners[0].Policy.Budget.MaxTokens = 1e17 }},
		{"partners[0].policy.budget.token_ratio", func(c *Config) { c.Partners[0].Policy.Budget.TokenRatio = -1 }},
		{"partners[0].policy.budget.on_exhausted", func(c *Config) { c.Partners[0].Policy.Budget.OnExhausted = "drop" }},
		{"partners[1].policy.budget.scope", func(c *Config) { c.Partners[1].Policy.Budget.MaxTokens = 20 }},
		{"partners[1].policy.budget.scope", func(c *Config) { c.Partners[1].Policy.Budget.Scope = "pool" }},
	}
	for _, tc := range cases {
		c := validConfig()
		tc.break_(&c)
		err := c.Validate()
		if err == nil {
			t.Errorf("%s: accepted", tc.key)
			continue
		}
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Key != tc.key {
			t.Errorf("%s: error %q names another key", tc.key, err)
		}
	}
}

// TestFileRoundTrip: a Config written by Marshal reads back the same
// (durations read from a file are marked present), and writes the same.
func TestFileRoundTrip(t *testing.T) {
	c := validConfig()
	b, err := Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Parse(b)
	if err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	got.Owner = c.Owner
	for _, ps := range []*model.PolicySettings{&c.Partners[0].Policy, &c.Partners[1].Policy, &got.Partners[0].Policy, &got.Partners[1].Policy} {
		for _, d := range []*model.Duration{&ps.Retry.Base, &ps.Retry.Cap, &ps.Retry.DeliveryWindow, &ps.Retry.RetryAfterMax, &ps.Breaker.Window, &ps.Breaker.Cooldown} {
			d.Set = false
		}
	}
	if !reflect.DeepEqual(got, c) {
		t.Errorf("round trip differs:\n got %+v\nwant %+v\nfile %s", got, c, b)
	}
	again, err := Marshal(got)
	if err != nil || string(again) != string(b) {
		t.Errorf("written again differs (%v):\n%s\nfirst:\n%s", err, again, b)
	}
}

// TestFileDefaults: absent keys take the documented defaults, a policy's
// those of a drill; zero given is refused.
func TestFileDefaults(t *testing.T) {
	c, err := Parse([]byte(`{"partners": [{"name": "a", "url": "http://127.0.0.1:1/a"}, {"name": "b", "url": "http://127.0.0.1:1/b", "policy": {"retry": {"cap": "1m"}}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	want := Defaults()
	capped := model.DefaultPolicySettings()
	capped.Retry.Cap = model.Duration{D: time.Minute, Set: true}
	capped.Retry.RetryAfterMax = model.Duration{D: time.Minute} // follows cap
	want.Partners = []Partner{{Name: "a", URL: "http://127.0.0.1:1/a", Policy: model.DefaultPolicySettings()}, {Name: "b", URL: "http://127.0.0.1:1/b", Policy: capped}}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("defaults:\n got %+v\nwant %+v", c, want)
	}
	for _, body := range []string{
		`{"workers": 0, "partners": [{"name": "a", "url": "http://127.0.0.1:1/a"}]}`,
		`{"speed": 0, "partners": [{"name": "a", "url": "http://127.0.0.1:1/a"}]}`,
		`{"claim_poll": "0s", "partners": [{"name": "a", "url": "http://127.0.0.1:1/a"}]}`,
	} {
		if _, err := Parse([]byte(body)); err == nil {
			t.Errorf("%s: accepted", body)
		}
	}
}

// TestFileErrorsNameTheKey: the file's own problems (names, durations,
// types) name the key.
func TestFileErrorsNameTheKey(t *testing.T) {
	base := `{"partners": [{"name": "a", "url": "http://127.0.0.1:1/a", POLICY}]}`
	cases := []struct{ policy, want string }{
		{`"policy": {"retry": {"jitter": "bogus"}}`, `partners[0].policy.retry.jitter: "bogus" is not one of`},
		{`"policy": {"retry": {"base": "2 s"}}`, `line 1: base: bad duration "2 s"`},
		{`"policy": {"retry": {"base": "2"}}`, `line 1: base: duration "2" has no unit`},
		{`"policy": {"retry": {"retry_after": "obey"}}`, `partners[0].policy.retry.retry_after: "obey" is not one of honour or ignore`},
		{`"policy": {"retry": {"retryable_status": [700]}}`, `partners[0].policy.retry.retryable_status[0]: 700 is not an HTTP status`},
		{`"policy": {"retry": {"retryable_status": [409], "permanent_status": [409]}}`, `partners[0].policy.retry.permanent_status[0]: 409 is also in retryable_status`},
		{`"policy": {"breaker": {"trip": "sometimes"}}`, `partners[0].policy.breaker.trip: "sometimes" is not one of none,`},
		{`"policy": {"breaker": {"trip": "rate", "cooldown": "soon"}}`, `cooldown: bad duration "soon"`},
		{`"policy": {"budget": {"max_tokens": -1}}`, `partners[0].policy.budget.max_tokens: must be at least 0`},
		{`"members": 1.5`, `partners.members: want int, got a JSON number`},
		{`"policy": {"retry": {"max_attempts": "5"}}`, `partners.policy.retry.max_attempts: want int, got a JSON string`},
		{`"policy": {"retry": {"base": 2}}`, `partners.policy.retry.base: want a string (durations are strings with a unit`},
		{`"policy": {"polcy": 1}`, `polcy: unknown key`},
		// The earlier layout is refused, naming where each key went.
		{`"policy": {"max_attempts": 5}`, `max_attempts: unknown key; a partner's policy is a drill's [policy] now: write it as policy.retry.max_attempts`},
		{`"policy": {"retry": {"on_open": "hold"}}`, `write it as policy.breaker.on_open`},
		{`"breaker": {"trip": "rate"}`, `breaker: unknown key; a partner's policy is a drill's [policy] now: write it as policy.breaker`},
		{`"policy": {"budget": {"max_tokens": 5, "pool": "global"}}`, `pool: unknown key; a partner's policy is a drill's [policy] now: write it as policy.budget.scope`},
	}
	for _, tc := range cases {
		_, err := Parse([]byte(strings.Replace(base, "POLICY", tc.policy, 1)))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.policy, err, tc.want)
		}
	}
	if _, err := Parse([]byte(`{"partners": []} {}`)); err == nil || !strings.Contains(err.Error(), "data after") {
		t.Errorf("trailing data: %v", err)
	}
	long := strings.Repeat("x", 10_000)
	if _, err := Parse([]byte(`{"` + long + `": 1}`)); err == nil || len(err.Error()) > 300 {
		t.Errorf("a long unknown key is echoed whole: %d bytes", len(err.Error()))
	}
}

// FuzzParse: any input is refused with an error or yields a Config that
// validates and survives a round trip; never a panic.
func FuzzParse(f *testing.F) {
	c := validConfig()
	b, _ := Marshal(c)
	f.Add(b)
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"workers": 10000000, "partners": [{"name": "a", "url": "http://127.0.0.1:1/a"}]}`))
	f.Add([]byte(`{"lease_timeout": "1ns", "partners": [{"name": "a", "members": 3, "url": "http://[::1]:1/a/{member}"}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := Parse(b)
		if err != nil {
			return
		}
		c.Owner = "fuzz"
		if err := c.Validate(); err != nil {
			t.Fatalf("Parse accepted a config that does not validate: %v", err)
		}
		out, err := Marshal(c)
		if err != nil {
			t.Fatalf("Marshal: %v", err)
		}
		if _, err := Parse(out); err != nil {
			t.Fatalf("a marshalled config does not parse: %v\n%s", err, out)
		}
	})
}

// Every trip rule model declares is one the dispatcher accepts and writes
// back: a rule that validates as a drill is never refused live.
func TestEveryTripRuleIsAccepted(t *testing.T) {
	for i := range model.TripRules {
		c := validConfig()
		c.Partners[0].Policy.Breaker.Trip = model.TripRule(i).String()
		if err := c.Validate(); err != nil {
			t.Errorf("%s: %v", model.TripRule(i), err)
		}
		if _, err := Marshal(c); err != nil {
			t.Errorf("%s: %v", model.TripRule(i), err)
		}
	}
}
