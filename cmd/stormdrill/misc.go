package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/stormdrill/stormdrill/drills"
	"github.com/stormdrill/stormdrill/experiments"
)

func cmdValidate(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("validate", "DRILL.toml... [--limit KEY=N] [--json]", "  stormdrill validate drills/*.toml\n  stormdrill validate big.toml --limit deliveries=200000000\n  stormdrill validate drills/*.toml --json | jq '.[] | select(.ok | not)'", stdout)
	var limits multiFlag
	fs.Var(&limits, "limit", limitUsage)
	asJSON := fs.Bool("json", false, "print one JSON array: per drill file, ok, its name, its warnings and its errors (file, line, key, message)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	files, err := drillFiles("validate", pos)
	if err != nil {
		return err
	}
	ov, err := limitOverrides("validate", limits, nil)
	if err != nil {
		return err
	}
	if *asJSON {
		return validateJSON(files, ov, stdout)
	}
	loaded, err := loadDrills(files, ov)
	for i, d := range loaded {
		if d != nil {
			fmt.Fprintf(stdout, "%s: ok\n", files[i])
			warnPlan(stderr, files[i], d)
		}
	}
	return err
}

// validation is one drill file's entry in validate --json.
type validation struct {
	File     string            `json:"file"`
	OK       bool              `json:"ok"`
	Name     string            `json:"name,omitempty"`
	Mode     string            `json:"mode,omitempty"`
	Warnings []string          `json:"warnings"`
	Errors   []validationError `json:"errors"`
}

type validationError struct {
	File    string `json:"file"`
	Line    int    `json:"line,omitempty"`
	Key     string `json:"key,omitempty"`
	Message string `json:"message"`
}

// validateJSON checks every file and prints one JSON array; the exit
// status is 2 when a drill was refused, as without --json.
func validateJSON(files []string, ov map[string]string, stdout io.Writer) error {
	out := make([]validation, 0, len(files))
	refused := 0
	for _, f := range files {
		v := validation{File: f, Warnings: []string{}, Errors: []validationError{}}
		d, err := drills.Load(f, ov)
		if es, ok := drills.AsErrors(err); ok {
			for _, e := range es {
				v.Errors = append(v.Errors, validationError{File: e.File, Line: e.Line, Key: e.Key, Message: e.Msg})
			}
		} else if err != nil {
			v.Errors = append(v.Errors, validationError{File: f, Message: err.Error()})
		}
		if d != nil && err == nil {
			v.OK, v.Name, v.Mode, v.Warnings = true, d.Name, d.Mode, planWarnings(d)
		}
		if !v.OK {
			refused++
		}
		out = append(out, v)
	}
	if err := writeJSON(stdout, out); err != nil {
		return err
	}
	if refused > 0 {
		return usagef("stormdrill validate: %d of %d drills refused", refused, len(files))
	}
	return nil
}

// loadDrills loads every file in order. It collects the drill errors of all
// of them, so that one invocation reports every bad drill rather than only
// the first; a file that cannot be loaded for another reason stops it at
// once. loaded[i] is files[i]'s drill, nil where that drill was refused.
// Every error is a usage error (exit status 2).
func loadDrills(files []string, overrides map[string]string) (loaded []*drills.Drill, err error) {
	loaded = make([]*drills.Drill, len(files))
	var bad drills.Errors
	for i, f := range files {
		d, err := drills.Load(f, overrides)
		if err != nil {
			if es, ok := drills.AsErrors(err); ok {
				bad = append(bad, es...)
				continue
			}
			return loaded, usageError{err}
		}
		loaded[i] = d
	}
	if len(bad) > 0 {
		return loaded, usageError{bad}
	}
	return loaded, nil
}

// limitUsage is the help of every --limit flag.
const limitUsage = "raise a ceiling on total work for this run, KEY=N (repeatable): deliveries, subscribers, cohorts, gates, array or samples (the drill's limits.KEY)"

const keysExamples = `  stormdrill keys > keys.md
  stormdrill keys retry            # only the keys whose name contains "retry"
  stormdrill keys breaker budget
  stormdrill keys --markdown > docs/drill-keys.md   # the whole published reference`

func cmdKeys(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("keys", "[FILTER...]", keysExamples, stdout)
	reference := fs.Bool("markdown", false, "print docs/drill-keys.md: the key table and the table of outage kinds, as one Markdown page")
	filters, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if *reference {
		if len(filters) > 0 {
			return usagef("stormdrill keys: --markdown prints every key; it takes no FILTER")
		}
		_, err := io.WriteString(stdout, drills.KeysReferenceMarkdown())
		return err
	}
	all := drills.KeysMarkdown()
	if len(filters) == 0 {
		_, err := io.WriteString(stdout, all)
		return err
	}
	// Keep the table's header and the rows whose key contains a filter.
	var b strings.Builder
	rows := 0
	for _, line := range strings.SplitAfter(all, "\n") {
		key, isRow := keyOfRow(line)
		if !isRow {
			b.WriteString(line)
			continue
		}
		for _, f := range filters {
			if strings.Contains(strings.ToLower(key), strings.ToLower(f)) {
				b.WriteString(line)
				rows++
				break
			}
		}
	}
	if rows == 0 {
		return usagef("stormdrill keys: no drill key contains %s", strings.Join(filters, " or "))
	}
	_, err = io.WriteString(stdout, b.String())
	return err
}

// keyOfRow returns the key of a key-table row "| `key` | …".
func keyOfRow(line string) (string, bool) {
	rest, ok := strings.CutPrefix(line, "| `")
	if !ok {
		return "", false
	}
	key, _, ok := strings.Cut(rest, "`")
	return key, ok
}

// warnPlan prints the plan's warning for an overloaded drill, and the
// live speed's warnings, on stderr; they are advice, so the exit status
// does not change.
func warnPlan(stderr io.Writer, file string, d *drills.Drill) {
	for _, w := range planWarnings(d) {
		fmt.Fprintf(stderr, "%s: warning: %s\n", file, w)
	}
}

// planWarnings are the plan's warning for an overloaded drill and the
// live speed's warnings.
func planWarnings(d *drills.Drill) []string {
	ws := []string{}
	if w := experiments.PlanWarning(d); w != "" {
		ws = append(ws, w)
	}
	return append(ws, d.SpeedWarnings()...)
}
