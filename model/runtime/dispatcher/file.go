package dispatcher

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/stormdrill/stormdrill/model"
)

// MaxFileBytes bounds a configuration file.
const MaxFileBytes = 4 << 20

// The configuration file is JSON with these keys (see Config and Partner
// for each one's range and default). Absent keys take their defaults; a
// key given with a value out of range is an error, zero included.
// Durations are strings with a unit ("250ms", "30s"); jitter, trip rules
// and the retry_after and on_* choices are names, as in a drill.
//
//	{
//	  "workers": 20, "claim_batch": 64, "held_limit": 100000,
//	  "lease_timeout": "30s", "attempt_timeout": "10s", "claim_poll": "2ms",
//	  "partners_url": "http://127.0.0.1:8080", "alert_url": "", "alert_interval": "1s",
//	  "speed": 1, "seed": 42,
//	  "partners": [{
//	    "name": "acme", "members": 3, "url": "/p/acme/{member}", "concurrency": 4,
//	    "policy": {"max_attempts": 6, "base": "2s", "cap": "5m", "multiplier": 2,
//	      "jitter": "full", "jitter_ratio": 0.5, "delivery_window": "30m",
//	      "retry_after": "honour", "retry_after_max": "5m",
//	      "retryable_status": [409], "permanent_status": [],
//	      "on_open": "hold", "on_exhausted": "defer"},
//	    "breaker": {"trip": "consecutive", "threshold": 5, "window": "60s", "ratio": 0.5,
//	      "min_calls": 10, "cooldown": "30s", "probes": 1},
//	    "budget": {"max_tokens": 10, "token_ratio": 0.1, "pool": "global"}
//	  }]
//	}
type fileConfig struct {
	Workers        *int          `json:"workers,omitempty"`
	HeldLimit      *int          `json:"held_limit,omitempty"`
	ClaimBatch     *int          `json:"claim_batch,omitempty"`
	LeaseTimeout   *string       `json:"lease_timeout,omitempty"`
	AttemptTimeout *string       `json:"attempt_timeout,omitempty"`
	ClaimPoll      *string       `json:"claim_poll,omitempty"`
	PartnersURL    string        `json:"partners_url,omitempty"`
	AlertURL       string        `json:"alert_url,omitempty"`
	AlertInterval  *string       `json:"alert_interval,omitempty"`
	Speed          *float64      `json:"speed,omitempty"`
	Seed           uint64        `json:"seed,omitempty"`
	Partners       []filePartner `json:"partners"`
}

type filePartner struct {
	Name        string       `json:"name"`
	Members     int          `json:"members,omitempty"`
	URL         string       `json:"url"`
	Concurrency int          `json:"concurrency,omitempty"`
	Policy      *filePolicy  `json:"policy,omitempty"`
	Breaker     *fileBreaker `json:"breaker,omitempty"`
	Budget      *fileBudget  `json:"budget,omitempty"`
}

type filePolicy struct {
	MaxAttempts     int     `json:"max_attempts,omitempty"`
	Base            string  `json:"base,omitempty"`
	Cap             string  `json:"cap,omitempty"`
	Multiplier      float64 `json:"multiplier,omitempty"`
	Jitter          string  `json:"jitter,omitempty"`
	JitterRatio     float64 `json:"jitter_ratio,omitempty"`
	DeliveryWindow  string  `json:"delivery_window,omitempty"`
	RetryAfter      string  `json:"retry_after,omitempty"` // honour (default) | ignore
	RetryAfterMax   string  `json:"retry_after_max,omitempty"`
	RetryableStatus []int   `json:"retryable_status,omitempty"`
	PermanentStatus []int   `json:"permanent_status,omitempty"`
	OnOpen          string  `json:"on_open,omitempty"`      // hold (default) | dead-letter
	OnExhausted     string  `json:"on_exhausted,omitempty"` // defer (default) | dead-letter
}

type fileBreaker struct {
	Trip      string  `json:"trip"`
	Threshold int     `json:"threshold,omitempty"`
	Window    string  `json:"window,omitempty"`
	Ratio     float64 `json:"ratio,omitempty"`
	MinCalls  int     `json:"min_calls,omitempty"`
	Cooldown  string  `json:"cooldown,omitempty"`
	Probes    int     `json:"probes,omitempty"`
	// Count names the failures the breaker counts (model.BreakerCountNames);
	// empty counts every failure.
	Count []string `json:"count,omitempty"`
}

type fileBudget struct {
	MaxTokens  float64 `json:"max_tokens"`
	TokenRatio float64 `json:"token_ratio,omitempty"`
	Pool       string  `json:"pool,omitempty"`
}

// ReadFile reads and validates a configuration file, and returns the
// Config it describes with every absent key at its default. Store, Owner,
// Clock.Start, Events and Log are left for the caller, and so is the final
// Validate once they are set; every other problem is reported here, as
// "FILE: key: what is wrong" (or "FILE:LINE: …" for a JSON syntax error).
func ReadFile(path string) (Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return Config{}, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return Config{}, fmt.Errorf("%s: %w", path, err)
	}
	if len(b) > MaxFileBytes {
		return Config{}, fmt.Errorf("%s: larger than %d bytes", path, MaxFileBytes)
	}
	cfg, err := Parse(b)
	if err != nil {
		return Config{}, prefixErrors(path, err)
	}
	return cfg, nil
}

// prefixErrors puts "path: " (or "path:LINE: ") before each joined error.
func prefixErrors(path string, err error) error {
	var errs []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	} else {
		errs = []error{err}
	}
	out := make([]error, len(errs))
	for i, e := range errs {
		var le *lineError
		if errors.As(e, &le) {
			out[i] = fmt.Errorf("%s:%d: %w", path, le.line, le.err)
		} else {
			out[i] = fmt.Errorf("%s: %w", path, e)
		}
	}
	return errors.Join(out...)
}

type lineError struct {
	line int
	err  error
}

func (e *lineError) Error() string { return fmt.Sprintf("line %d: %v", e.line, e.err) }
func (e *lineError) Unwrap() error { return e.err }

// Parse decodes a configuration file's bytes strictly (unknown keys,
// trailing data and mistyped values are errors), applies the defaults and
// validates everything but Store and Owner.
func Parse(b []byte) (Config, error) {
	var fc fileConfig
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&fc); err != nil {
		return Config{}, decodeError(b, dec, err)
	}
	if dec.More() {
		return Config{}, &lineError{line: lineAt(b, dec.InputOffset()), err: errors.New("data after the configuration object")}
	}
	cfg, errs := fc.config()
	cfg.Owner = "file" // the caller's to set; any valid name checks the rest
	if err := cfg.Validate(); err != nil {
		errs = append(errs, err)
	}
	cfg.Owner = ""
	if len(errs) > 0 {
		return Config{}, flatten(errs)
	}
	return cfg, nil
}

// flatten joins errors, unpacking joined ones, sorted by key so that a
// file's problems read in a stable order.
func flatten(errs []error) error {
	var out []error
	for _, e := range errs {
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			out = append(out, j.Unwrap()...)
		} else {
			out = append(out, e)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		var a, b *FieldError
		if errors.As(out[i], &a) && errors.As(out[j], &b) {
			return a.Key < b.Key
		}
		return false
	})
	return errors.Join(out...)
}

func decodeError(b []byte, dec *json.Decoder, err error) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return &lineError{line: lineAt(b, se.Offset), err: fmt.Errorf("not valid JSON: %v", se)}
	case errors.As(err, &te):
		key := te.Field
		if key == "" {
			key = "(top level)"
		}
		want := te.Type.String()
		if te.Type.Kind() == reflect.String {
			want = "a string (durations are strings with a unit, like \"30s\")"
		}
		return &FieldError{Key: key, Msg: fmt.Sprintf("want %s, got a JSON %s", want, te.Value)}
	case errors.Is(err, io.EOF):
		return errors.New("empty file: want a JSON object")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return &lineError{line: lineAt(b, int64(len(b))), err: errors.New("not valid JSON: unexpected end of file")}
	}
	msg := err.Error()
	if k, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		k, _ = strconv.Unquote(k)
		// The decoder reports the end of the object; the key's line is
		// where it is first written as a key.
		off := dec.InputOffset()
		if m := regexp.MustCompile(regexp.QuoteMeta(strconv.Quote(k)) + `\s*:`).FindIndex(b); m != nil {
			off = int64(m[0])
		}
		return &lineError{line: lineAt(b, off), err: &FieldError{Key: clipText(k), Msg: "unknown key"}}
	}
	return &lineError{line: lineAt(b, dec.InputOffset()), err: errors.New(clipText(strings.TrimPrefix(msg, "json: ")))}
}

func lineAt(b []byte, off int64) int {
	off = min(max(off, 0), int64(len(b)))
	return 1 + bytes.Count(b[:off], []byte("\n"))
}

// config converts the file to a Config with defaults applied; choices that
// are names (jitter, trip rule, on_open, …) are checked here, numbers and
// durations by Validate.
func (fc *fileConfig) config() (Config, []error) {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, &FieldError{Key: key, Msg: fmt.Sprintf(format, args...)})
	}
	c := Defaults()
	setInt := func(dst *int, v *int) {
		if v != nil {
			*dst = *v
		}
	}
	setDur := func(dst *time.Duration, key string, v *string) {
		if v != nil {
			*dst = parseDuration(key, *v, bad)
		}
	}
	setInt(&c.Workers, fc.Workers)
	setInt(&c.HeldLimit, fc.HeldLimit)
	setInt(&c.ClaimBatch, fc.ClaimBatch)
	setDur(&c.LeaseTimeout, "lease_timeout", fc.LeaseTimeout)
	setDur(&c.AttemptTimeout, "attempt_timeout", fc.AttemptTimeout)
	setDur(&c.ClaimPoll, "claim_poll", fc.ClaimPoll)
	setDur(&c.AlertInterval, "alert_interval", fc.AlertInterval)
	if fc.Speed != nil {
		c.Clock.Speed = *fc.Speed
		if *fc.Speed == 0 {
			bad("speed", "must be greater than 0 (got 0)")
			c.Clock.Speed = 1
		}
	}
	c.PartnersURL, c.AlertURL, c.Seed = fc.PartnersURL, fc.AlertURL, fc.Seed
	for i, fp := range fc.Partners {
		key := "partners[" + strconv.Itoa(i) + "]"
		p := Partner{Name: fp.Name, Members: fp.Members, URL: fp.URL, Concurrency: fp.Concurrency}
		if fp.Policy != nil {
			p.Policy = fp.Policy.policy(key+".policy", bad)
		}
		if fb := fp.Breaker; fb != nil {
			rule, err := model.ParseTripRule(fb.Trip)
			if err != nil {
				bad(key+".breaker.trip", "%v", clipErr(err))
			}
			count, err := model.ParseBreakerCount(fb.Count)
			if err != nil {
				bad(key+".breaker.count", "%v", clipErr(err))
			}
			p.Breaker = &model.BreakerSettings{Trip: rule, Threshold: fb.Threshold,
				Window: parseDuration(key+".breaker.window", fb.Window, bad), Ratio: fb.Ratio, MinCalls: fb.MinCalls,
				Cooldown: parseDuration(key+".breaker.cooldown", fb.Cooldown, bad), Probes: fb.Probes, Count: count}
		}
		if fb := fp.Budget; fb != nil {
			p.Budget = &Budget{MaxTokens: fb.MaxTokens, TokenRatio: fb.TokenRatio, Pool: fb.Pool}
		}
		c.Partners = append(c.Partners, p)
	}
	return c, errs
}

func (fp *filePolicy) policy(key string, bad func(key, format string, args ...any)) model.Policy {
	j := model.JitterNone
	if fp.Jitter != "" {
		var err error
		if j, err = model.ParseJitter(fp.Jitter); err != nil {
			bad(key+".jitter", "%v", clipErr(err))
		}
	}
	p := model.Policy{
		MaxAttempts: fp.MaxAttempts,
		Backoff: model.Backoff{Base: parseDuration(key+".base", fp.Base, bad), Cap: parseDuration(key+".cap", fp.Cap, bad),
			Multiplier: fp.Multiplier, Jitter: j, JitterRatio: fp.JitterRatio},
		DeliveryWindow: parseDuration(key+".delivery_window", fp.DeliveryWindow, bad),
		RetryAfterMax:  parseDuration(key+".retry_after_max", fp.RetryAfterMax, bad),
	}
	choice := func(k, v string, names ...string) string {
		if v == "" {
			return names[0]
		}
		for _, n := range names {
			if v == n {
				return v
			}
		}
		bad(key+"."+k, "%q: want %s", clipText(v), strings.Join(names, " or "))
		return names[0]
	}
	p.IgnoreRetryAfter = choice("retry_after", fp.RetryAfter, "honour", "ignore") == "ignore"
	p.OnOpenDeadLetter = choice("on_open", fp.OnOpen, "hold", "dead-letter") == "dead-letter"
	p.OnExhaustedDeadLetter = choice("on_exhausted", fp.OnExhausted, "defer", "dead-letter") == "dead-letter"
	if n := len(fp.RetryableStatus) + len(fp.PermanentStatus); n > 0 {
		if n > 1000 {
			bad(key, "%d status overrides; at most 1000", n)
			return p
		}
		p.Classifier.Overrides = map[int]model.Class{}
		for i, s := range fp.RetryableStatus {
			if s < 100 || s > 599 {
				bad(key+".retryable_status["+strconv.Itoa(i)+"]", "%d is not an HTTP status (100..599)", s)
			}
			p.Classifier.Overrides[s] = model.ClassRetryable
		}
		for i, s := range fp.PermanentStatus {
			k := key + ".permanent_status[" + strconv.Itoa(i) + "]"
			if s < 100 || s > 599 {
				bad(k, "%d is not an HTTP status (100..599)", s)
			} else if p.Classifier.Overrides[s] == model.ClassRetryable {
				bad(k, "%d is also in retryable_status", s)
			}
			p.Classifier.Overrides[s] = model.ClassPermanent
		}
	}
	return p
}

// parseDuration reads a duration with its unit; "" is 0 (absent).
func parseDuration(key, s string, bad func(key, format string, args ...any)) time.Duration {
	if s == "" {
		return 0
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		bad(key, "%q is not a duration like \"250ms\" or \"30s\"", clipText(s))
		return 0
	}
	return d
}

// fmtDuration writes a duration for the file; 0 is omitted.
func fmtDuration(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return d.String()
}

func clipErr(err error) string { return clipText(err.Error()) }

// WriteFile writes cfg as a configuration file that ReadFile reads back
// to the same Config (Store, Owner, Clock.Start, Events and Log are not
// written).
func WriteFile(path string, cfg Config) error {
	b, err := Marshal(cfg)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// Marshal encodes cfg in the configuration file format.
func Marshal(cfg Config) ([]byte, error) {
	ptrD := func(d time.Duration) *string { v := d.String(); return &v }
	fc := fileConfig{
		Workers: &cfg.Workers, HeldLimit: &cfg.HeldLimit, ClaimBatch: &cfg.ClaimBatch,
		LeaseTimeout: ptrD(cfg.LeaseTimeout), AttemptTimeout: ptrD(cfg.AttemptTimeout), ClaimPoll: ptrD(cfg.ClaimPoll),
		PartnersURL: cfg.PartnersURL, AlertURL: cfg.AlertURL, AlertInterval: ptrD(cfg.AlertInterval),
		Speed: &cfg.Clock.Speed, Seed: cfg.Seed,
	}
	if cfg.Clock.Speed == 0 {
		fc.Speed = nil
	}
	for _, p := range cfg.Partners {
		fp := filePartner{Name: p.Name, Members: p.Members, URL: p.URL, Concurrency: p.Concurrency}
		pol := &p.Policy
		if int(pol.Backoff.Jitter) >= len(model.JitterNames()) {
			return nil, fmt.Errorf("partner %s: unknown jitter %v", p.Name, pol.Backoff.Jitter)
		}
		fpol := &filePolicy{MaxAttempts: pol.MaxAttempts, Base: fmtDuration(pol.Backoff.Base), Cap: fmtDuration(pol.Backoff.Cap),
			Multiplier: pol.Backoff.Multiplier, Jitter: pol.Backoff.Jitter.String(), JitterRatio: pol.Backoff.JitterRatio,
			DeliveryWindow: fmtDuration(pol.DeliveryWindow), RetryAfterMax: fmtDuration(pol.RetryAfterMax),
			RetryAfter: "honour", OnOpen: "hold", OnExhausted: "defer"}
		if pol.IgnoreRetryAfter {
			fpol.RetryAfter = "ignore"
		}
		if pol.OnOpenDeadLetter {
			fpol.OnOpen = "dead-letter"
		}
		if pol.OnExhaustedDeadLetter {
			fpol.OnExhausted = "dead-letter"
		}
		statuses := make([]int, 0, len(pol.Classifier.Overrides))
		for s := range pol.Classifier.Overrides {
			statuses = append(statuses, s)
		}
		sort.Ints(statuses)
		for _, s := range statuses {
			switch pol.Classifier.Overrides[s] {
			case model.ClassRetryable:
				fpol.RetryableStatus = append(fpol.RetryableStatus, s)
			case model.ClassPermanent:
				fpol.PermanentStatus = append(fpol.PermanentStatus, s)
			default:
				return nil, fmt.Errorf("partner %s: status %d: only retryable and permanent overrides can be written", p.Name, s)
			}
		}
		fp.Policy = fpol
		if b := p.Breaker; b != nil {
			if !b.Trip.Known() {
				return nil, fmt.Errorf("partner %s: unknown trip rule %v", p.Name, b.Trip)
			}
			fp.Breaker = &fileBreaker{Trip: b.Trip.String(), Threshold: b.Threshold, Window: fmtDuration(b.Window), Ratio: b.Ratio,
				MinCalls: b.MinCalls, Cooldown: fmtDuration(b.Cooldown), Probes: b.Probes, Count: b.Count.Names()}
		}
		if b := p.Budget; b != nil {
			fp.Budget = &fileBudget{MaxTokens: b.MaxTokens, TokenRatio: b.TokenRatio, Pool: b.Pool}
		}
		fc.Partners = append(fc.Partners, fp)
	}
	b, err := json.MarshalIndent(fc, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}
