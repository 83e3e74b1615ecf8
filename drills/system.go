package drills

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/textproto"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/template"
	"time"

	"github.com/stormdrill/stormdrill/model/runtime/dispatcher"
)

// System describes the system under drill in `mode = "external"`: how to
// build and start it (both optional), how events enter it, how its dead
// letters are seen and which headers identify an attempt.
type System struct {
	// Dir is the working directory of build, start and the commands,
	// relative to the drill file's directory; default that directory.
	Dir   string   `toml:"dir"`
	Build []string `toml:"build"` // run once before the drill, outside its clock
	Start []string `toml:"start"` // the system as a child process; empty: already running
	// Readiness of a started system: a URL answering 2xx, or a line of its
	// output containing ReadyLog. Neither: ready once started.
	ReadyURL     string   `toml:"ready_url"`
	ReadyLog     string   `toml:"ready_log"`
	ReadyTimeout Duration `toml:"ready_timeout"`

	Ingest        string   `toml:"ingest"`         // http | command | jsonl
	IngestURL     string   `toml:"ingest_url"`     // http: default ${STORMDRILL_INGEST_URL}
	IngestHeaders []string `toml:"ingest_headers"` // http: "Name: value"
	BodyTemplate  string   `toml:"body_template"`  // http, command, jsonl: text/template of one event
	IngestCommand []string `toml:"ingest_command"` // command: the event on its stdin
	JSONLPath     string   `toml:"jsonl_path"`     // jsonl: a file to append to; "" the started system's stdin

	DeadLetters       string   `toml:"dead_letters"`        // endpoint | command | none
	DeadLetterCommand []string `toml:"dead_letter_command"` // command: prints {"id","reason","attempts"} lines

	KeyHeader     string `toml:"key_header"`     // default Idempotency-Key
	AttemptHeader string `toml:"attempt_header"` // "" none
}

// Defaults of the system table.
const (
	DefaultReadyTimeout = 2 * time.Minute
	DefaultKeyHeader    = "Idempotency-Key"
	limSystemArgs       = 256
	limSystemTemplate   = 64 << 10
)

// IsExternal reports whether the drill drives somebody else's system.
func (d *Drill) IsExternal() bool { return d.Mode == "external" }

func systemDefaults(s *System, absent func(key string, zero bool) bool) {
	if !s.ReadyTimeout.Set {
		s.ReadyTimeout = Duration{D: DefaultReadyTimeout}
	}
	if s.Ingest == "" {
		s.Ingest = "http"
	}
	if s.IngestURL == "" && s.Ingest == "http" {
		s.IngestURL = "${STORMDRILL_INGEST_URL}"
	}
	if s.DeadLetters == "" {
		s.DeadLetters = "endpoint"
	}
	if absent("system.key_header", s.KeyHeader == "") {
		s.KeyHeader = DefaultKeyHeader // written as "", it is refused
	}
}

// system checks the system table, [system], of an external drill; in any
// other mode its keys are refused.
func (c *checker) system() {
	d, s := c.d, &c.d.System
	if !d.IsExternal() {
		for _, k := range []string{"system", "system.start", "system.ingest", "system.build"} {
			if c.present(k) {
				c.bad(k, "applies only to mode = \"external\"")
				return
			}
		}
		return
	}
	c.systemCommands()
	c.systemReadiness()
	if len(s.Start) == 0 {
		c.unstartedAddresses()
	}
	if c.present("system.key_header") && s.KeyHeader == "" {
		c.bad("system.key_header", "empty: name the header that carries each attempt's idempotency key, or leave the key out for %s", DefaultKeyHeader)
	}
	c.systemIngest()
	c.systemDeadLetters()
	for _, h := range []struct{ key, v string }{{"system.key_header", s.KeyHeader}, {"system.attempt_header", s.AttemptHeader}} {
		if h.v != "" && (!validHeaderName(h.v) || len(h.v) > 100) {
			c.bad(h.key, "%q is not an HTTP header name", clip(h.v))
		}
	}
	c.systemWallTime()
}

// present reports whether key was written in the file (false when that is
// unknown).
func (c *checker) present(key string) bool { return c.has != nil && c.has(key) }

// systemCommands checks the commands the harness runs: build, start and
// the ingest and dead-letter commands.
func (c *checker) systemCommands() {
	s := &c.d.System
	argv := func(key string, v []string) {
		if len(v) > limSystemArgs {
			c.bad(key, "at most %d arguments (got %d)", limSystemArgs, len(v))
		}
		if len(v) > 0 && strings.TrimSpace(v[0]) == "" {
			c.bad(key, "the first element is the program to run; it is empty")
		}
	}
	argv("system.build", s.Build)
	argv("system.start", s.Start)
	argv("system.ingest_command", s.IngestCommand)
	argv("system.dead_letter_command", s.DeadLetterCommand)
	if len(s.Build) > 0 && len(s.Start) == 0 {
		c.bad("system.build", "needs system.start: the harness builds only what it starts")
	}
}

// systemReadiness checks how the harness tells a started system is ready.
func (c *checker) systemReadiness() {
	s := &c.d.System
	if s.ReadyTimeout.D <= 0 {
		c.bad("system.ready_timeout", "must be greater than 0 (got %v)", s.ReadyTimeout.D)
	}
	if (s.ReadyURL != "" || s.ReadyLog != "") && len(s.Start) == 0 {
		c.bad("system.ready_url", "readiness applies to a started system: set system.start")
	}
	if s.ReadyURL != "" && s.ReadyLog != "" {
		c.bad("system.ready_log", "give one readiness check: system.ready_url or system.ready_log, not both")
	}
	if s.ReadyURL != "" {
		if u, err := url.Parse(placeholders(s.ReadyURL)); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			c.bad("system.ready_url", "%q is not an http:// or https:// URL the harness can poll", clip(s.ReadyURL))
		}
	}
}

// unstartedAddresses refuses the variables the harness sets only for a
// system it starts: without one, it picks no ingest address.
func (c *checker) unstartedAddresses() {
	s := &c.d.System
	for _, u := range []struct{ key, v string }{{"system.ingest_url", s.IngestURL}, {"system.ready_url", s.ReadyURL}} {
		if u.key == "system.ingest_url" && s.Ingest != "http" {
			continue
		}
		if v := startedOnly(u.v); v != "" {
			key := u.key
			if c.present("system.start") {
				key = "system.start"
			}
			c.bad(key, "no system is started, so the harness sets no ${%s}, which %s uses (by default, if not written): give system.ingest_url, where the running system takes events, or system.start", v, u.key)
		}
	}
}

// systemIngest checks how events reach the system: the ingest kind and
// what it requires, the ingest headers and the body template.
func (c *checker) systemIngest() {
	s := &c.d.System
	if c.kind("system.ingest", s.Ingest, "http", "command", "jsonl") {
		switch s.Ingest {
		case "http":
			if s.IngestURL == "" {
				c.bad("system.ingest_url", "required with ingest = \"http\"")
			}
		case "command":
			if len(s.IngestCommand) == 0 {
				c.bad("system.ingest_command", "required with ingest = \"command\": the program that takes one event on its stdin")
			}
		case "jsonl":
			if s.JSONLPath == "" && len(s.Start) == 0 {
				c.bad("system.jsonl_path", "required with ingest = \"jsonl\" unless the harness starts the system (then events go to its stdin)")
			}
		}
	}
	for i, h := range s.IngestHeaders {
		key := "system.ingest_headers[" + itoa(i) + "]"
		name, val, ok := strings.Cut(h, ":")
		switch {
		case !ok || strings.TrimSpace(name) == "" || textproto.CanonicalMIMEHeaderKey(strings.TrimSpace(name)) == "":
			c.bad(key, "%q is not \"Name: value\"", clip(h))
		case !validHeaderName(strings.TrimSpace(name)):
			c.bad(key, "%q is not an HTTP header name", clip(strings.TrimSpace(name)))
		case !validHeaderValue(strings.TrimSpace(val)):
			c.bad(key, "the value of %s holds a control character (CR, LF or NUL): no HTTP request could carry it", clip(strings.TrimSpace(name)))
		}
	}
	if len(s.BodyTemplate) > limSystemTemplate {
		c.bad("system.body_template", "at most %d bytes", limSystemTemplate)
	} else if s.BodyTemplate != "" {
		if _, err := RenderSample(s.BodyTemplate); err != nil {
			c.bad("system.body_template", "%v", err)
		}
	}
}

// systemDeadLetters checks where dead letters are read from, and refuses a
// gate on lost when they are not read at all.
func (c *checker) systemDeadLetters() {
	s := &c.d.System
	if c.kind("system.dead_letters", s.DeadLetters, "endpoint", "command", "none") && s.DeadLetters == "command" && len(s.DeadLetterCommand) == 0 {
		c.bad("system.dead_letter_command", "required with dead_letters = \"command\"")
	}
	if s.DeadLetters != "none" {
		return
	}
	for i, g := range c.d.Gates {
		if strings.HasPrefix(strings.TrimSpace(g), "lost") {
			c.bad("gates["+itoa(i)+"]", "lost is not measured without a dead-letter source (system.dead_letters = \"none\"): unresolved deliveries may be pending or lost")
		}
	}
}

// systemWallTime checks what an external system, running in wall time in
// a process of its own, cannot do: another speed, or faults on a process
// the harness did not start.
func (c *checker) systemWallTime() {
	d := c.d
	if d.Speed != 1 {
		c.bad("speed", "an external system runs in wall time: speed must be 1 (shorten the drill instead)")
	}
	for i, f := range d.Faults {
		if len(d.System.Start) == 0 {
			c.bad("faults["+itoa(i)+"].kind", "%s needs the system's process: set system.start so the harness starts (and can kill) it", f.Kind)
		}
	}
}

// SystemDir is the working directory of the system's commands: system.dir
// as written when absolute, else relative to drillDir, the drill file's
// directory.
func (d *Drill) SystemDir(drillDir string) string {
	if filepath.IsAbs(d.System.Dir) {
		return filepath.Clean(d.System.Dir)
	}
	return filepath.Join(drillDir, d.System.Dir)
}

// systemPathChecks checks what an external drill names on this machine,
// with drillDir the drill file's directory: system.dir must be a
// directory, and a jsonl_path without variables must not be one.
func systemPathChecks(d *Drill, drillDir string) []problem {
	if !d.IsExternal() {
		return nil
	}
	var ps []problem
	dir := d.SystemDir(drillDir)
	if fi, err := os.Stat(dir); err != nil {
		return append(ps, problem{"system.dir", fmt.Sprintf("%q: no such directory (a relative dir is taken from the drill file's directory)", clip(d.System.Dir))})
	} else if !fi.IsDir() {
		return append(ps, problem{"system.dir", fmt.Sprintf("%q is not a directory", clip(d.System.Dir))})
	}
	if p := d.System.JSONLPath; p != "" && !strings.Contains(p, "${") {
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		if fi, err := os.Stat(p); err == nil && fi.IsDir() {
			ps = append(ps, problem{"system.jsonl_path", fmt.Sprintf("%q is a directory: name the file events are appended to", clip(d.System.JSONLPath))})
		}
	}
	return ps
}

// validHeaderName reports whether s is an HTTP header name (a token).
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

// validHeaderValue reports whether s may be sent as a header's value: no
// control character but tab (a CR or LF would end the header).
func validHeaderValue(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 0x20 && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}

// startedOnly returns the first variable in v that the harness sets only
// for a system it starts, or "".
func startedOnly(v string) string {
	for _, name := range []string{"STORMDRILL_INGEST_URL", "STORMDRILL_INGEST_ADDR"} {
		if strings.Contains(v, "${"+name+"}") {
			return name
		}
	}
	return ""
}

// placeholders stands a loopback address in for every ${VAR}, so that a
// URL the harness expands later can be parsed now.
func placeholders(v string) string {
	var b strings.Builder
	for {
		i := strings.Index(v, "${")
		j := strings.IndexByte(v[max(i, 0):], '}')
		if i < 0 || j < 0 {
			b.WriteString(v)
			return b.String()
		}
		b.WriteString(v[:i])
		b.WriteString("127.0.0.1:1")
		v = v[i+j+1:]
	}
}

// MaxRenderedBody bounds what a body template may render for one event.
const MaxRenderedBody = 1 << 20

// SampleEvent is the event a body template is tried on at validation: what
// the harness sends, with one delivery and a small payload.
func SampleEvent() *dispatcher.IngestEvent {
	return &dispatcher.IngestEvent{
		EventID: "evt-000001",
		Created: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		Deliveries: []dispatcher.IngestDelivery{
			{ID: "evt-000001:acme-0", URL: "http://127.0.0.1:8080/p/acme/0"},
		},
		Payload: json.RawMessage(`{"n":1}`),
	}
}

// RenderBody parses a body template and renders ev with it, at most
// MaxRenderedBody bytes: the one rendering validation and the harness use.
func RenderBody(tmpl *template.Template, ev *dispatcher.IngestEvent) ([]byte, error) {
	var b boundedBuffer
	if err := tmpl.Execute(&b, ev); err != nil {
		return nil, err
	}
	return b.buf.Bytes(), nil
}

// ParseBodyTemplate parses a body template with TemplateFuncs.
func ParseBodyTemplate(text string) (*template.Template, error) {
	return template.New("body").Funcs(TemplateFuncs).Option("missingkey=error").Parse(text)
}

// RenderSample parses text and renders SampleEvent with it: a template
// that parses but cannot execute is refused before the drill runs.
func RenderSample(text string) ([]byte, error) {
	t, err := ParseBodyTemplate(text)
	if err != nil {
		return nil, err
	}
	out, err := RenderBody(t, SampleEvent())
	if err != nil {
		return nil, fmt.Errorf("cannot render an event: %v", err)
	}
	return out, nil
}

type boundedBuffer struct{ buf bytes.Buffer }

func (b *boundedBuffer) Write(p []byte) (int, error) {
	if b.buf.Len()+len(p) > MaxRenderedBody {
		return 0, fmt.Errorf("renders more than %d bytes", MaxRenderedBody)
	}
	return b.buf.Write(p)
}

// TemplateFuncs are the functions a body template may call: json renders a
// value as JSON.
var TemplateFuncs = template.FuncMap{"json": templateJSON}

func templateJSON(v any) (string, error) {
	b, err := json.Marshal(v)
	return string(b), err
}

func itoa(i int) string { return strconv.Itoa(i) }
