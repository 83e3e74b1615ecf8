package dispatcher

import (
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/url"
	"regexp"
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
	// MaxAttempts bounds a policy's max_attempts.
	MaxAttempts = 1_000_000
	// MaxMultiplier bounds a backoff's growth factor.
	MaxMultiplier = 1000
	// MaxBudgetTokens keeps the budget's milli-token count far from int64's
	// range.
	MaxBudgetTokens = 1e9
	// MaxPolicyDuration bounds every duration of a policy or breaker.
	MaxPolicyDuration = 1000 * time.Hour
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
	// Policy is the retry policy (model.Policy; its zero fields take
	// model's documented defaults). Key "policy".
	Policy model.Policy
	// Breaker, if set, gives each endpoint its own circuit breaker with
	// these settings (zero fields take model's defaults). Key "breaker";
	// default nil: no breaker.
	Breaker *model.BreakerSettings
	// Budget, if set, gives each endpoint a retry budget. Key "budget";
	// default nil: no budget.
	Budget *Budget
}

// Budget is a retry budget (model.Budget).
type Budget struct {
	// MaxTokens is the bucket's size. Key "max_tokens", (0,
	// MaxBudgetTokens]. Required.
	MaxTokens float64
	// TokenRatio is what a success puts back. Key "token_ratio",
	// [0, MaxTokens]; default 0.
	TokenRatio float64
	// Pool, if not empty, makes every endpoint whose budget names the same
	// pool share one bucket (a drill's global scope); they must agree on
	// MaxTokens and TokenRatio. Key "pool"; default "": one bucket per
	// endpoint.
	Pool string
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

var safeName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$`)

// Validate checks every field against its documented range and returns
// the problems joined (errors.Join of *FieldError), or nil.
func (c *Config) Validate() error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, &FieldError{Key: key, Msg: fmt.Sprintf(format, args...)})
	}
	if c.Owner == "" || len(c.Owner) > 200 || strings.ContainsAny(c.Owner, "\t\r\n") {
		bad("owner", "required: 1 to 200 characters without tab or newline (got %q)", clipText(c.Owner))
	}
	if c.Workers < 1 || c.Workers > MaxWorkers {
		bad("workers", "must be between 1 and %d (got %d)", MaxWorkers, c.Workers)
	}
	if c.ClaimBatch < 1 || c.ClaimBatch > MaxClaimBatch {
		bad("claim_batch", "must be between 1 and %d (got %d)", MaxClaimBatch, c.ClaimBatch)
	}
	if c.HeldLimit < max(c.ClaimBatch, 1) || c.HeldLimit > MaxHeldLimit {
		bad("held_limit", "must be between claim_batch (%d) and %d (got %d)", max(c.ClaimBatch, 1), MaxHeldLimit, c.HeldLimit)
	}
	speedOK := true
	if s := c.Clock.Speed; !(s > 0) || s > MaxSpeed {
		bad("speed", "must be greater than 0 and at most %g (got %v)", float64(MaxSpeed), s)
		speedOK = false
	}
	if c.LeaseTimeout <= 0 || c.LeaseTimeout > MaxLeaseTimeout {
		bad("lease_timeout", "must be greater than 0 and at most %v (got %v)", MaxLeaseTimeout, c.LeaseTimeout)
	} else if speedOK && c.Clock.Wall(c.LeaseTimeout) < MinLeaseWall {
		bad("lease_timeout", "%v is %v of wall time at speed %g; a lease must last at least %v of wall time, since it is renewed every third of it",
			c.LeaseTimeout, c.Clock.Wall(c.LeaseTimeout), c.Clock.speed(), MinLeaseWall)
	}
	if c.AttemptTimeout <= 0 || c.AttemptTimeout > MaxAttemptTimeout {
		bad("attempt_timeout", "must be greater than 0 and at most %v (got %v)", MaxAttemptTimeout, c.AttemptTimeout)
	}
	if c.ClaimPoll < MinClaimPoll || c.ClaimPoll > MaxClaimPoll {
		bad("claim_poll", "must be between %v and %v (got %v)", MinClaimPoll, MaxClaimPoll, c.ClaimPoll)
	}
	if c.AlertInterval <= 0 || c.AlertInterval > MaxAlertInterval {
		bad("alert_interval", "must be greater than 0 and at most %v (got %v)", MaxAlertInterval, c.AlertInterval)
	}
	if c.AlertURL != "" {
		if _, err := LoopbackURL(c.AlertURL); err != nil {
			bad("alert_url", "%v", err)
		}
	}
	baseOK := false
	if c.PartnersURL != "" {
		if _, err := LoopbackURL(c.PartnersURL); err != nil {
			bad("partners_url", "%v", err)
		} else {
			baseOK = true
		}
	}
	if len(c.Partners) == 0 {
		bad("partners", "required: at least one partner")
	}
	endpoints := 0
	names := map[string]int{} // endpoint (or "cohort/" name) → the index that declared it
	pools := map[string]*Budget{}
	for i := range c.Partners {
		p := &c.Partners[i]
		key := "partners[" + strconv.Itoa(i) + "]"
		if !safeName.MatchString(p.Name) {
			bad(key+".name", "%q: want 1 to 100 characters of A-Z a-z 0-9 . _ -, starting with a letter or digit", clipText(p.Name))
		}
		if p.Members < 0 || p.Members > MaxEndpoints {
			bad(key+".members", "must be between 0 and %d (got %d)", MaxEndpoints, p.Members)
		} else {
			endpoints += max(p.Members, 1)
			if p.Members == 0 {
				if prev, dup := names[p.Name]; dup {
					bad(key+".name", "endpoint %q is also declared by partners[%d]", clipText(p.Name), prev)
				}
				names[p.Name] = i
			} else if prev, dup := names["cohort/"+p.Name]; dup {
				bad(key+".name", "cohort %q is also declared by partners[%d]", clipText(p.Name), prev)
			} else {
				names["cohort/"+p.Name] = i
			}
		}
		switch {
		case p.URL == "":
			bad(key+".url", "required: where attempts are sent")
		case strings.HasPrefix(p.URL, "/"):
			if c.PartnersURL == "" {
				bad(key+".url", "%q is a path, and partners_url (--partners) is not set", clipText(p.URL))
			} else if baseOK {
				if _, err := LoopbackURL(c.PartnersURL + p.URL); err != nil {
					bad(key+".url", "%v", err)
				}
			}
		default:
			if _, err := LoopbackURL(p.URL); err != nil {
				bad(key+".url", "%v", err)
			}
		}
		if p.Concurrency < 0 || p.Concurrency > MaxWorkers {
			bad(key+".concurrency", "must be between 0 (no limit) and %d (got %d)", MaxWorkers, p.Concurrency)
		}
		validatePolicy(key+".policy", &p.Policy, bad)
		if p.Breaker != nil {
			validateBreaker(key+".breaker", p.Breaker, bad)
		}
		if b := p.Budget; b != nil {
			if !(b.MaxTokens > 0) || b.MaxTokens > MaxBudgetTokens {
				bad(key+".budget.max_tokens", "must be greater than 0 and at most %g (got %v)", float64(MaxBudgetTokens), b.MaxTokens)
			}
			if !(b.TokenRatio >= 0) || b.TokenRatio > max(b.MaxTokens, 0) {
				bad(key+".budget.token_ratio", "must be between 0 and max_tokens (got %v)", b.TokenRatio)
			}
			if b.Pool != "" {
				if prev := pools[b.Pool]; prev != nil && (prev.MaxTokens != b.MaxTokens || prev.TokenRatio != b.TokenRatio) {
					bad(key+".budget.pool", "pool %q: max_tokens and token_ratio differ from an earlier partner's in the same pool", clipText(b.Pool))
				} else if prev == nil {
					pools[b.Pool] = b
				}
			}
		}
	}
	// A single endpoint may not be a cohort's member by name.
	for i := range c.Partners {
		p := &c.Partners[i]
		if p.Members != 0 {
			continue
		}
		cut := strings.LastIndexByte(p.Name, '-')
		if cut < 0 {
			continue
		}
		m, err := strconv.Atoi(p.Name[cut+1:])
		j, ok := names["cohort/"+p.Name[:cut]]
		if err == nil && ok && m >= 0 && strconv.Itoa(m) == p.Name[cut+1:] && m < c.Partners[j].Members {
			bad("partners["+strconv.Itoa(i)+"].name", "endpoint %q is also a member of partners[%d]", p.Name, j)
		}
	}
	if endpoints > MaxEndpoints {
		bad("partners", "%d endpoints; at most %d", endpoints, MaxEndpoints)
	}
	if len(errs) > maxFieldErrors {
		n := len(errs) - maxFieldErrors
		errs = append(errs[:maxFieldErrors], fmt.Errorf("… and %d more", n))
	}
	return errors.Join(errs...)
}

func validatePolicy(key string, p *model.Policy, bad func(key, format string, args ...any)) {
	if p.MaxAttempts < 0 || p.MaxAttempts > MaxAttempts {
		bad(key+".max_attempts", "must be between 0 (no limit) and %d (got %d)", MaxAttempts, p.MaxAttempts)
	}
	dur := func(k string, d time.Duration) {
		if d < 0 || d > MaxPolicyDuration {
			bad(key+"."+k, "must be between 0 and %v (got %v)", MaxPolicyDuration, d)
		}
	}
	b := &p.Backoff
	dur("base", b.Base)
	dur("cap", b.Cap)
	dur("delivery_window", p.DeliveryWindow)
	dur("retry_after_max", p.RetryAfterMax)
	if m := b.Multiplier; !(m == 0 || (m >= 1 && m <= MaxMultiplier)) {
		bad(key+".multiplier", "must be 0 (default %g) or between 1 and %d (got %v)", model.DefaultMultiplier, MaxMultiplier, m)
	}
	if int(b.Jitter) >= len(model.JitterNames()) {
		bad(key+".jitter", "unknown jitter %v (want one of %s)", b.Jitter, strings.Join(model.JitterNames(), ", "))
	}
	if r := b.JitterRatio; !(r >= 0 && r <= 1) {
		bad(key+".jitter_ratio", "must be between 0 and 1 (got %v)", r)
	}
	for s, cl := range p.Classifier.Overrides {
		if s < 100 || s > 599 {
			bad(key+".classifier", "%d is not an HTTP status (100..599)", s)
		}
		if cl > model.ClassPermanent {
			bad(key+".classifier", "status %d: unknown class %d", s, cl)
		}
	}
}

func validateBreaker(key string, b *model.BreakerSettings, bad func(key, format string, args ...any)) {
	if !b.Trip.Known() {
		bad(key+".trip", "unknown trip rule %v (want one of %s)", b.Trip, strings.Join(model.TripRuleNames(), ", "))
	}
	ints := []struct {
		k string
		v int
	}{{"threshold", b.Threshold}, {"min_calls", b.MinCalls}, {"probes", b.Probes}}
	for _, n := range ints {
		if n.v < 0 || n.v > math.MaxInt32 {
			bad(key+"."+n.k, "must be between 0 (model's default) and %d (got %d)", math.MaxInt32, n.v)
		}
	}
	for _, d := range []struct {
		k string
		v time.Duration
	}{{"window", b.Window}, {"cooldown", b.Cooldown}} {
		if d.v < 0 || d.v > MaxPolicyDuration {
			bad(key+"."+d.k, "must be between 0 (model's default) and %v (got %v)", MaxPolicyDuration, d.v)
		}
	}
	if !(b.Ratio >= 0 && b.Ratio <= 1) {
		bad(key+".ratio", "must be between 0 (model's default) and 1 (got %v)", b.Ratio)
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
