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
	"sync"
	"time"

	"github.com/stormdrill/stormdrill/model"
)

// MaxFileBytes bounds a configuration file.
const MaxFileBytes = 4 << 20

// The configuration file is JSON with these keys (see Config and Partner
// for each one's range and default). Absent keys take their defaults; a
// key given with a value out of range is an error, zero included.
// Durations are strings with a unit ("250ms", "30s"). A partner's "policy"
// is a drill's [policy] table, key for key (model.PolicySettings): its
// "retry", "breaker" and "budget" take the same keys, defaults and ranges,
// checked by the same validation.
//
//	{
//	  "workers": 20, "claim_batch": 64, "held_limit": 100000,
//	  "lease_timeout": "30s", "attempt_timeout": "10s", "claim_poll": "2ms",
//	  "partners_url": "http://127.0.0.1:8080", "alert_url": "", "alert_interval": "1s",
//	  "speed": 1, "seed": 42,
//	  "partners": [{
//	    "name": "acme", "members": 3, "url": "/p/acme/{member}", "concurrency": 4,
//	    "policy": {
//	      "retry": {"max_attempts": 6, "base": "2s", "cap": "5m", "multiplier": 2,
//	        "jitter": "full", "jitter_ratio": 0.5, "delivery_window": "30m",
//	        "retry_after": "honour", "retry_after_max": "5m",
//	        "retryable_status": [409], "permanent_status": []},
//	      "breaker": {"trip": "consecutive", "threshold": 5, "window": "60s", "ratio": 0.5,
//	        "min_calls": 10, "cooldown": "30s", "probes": 1, "on_open": "hold"},
//	      "budget": {"scope": "global", "max_tokens": 10, "token_ratio": 0.1, "on_exhausted": "defer"}
//	    }
//	  }]
//	}
type fileConfig struct {
	Workers        *int            `json:"workers,omitempty"`
	HeldLimit      *int            `json:"held_limit,omitempty"`
	ClaimBatch     *int            `json:"claim_batch,omitempty"`
	LeaseTimeout   *model.Duration `json:"lease_timeout,omitempty"`
	AttemptTimeout *model.Duration `json:"attempt_timeout,omitempty"`
	ClaimPoll      *model.Duration `json:"claim_poll,omitempty"`
	PartnersURL    string          `json:"partners_url,omitempty"`
	AlertURL       string          `json:"alert_url,omitempty"`
	AlertInterval  *model.Duration `json:"alert_interval,omitempty"`
	Speed          *float64        `json:"speed,omitempty"`
	Seed           uint64          `json:"seed,omitempty"`
	Partners       []filePartner   `json:"partners"`
}

type filePartner struct {
	Name        string               `json:"name"`
	Members     int                  `json:"members,omitempty"`
	URL         string               `json:"url"`
	Concurrency int                  `json:"concurrency,omitempty"`
	Policy      model.PolicySettings `json:"policy"`
}

// movedKeys are the keys of the file's earlier layout, where a partner's
// retry settings sat directly under "policy" and its breaker and budget
// beside it: an old file is refused, naming where each key went.
var movedKeys = map[string]string{
	"breaker": "policy.breaker", "budget": "policy.budget",
	"on_open": "policy.breaker.on_open", "on_exhausted": "policy.budget.on_exhausted",
	"pool": `policy.budget.scope ("global" shares one bucket)`,
}

func init() {
	for _, k := range []string{"max_attempts", "base", "cap", "multiplier", "jitter", "jitter_ratio",
		"delivery_window", "retry_after", "retry_after_max", "retryable_status", "permanent_status"} {
		movedKeys[k] = "policy.retry." + k
	}
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
	fc := fileConfig{Partners: defaultPartners(b)}
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

// defaultPartners returns as many partner entries as the file has, each
// policy at model.DefaultPolicySettings. encoding/json decodes an array
// into the slice's existing elements, leaving absent keys alone, so the
// strict decode over them leaves every absent policy key at its default.
func defaultPartners(b []byte) []filePartner {
	var head struct{ Partners []json.RawMessage }
	if json.Unmarshal(b, &head) != nil || len(head.Partners) > MaxEndpoints {
		return nil // the strict decode reports what is wrong
	}
	ps := make([]filePartner, len(head.Partners))
	for i := range ps {
		ps[i].Policy = model.DefaultPolicySettings()
	}
	return ps
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
		want, typ := te.Type.String(), te.Type
		for typ.Kind() == reflect.Pointer {
			typ = typ.Elem()
		}
		if typ.Kind() == reflect.String || typ == reflect.TypeFor[model.Duration]() {
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
		msg := "unknown key"
		if to, ok := movedKeys[k]; ok {
			msg += fmt.Sprintf("; a partner's policy is a drill's [policy] now: write it as %s", to)
		}
		return &lineError{line: lineAt(b, off), err: &FieldError{Key: clipText(k), Msg: msg}}
	}
	if strings.HasPrefix(msg, "json: ") {
		return &lineError{line: lineAt(b, dec.InputOffset()), err: errors.New(clipText(strings.TrimPrefix(msg, "json: ")))}
	}
	// A value's own error (a duration without its unit): name its key.
	return &lineError{line: lineAt(b, dec.InputOffset()), err: &FieldError{Key: keyBefore(b, dec.InputOffset()), Msg: clipText(msg)}}
}

// keyBefore is the last object key written before off: the key of the
// value a decoder stopped at.
func keyBefore(b []byte, off int64) string {
	off = min(max(off, 0), int64(len(b)))
	m := keyPattern().FindAllSubmatch(b[:off], -1)
	if len(m) == 0 {
		return "(top level)"
	}
	return clipText(string(m[len(m)-1][1]))
}

var keyPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`"((?:[^"\\]|\\.)*)"\s*:`) })

func lineAt(b []byte, off int64) int {
	off = min(max(off, 0), int64(len(b)))
	return 1 + bytes.Count(b[:off], []byte("\n"))
}

// config converts the file to a Config with defaults applied; Validate
// checks the values.
func (fc *fileConfig) config() (Config, []error) {
	var errs []error
	c := Defaults()
	setInt := func(dst *int, v *int) {
		if v != nil {
			*dst = *v
		}
	}
	setDur := func(dst *time.Duration, v *model.Duration) {
		if v != nil {
			*dst = v.D
		}
	}
	setInt(&c.Workers, fc.Workers)
	setInt(&c.HeldLimit, fc.HeldLimit)
	setInt(&c.ClaimBatch, fc.ClaimBatch)
	setDur(&c.LeaseTimeout, fc.LeaseTimeout)
	setDur(&c.AttemptTimeout, fc.AttemptTimeout)
	setDur(&c.ClaimPoll, fc.ClaimPoll)
	setDur(&c.AlertInterval, fc.AlertInterval)
	if fc.Speed != nil {
		c.Clock.Speed = *fc.Speed
		if *fc.Speed == 0 {
			errs = append(errs, &FieldError{Key: "speed", Msg: "must be greater than 0 (got 0)"})
			c.Clock.Speed = 1
		}
	}
	c.PartnersURL, c.AlertURL, c.Seed = fc.PartnersURL, fc.AlertURL, fc.Seed
	for _, fp := range fc.Partners {
		fp.Policy.FillDerived()
		c.Partners = append(c.Partners, Partner{Name: fp.Name, Members: fp.Members, URL: fp.URL, Concurrency: fp.Concurrency, Policy: fp.Policy})
	}
	return c, errs
}

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
	ptrD := func(d time.Duration) *model.Duration { return &model.Duration{D: d, Set: true} }
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
		fc.Partners = append(fc.Partners, filePartner{Name: p.Name, Members: p.Members, URL: p.URL, Concurrency: p.Concurrency, Policy: p.Policy})
	}
	b, err := json.MarshalIndent(fc, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}
