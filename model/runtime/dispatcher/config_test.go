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
	c.Partners = []Partner{
		{Name: "healthy", Members: 3, URL: "/p/healthy/{member}", Concurrency: 4,
			Policy: model.Policy{MaxAttempts: 5, Backoff: model.Backoff{Base: time.Second, Cap: time.Minute, Multiplier: 2, Jitter: model.JitterFull},
				DeliveryWindow: 30 * time.Minute, RetryAfterMax: time.Minute,
				Classifier: model.Classifier{Overrides: map[int]model.Class{409: model.ClassRetryable, 503: model.ClassPermanent}}},
			Breaker: &model.BreakerSettings{Trip: model.TripRate, Threshold: 5, Window: time.Minute, Ratio: 0.5, MinCalls: 10, Cooldown: 30 * time.Second, Probes: 2},
			Budget:  &Budget{MaxTokens: 10, TokenRatio: 0.1, Pool: "global"}},
		{Name: "acme", URL: "http://127.0.0.1:9090/hook",
			Policy: model.Policy{IgnoreRetryAfter: true, OnOpenDeadLetter: true, OnExhaustedDeadLetter: true, Backoff: model.Backoff{Jitter: model.JitterHash}},
			Budget: &Budget{MaxTokens: 10, TokenRatio: 0.1, Pool: "global"}},
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
		{"partners[2].name", func(c *Config) { c.Partners = append(c.Partners, Partner{Name: "acme", URL: "/x"}) }},
		{"partners[1].name", func(c *Config) { c.Partners[1].Name = "healthy-1" }},
		{"partners[2].name", func(c *Config) { c.Partners = append(c.Partners, Partner{Name: "healthy", Members: 1, URL: "/x"}) }},
		{"partners[0].members", func(c *Config) { c.Partners[0].Members = -1 }},
		{"partners", func(c *Config) { c.Partners[0].Members = MaxEndpoints }},
		{"partners[0].url", func(c *Config) { c.Partners[0].URL = "" }},
		{"partners[1].url", func(c *Config) { c.Partners[1].URL = "http://example.com/hook" }},
		{"partners[0].concurrency", func(c *Config) { c.Partners[0].Concurrency = -1 }},
		{"partners[0].policy.max_attempts", func(c *Config) { c.Partners[0].Policy.MaxAttempts = -1 }},
		{"partners[0].policy.base", func(c *Config) { c.Partners[0].Policy.Backoff.Base = -time.Second }},
		{"partners[0].policy.cap", func(c *Config) { c.Partners[0].Policy.Backoff.Cap = MaxPolicyDuration + 1 }},
		{"partners[0].policy.multiplier", func(c *Config) { c.Partners[0].Policy.Backoff.Multiplier = 0.5 }},
		{"partners[0].policy.jitter", func(c *Config) { c.Partners[0].Policy.Backoff.Jitter = 99 }},
		{"partners[0].policy.jitter_ratio", func(c *Config) { c.Partners[0].Policy.Backoff.JitterRatio = 2 }},
		{"partners[0].policy.classifier", func(c *Config) { c.Partners[0].Policy.Classifier.Overrides[999] = model.ClassRetryable }},
		{"partners[0].breaker.trip", func(c *Config) { c.Partners[0].Breaker.Trip = 9 }},
		{"partners[0].breaker.ratio", func(c *Config) { c.Partners[0].Breaker.Ratio = 1.5 }},
		{"partners[0].breaker.cooldown", func(c *Config) { c.Partners[0].Breaker.Cooldown = -1 }},
		{"partners[0].budget.max_tokens", func(c *Config) { c.Partners[0].Budget.MaxTokens = 1e17 }},
		{"partners[0].budget.token_ratio", func(c *Config) { c.Partners[0].Budget.TokenRatio = -1 }},
		{"partners[1].budget.pool", func(c *Config) { c.Partners[1].Budget = &Budget{MaxTokens: 20, Pool: "global"} }},
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

// TestFileRoundTrip: a Config written by Marshal reads back the same.
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
	if !reflect.DeepEqual(got, c) {
		t.Errorf("round trip differs:\n got %+v\nwant %+v\nfile %s", got, c, b)
	}
}

// TestFileDefaults: absent keys take the documented defaults; zero given
// is refused.
func TestFileDefaults(t *testing.T) {
	c, err := Parse([]byte(`{"partners": [{"name": "a", "url": "http://127.0.0.1:1/a"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	want := Defaults()
	want.Partners = []Partner{{Name: "a", URL: "http://127.0.0.1:1/a", Policy: model.Policy{}}}
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
		{`"policy": {"jitter": "bogus"}`, `partners[0].policy.jitter: unknown jitter "bogus"`},
		{`"policy": {"base": "2 s"}`, `partners[0].policy.base: "2 s" is not a duration`},
		{`"policy": {"retry_after": "obey"}`, `partners[0].policy.retry_after: "obey": want honour or ignore`},
		{`"policy": {"retryable_status": [700]}`, `partners[0].policy.retryable_status[0]: 700 is not an HTTP status`},
		{`"policy": {"retryable_status": [409], "permanent_status": [409]}`, `partners[0].policy.permanent_status[0]: 409 is also in retryable_status`},
		{`"breaker": {"trip": "sometimes"}`, `partners[0].breaker.trip: unknown breaker trip rule "sometimes"`},
		{`"breaker": {"trip": "rate", "cooldown": "soon"}`, `partners[0].breaker.cooldown: "soon" is not a duration`},
		{`"budget": {"max_tokens": 0}`, `partners[0].budget.max_tokens: must be greater than 0`},
		{`"members": 1.5`, `partners.members: want int, got a JSON number`},
		{`"policy": {"max_attempts": "5"}`, `partners.policy.max_attempts: want int, got a JSON string`},
		{`"policy": {"polcy": 1}`, `polcy: unknown key`},
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
		c.Partners[0].Breaker.Trip = model.TripRule(i)
		if err := c.Validate(); err != nil {
			t.Errorf("%s: %v", model.TripRule(i), err)
		}
		if _, err := Marshal(c); err != nil {
			t.Errorf("%s: %v", model.TripRule(i), err)
		}
	}
}
