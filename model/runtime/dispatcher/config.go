package dispatcher

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/stormdrill/stormdrill/model"
	"github.com/stormdrill/stormdrill/model/runtime/queue"
)

// Ranges Validate enforces. They keep every sum and product the dispatcher
// forms (now + lease, now + attempt timeout, workers × buffers) far from
// overflow, and a typo from asking for a machine's worth of goroutines.
const (
	MaxWorkers        = 100_000
	MaxHeldLimit      = 1_000_000
	MaxClaimBatch     = queue.MaxClaim
	MaxLeaseTimeout   = 1000 * time.Hour
	MaxAttemptTimeout = 24 * time.Hour
	MaxAlertInterval  = 24 * time.Hour
	MinClaimPoll      = 100 * time.Microsecond
	MaxClaimPoll      = 10 * time.Second
	MaxSpeed          = 1e6
	// MinLeaseWall is the shortest lease in wall time (LeaseTimeout ÷
	// speed): leases are renewed every third of one, and each renewal is a
	// store round trip, so a shorter lease is spent renewing, or lost.
	MinLeaseWall = 50 * time.Millisecond
	// MaxEndpoints bounds the partner endpoints, members included.
	MaxEndpoints = 1_000_000
)

// Defaults of the Config fields (see Defaults).
const (
	DefaultWorkers        = 10
	DefaultHeldLimit      = 200_000
	DefaultClaimBatch     = 64
	DefaultLeaseTimeout   = 30 * time.Second
	DefaultAttemptTimeout = 10 * time.Second
	DefaultAlertInterval  = time.Second
	DefaultClaimPoll      = 2 * time.Millisecond
)

// Config is the dispatcher's whole configuration. Start from Defaults and
// set what differs; Validate refuses zero and out-of-range values rather
// than guess. Each field names its key in the configuration file (see
// ReadFile); Validate's errors name fields by that key.
type Config struct {
	// Store is the durable queue. Required: Run refuses a nil one.
	// Validate does not check it, so that a configuration can be checked
	// before the store is opened. Not in the file: the dispatch command
	// opens it from --store.
	Store queue.Store
	// Owner is the lease owner name; it must be unique among running
	// dispatchers. Required, 1–200 characters, no tab or newline. Not in
	// the file: the dispatch command sets it from --owner.
	Owner string

	// Workers is how many attempts may be in flight at once. Key
	// "workers", 1–MaxWorkers; default DefaultWorkers.
	Workers int
	// HeldLimit bounds the deliveries the dispatcher keeps in memory (due,
	// delayed or in flight): it claims no more while it holds this many.
	// Key "held_limit", ClaimBatch–MaxHeldLimit; default DefaultHeldLimit.
	HeldLimit int
	// ClaimBatch is the most deliveries one claim takes from the store.
	// Key "claim_batch", 1–MaxClaimBatch; default DefaultClaimBatch.
	ClaimBatch int
	// LeaseTimeout is how long a claim holds a delivery (drill time); the
	// dispatcher renews the leases of what it holds, and a delivery whose
	// lease runs out may be claimed by another dispatcher. Key
	// "lease_timeout", at least MinLeaseWall of wall time (× speed) and at
	// most MaxLeaseTimeout; default DefaultLeaseTimeout.
	LeaseTimeout time.Duration
	// AttemptTimeout bounds one attempt (drill time); an attempt that
	// outlives it fails as a timeout. Key "attempt_timeout", (0,
	// MaxAttemptTimeout]; default DefaultAttemptTimeout.
	AttemptTimeout time.Duration
	// ClaimPoll is how often (wall time) an idle dispatcher asks the store
	// for newly due deliveries. Key "claim_poll", MinClaimPoll–MaxClaimPoll;
	// default DefaultClaimPoll.
	ClaimPoll time.Duration

	// PartnersURL is the base that partner URLs given as a path ("/p/acme")
	// are resolved against: an http URL on a loopback address. Key
	// "partners_url"; the dispatch command's --partners overrides it.
	// Default "": every partner URL must then be absolute.
	PartnersURL string
	// Partners are the endpoints deliveries go to. Key "partners", at least
	// one, MaxEndpoints endpoints in all (members counted).
	Partners []Partner

	// AlertURL receives DLQ alerts: one JSON Alert per (partner, reason)
	// with dead letters since the last batch, one batch at most every
	// AlertInterval of drill time, and a last batch with what is left when
	// the dispatcher stops. An http URL on a loopback address. Key
	// "alert_url"; the dispatch command's --alert-url overrides it.
	// Default "": no alerts.
	AlertURL string
	// AlertToken, when set, is sent with every alert as "Authorization:
	// Bearer TOKEN": a partner server with a control token requires it on
	// its alert sink. Not in the configuration file (a secret); the
	// dispatch command reads it from $STORMDRILL_PARTNER_TOKEN.
	AlertToken string
	// AlertInterval is the least drill time between two alert batches.
	// Key "alert_interval", (0, MaxAlertInterval]; default
	// DefaultAlertInterval.
	AlertInterval time.Duration

	// Seed seeds the dispatcher's random stream (jitter), mixed with
	// Owner. Key "seed"; default 0.
	Seed uint64
	// Clock maps the wall clock to drill time; every time the store holds
	// is on it. Key "speed" is Clock.Speed, (0, MaxSpeed]; default 1.
	// Clock.Start is not in the file (the dispatch command's --start);
	// zero means the moment Run starts.
	Clock Clock

	// Events receives event lines (EventReady, EventTransition,
	// EventExit), one per line, tab-separated. Default nil: discarded.
	Events io.Writer
	// Log receives diagnostics. Default nil: discarded.
	Log io.Writer
	// Metrics, if set, receives the dispatcher's Prometheus metrics (see
	// NewMetrics). Not in the file: the dispatch command's --metrics.
	Metrics *Metrics
}

// Partner is one endpoint, or a cohort of identical ones, that deliveries
// go to. A delivery names its endpoint in the store's partner column.
type Partner struct {
	// Name names the partner. Key "name": 1–100 characters of
	// [A-Za-z0-9._-], starting with a letter or digit. Required.
	Name string
	// Members is how many endpoints this entry stands for. Key "members",
	// 0–MaxEndpoints; default 0, a single endpoint that deliveries name
	// Name. With N ≥ 1 the endpoints are Name-0 … Name-(N−1), as a drill's
	// cohorts name their subscribers, and "{member}" in URL is replaced by
	// the member number.
	Members int
	// URL is where attempts are POSTed: an http URL on a loopback address,
	// or a path resolved against Config.PartnersURL. Key "url". Required.
	URL string
	// Concurrency bounds the attempts in flight to each endpoint. Key
	// "concurrency", 0–MaxWorkers; default 0, no limit beyond Workers.
	Concurrency int
	// Policy is the retry policy with its breaker and budget: a drill's
	// [policy] table, the same keys with the same defaults and ranges
	// (model.PolicySettings, checked by its Problems). Key "policy", with
	// "retry", "breaker" and "budget" inside; absent keys take
	// model.DefaultPolicySettings, so no breaker and no budget. Endpoints
	// whose budget has scope "global" share one bucket, and must agree on
	// its max_tokens and token_ratio.
	Policy model.PolicySettings
}

// Defaults returns a Config with every field that has a default set to it.
// Store, Owner and Partners remain to be given.
func Defaults() Config {
	return Config{
		Workers: DefaultWorkers, HeldLimit: DefaultHeldLimit, ClaimBatch: DefaultClaimBatch,
		LeaseTimeout: DefaultLeaseTimeout, AttemptTimeout: DefaultAttemptTimeout,
		ClaimPoll: DefaultClaimPoll, AlertInterval: DefaultAlertInterval, Clock: Clock{Speed: 1},
	}
}

// FieldError is one invalid field, named by its key in the file
// ("partners[2].policy.jitter").
type FieldError struct {
	Key string
	Msg string
}

func (e *FieldError) Error() string { return e.Key + ": " + e.Msg }

// maxFieldErrors bounds the errors Validate reports; past it, one more
// says how many were left out.
const maxFieldErrors = 20

// Validate checks every field against its documented range and returns
// the problems joined (errors.Join of *FieldError), or nil.
func (c *Config) Validate() error {
	var v validation
	c.validateRuntime(&v)
	c.validatePartners(&v)
	errs := v.errs
	if len(errs) > maxFieldErrors {
		n := len(errs) - maxFieldErrors
		errs = append(errs[:maxFieldErrors], fmt.Errorf("… and %d more", n))
	}
	return errors.Join(errs...)
}

// validation collects the FieldErrors of one Validate.
type validation struct{ errs []error }

func (v *validation) bad(key, format string, args ...any) {
	v.errs = append(v.errs, &FieldError{Key: key, Msg: fmt.Sprintf(format, args...)})
}

// intRange reports an int outside [lo, hi].
func (v *validation) intRange(key string, n, lo, hi int) {
	if n < lo || n > hi {
		v.bad(key, "must be between %d and %d (got %d)", lo, hi, n)
	}
}

// durationRange reports a duration outside (0, hi].
func (v *validation) durationRange(key string, d, hi time.Duration) bool {
	if d <= 0 || d > hi {
		v.bad(key, "must be greater than 0 and at most %v (got %v)", hi, d)
		return false
	}
	return true
}

// loopback reports a URL that is not on a loopback address.
func (v *validation) loopback(key, u string) bool {
	if _, err := LoopbackURL(u); err != nil {
		v.bad(key, "%v", err)
		return false
	}
	return true
}

// validateRuntime checks the settings of the dispatcher itself.
func (c *Config) validateRuntime(v *validation) {
	if c.Owner == "" || len(c.Owner) > 200 || strings.ContainsAny(c.Owner, "\t\r\n") {
		v.bad("owner", "required: 1 to 200 characters without tab or newline (got %q)", clipText(c.Owner))
	}
	v.intRange("workers", c.Workers, 1, MaxWorkers)
	v.intRange("claim_batch", c.ClaimBatch, 1, MaxClaimBatch)
	if c.HeldLimit < max(c.ClaimBatch, 1) || c.HeldLimit > MaxHeldLimit {
		v.bad("held_limit", "must be between claim_batch (%d) and %d (got %d)", max(c.ClaimBatch, 1), MaxHeldLimit, c.HeldLimit)
	}
	speedOK := true
	if s := c.Clock.Speed; !(s > 0) || s > MaxSpeed {
		v.bad("speed", "must be greater than 0 and at most %g (got %v)", float64(MaxSpeed), s)
		speedOK = false
	}
	if v.durationRange("lease_timeout", c.LeaseTimeout, MaxLeaseTimeout) && speedOK && c.Clock.Wall(c.LeaseTimeout) < MinLeaseWall {
		v.bad("lease_timeout", "%v is %v of wall time at speed %g; a lease must last at least %v of wall time, since it is renewed every third of it",
			c.LeaseTimeout, c.Clock.Wall(c.LeaseTimeout), c.Clock.speed(), MinLeaseWall)
	}
	v.durationRange("attempt_timeout", c.AttemptTimeout, MaxAttemptTimeout)
	if c.ClaimPoll < MinClaimPoll || c.ClaimPoll > MaxClaimPoll {
		v.bad("claim_poll", "must be between %v and %v (got %v)", MinClaimPoll, MaxClaimPoll, c.ClaimPoll)
	}
	v.durationRange("alert_interval", c.AlertInterval, MaxAlertInterval)
	if c.AlertURL != "" {
		v.loopback("alert_url", c.AlertURL)
	}
	if c.PartnersURL != "" {
		v.loopback("partners_url", c.PartnersURL)
	}
}

// validatePartners checks the partner entries: each one's fields and
// policy, and what they must agree on together.
func (c *Config) validatePartners(v *validation) {
	if len(c.Partners) == 0 {
		v.bad("partners", "required: at least one partner")
	}
	endpoints := 0
	names := map[string]int{}    // endpoint (or "cohort/" name) → the index that declared it
	var pool *model.BudgetPolicy // the first budget of global scope
	for i := range c.Partners {
		p := &c.Partners[i]
		key := "partners[" + strconv.Itoa(i) + "]"
		endpoints += c.validatePartner(v, key, p, i, names)
		for _, sp := range p.Policy.Problems() {
			v.bad(key+".policy."+sp.Key, "%s", sp.Msg)
		}
		if b := &p.Policy.Budget; b.Enabled() && b.Global() {
			if pool == nil {
				pool = b
			} else if pool.MaxTokens != b.MaxTokens || pool.TokenRatio != b.TokenRatio {
				v.bad(key+".policy.budget.scope", "\"global\": max_tokens and token_ratio differ from an earlier partner's global budget")
			}
		}
	}
	c.validateMemberNames(v, names)
	if endpoints > MaxEndpoints {
		v.bad("partners", "%d endpoints; at most %d", endpoints, MaxEndpoints)
	}
}

// validatePartner checks one entry's name, members, URL and concurrency,
// noting its name in names, and returns how many endpoints it stands for.
func (c *Config) validatePartner(v *validation, key string, p *Partner, i int, names map[string]int) int {
	if !model.ValidName(p.Name) {
		v.bad(key+".name", "%q: want 1 to 100 characters of A-Z a-z 0-9 . _ -, starting with a letter or digit", clipText(p.Name))
	}
	endpoints := 0
	if p.Members < 0 || p.Members > MaxEndpoints {
		v.bad(key+".members", "must be between 0 and %d (got %d)", MaxEndpoints, p.Members)
	} else {
		endpoints = max(p.Members, 1)
		what, name := "endpoint", p.Name
		if p.Members > 0 {
			what, name = "cohort", "cohort/"+p.Name
		}
		if prev, dup := names[name]; dup {
			v.bad(key+".name", "%s %q is also declared by partners[%d]", what, clipText(p.Name), prev)
		} else {
			names[name] = i
		}
	}
	switch {
	case p.URL == "":
		v.bad(key+".url", "required: where attempts are sent")
	case !strings.HasPrefix(p.URL, "/"):
		v.loopback(key+".url", p.URL)
	case c.PartnersURL == "":
		v.bad(key+".url", "%q is a path, and partners_url (--partners) is not set", clipText(p.URL))
	default:
		if _, err := LoopbackURL(c.PartnersURL); err == nil {
			v.loopback(key+".url", c.PartnersURL+p.URL)
		}
	}
	if p.Concurrency < 0 || p.Concurrency > MaxWorkers {
		v.bad(key+".concurrency", "must be between 0 (no limit) and %d (got %d)", MaxWorkers, p.Concurrency)
	}
	return endpoints
}

// validateMemberNames refuses a single endpoint named as a cohort's
// member ("acme-1" beside a cohort acme of 3).
func (c *Config) validateMemberNames(v *validation, names map[string]int) {
	for i := range c.Partners {
		p := &c.Partners[i]
		cut := strings.LastIndexByte(p.Name, '-')
		if p.Members != 0 || cut < 0 {
			continue
		}
		m, err := strconv.Atoi(p.Name[cut+1:])
		j, ok := names["cohort/"+p.Name[:cut]]
		if err == nil && ok && m >= 0 && strconv.Itoa(m) == p.Name[cut+1:] && m < c.Partners[j].Members {
			v.bad("partners["+strconv.Itoa(i)+"].name", "endpoint %q is also a member of partners[%d]", p.Name, j)
		}
	}
}

// maxEchoed bounds a value echoed in an error.
const maxEchoed = 100

func clipText(s string) string {
	if len(s) > maxEchoed {
		return s[:maxEchoed] + "…"
	}
	return s
}

// LoopbackURL checks that s is an http URL on a literal loopback address
// (127.0.0.0/8 or ::1; "localhost" is read as 127.0.0.1 rather than
// resolved, since a hosts file could point it elsewhere) and returns it
// with localhost replaced. The dispatcher never sends anything off the
// machine.
func LoopbackURL(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil {
		return "", fmt.Errorf("%q: %v", clipText(s), err)
	}
	if u.Scheme != "http" || u.Host == "" {
		return "", fmt.Errorf("%q: want http://127.0.0.1:PORT", clipText(s))
	}
	if u.User != nil {
		return "", fmt.Errorf("%q: user information is not allowed", clipText(s))
	}
	host := u.Hostname()
	if strings.EqualFold(host, "localhost") {
		host = "127.0.0.1"
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return "", fmt.Errorf("%q is not on a loopback address; use 127.0.0.1 or [::1]", clipText(s))
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return "", fmt.Errorf("%q: bad port %q", clipText(s), p)
		}
	}
	if u.Port() != "" {
		u.Host = net.JoinHostPort(ip.String(), u.Port())
	} else if ip.To4() == nil {
		u.Host = "[" + ip.String() + "]"
	} else {
		u.Host = ip.String()
	}
	return u.String(), nil
}
