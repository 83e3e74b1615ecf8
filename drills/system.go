package drills

import (
	"encoding/json"
	"net/textproto"
	"strconv"
	"strings"
	"text/template"
	"time"
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

func systemDefaults(s *System) {
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
	if s.KeyHeader == "" {
		s.KeyHeader = DefaultKeyHeader
	}
}

// validateSystem checks the system table; has reports keys in the file.
func validateSystem(d *Drill, has func(string) bool, bad func(key, format string, args ...any), kind func(key, v string, kinds ...string) bool) {
	s := &d.System
	present := func(k string) bool { return has != nil && has(k) }
	if !d.IsExternal() {
		for _, k := range []string{"system", "system.start", "system.ingest", "system.build"} {
			if present(k) {
				bad(k, "applies only to mode = \"external\"")
				return
			}
		}
		return
	}
	argv := func(key string, v []string) {
		if len(v) > limSystemArgs {
			bad(key, "at most %d arguments (got %d)", limSystemArgs, len(v))
		}
		if len(v) > 0 && strings.TrimSpace(v[0]) == "" {
			bad(key, "the first element is the program to run; it is empty")
		}
	}
	argv("system.build", s.Build)
	argv("system.start", s.Start)
	argv("system.ingest_command", s.IngestCommand)
	argv("system.dead_letter_command", s.DeadLetterCommand)
	if len(s.Build) > 0 && len(s.Start) == 0 {
		bad("system.build", "needs system.start: the harness builds only what it starts")
	}
	if s.ReadyTimeout.D <= 0 {
		bad("system.ready_timeout", "must be greater than 0 (got %v)", s.ReadyTimeout.D)
	}
	if (s.ReadyURL != "" || s.ReadyLog != "") && len(s.Start) == 0 {
		bad("system.ready_url", "readiness applies to a started system: set system.start")
	}
	if kind("system.ingest", s.Ingest, "http", "command", "jsonl") {
		switch s.Ingest {
		case "http":
			if s.IngestURL == "" {
				bad("system.ingest_url", "required with ingest = \"http\"")
			}
		case "command":
			if len(s.IngestCommand) == 0 {
				bad("system.ingest_command", "required with ingest = \"command\": the program that takes one event on its stdin")
			}
		case "jsonl":
			if s.JSONLPath == "" && len(s.Start) == 0 {
				bad("system.jsonl_path", "required with ingest = \"jsonl\" unless the harness starts the system (then events go to its stdin)")
			}
		}
	}
	for i, h := range s.IngestHeaders {
		name, _, ok := strings.Cut(h, ":")
		if !ok || strings.TrimSpace(name) == "" || textproto.CanonicalMIMEHeaderKey(strings.TrimSpace(name)) == "" {
			bad("system.ingest_headers", "entry %d %q is not \"Name: value\"", i, clip(h))
		}
	}
	if len(s.BodyTemplate) > limSystemTemplate {
		bad("system.body_template", "at most %d bytes", limSystemTemplate)
	} else if s.BodyTemplate != "" {
		if _, err := template.New("body").Funcs(TemplateFuncs).Parse(s.BodyTemplate); err != nil {
			bad("system.body_template", "%v", err)
		}
	}
	if kind("system.dead_letters", s.DeadLetters, "endpoint", "command", "none") && s.DeadLetters == "command" && len(s.DeadLetterCommand) == 0 {
		bad("system.dead_letter_command", "required with dead_letters = \"command\"")
	}
	if s.DeadLetters == "none" {
		for i, g := range d.Gates {
			if strings.HasPrefix(strings.TrimSpace(g), "lost") {
				bad("gates["+itoa(i)+"]", "lost is not measured without a dead-letter source (system.dead_letters = \"none\"): unresolved deliveries may be pending or lost")
			}
		}
	}
	for _, h := range []struct{ key, v string }{{"system.key_header", s.KeyHeader}, {"system.attempt_header", s.AttemptHeader}} {
		if h.v != "" && (strings.ContainsAny(h.v, " :\t\r\n") || len(h.v) > 100) {
			bad(h.key, "%q is not an HTTP header name", clip(h.v))
		}
	}
	if d.Speed != 1 {
		bad("speed", "an external system runs in wall time: speed must be 1 (shorten the drill instead)")
	}
	for i, f := range d.Faults {
		if len(s.Start) == 0 {
			bad("faults["+itoa(i)+"].kind", "%s needs the system's process: set system.start so the harness starts (and can kill) it", f.Kind)
		}
	}
}

// TemplateFuncs are the functions a body template may call: json renders a
// value as JSON.
var TemplateFuncs = template.FuncMap{"json": templateJSON}

func templateJSON(v any) (string, error) {
	b, err := json.Marshal(v)
	return string(b), err
}

func itoa(i int) string { return strconv.Itoa(i) }
