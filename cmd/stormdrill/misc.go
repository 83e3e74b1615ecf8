package main

import (
	"fmt"
	"io"

	"github.com/stormdrill/stormdrill/drills"
)

func cmdValidate(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("validate", "DRILL.toml...", "  stormdrill validate drills/*.toml", stdout)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	files, err := drillFiles("validate", pos)
	if err != nil {
		return err
	}
	loaded, err := loadDrills(files)
	for i, d := range loaded {
		if d != nil {
			fmt.Fprintf(stdout, "%s: ok\n", files[i])
		}
	}
	return err
}

// loadDrills loads every file in order. It collects the drill errors of all
// of them, so that one invocation reports every bad drill rather than only
// the first; a file that cannot be loaded for another reason stops it at
// once. loaded[i] is files[i]'s drill, nil where that drill was refused.
// Every error is a usage error (exit status 2).
func loadDrills(files []string) (loaded []*drills.Drill, err error) {
	loaded = make([]*drills.Drill, len(files))
	var bad drills.Errors
	for i, f := range files {
		d, err := drills.Load(f, nil)
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

func cmdKeys(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("keys", "", "  stormdrill keys > keys.md", stdout)
	if _, err := parseFlags(fs, args); err != nil {
		return err
	}
	_, err := io.WriteString(stdout, drills.KeysMarkdown())
	return err
}
