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
	files, err := expandGlobs(pos)
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return usagef("stormdrill validate: name at least one drill file (see --help)")
	}
	var bad drills.Errors
	for _, f := range files {
		if _, err := drills.Load(f, nil); err != nil {
			if es, ok := drills.AsErrors(err); ok {
				bad = append(bad, es...)
				continue
			}
			return usageError{err}
		}
		fmt.Fprintf(stdout, "%s: ok\n", f)
	}
	if len(bad) > 0 {
		return usageError{bad}
	}
	return nil
}

func cmdKeys(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("keys", "", "  stormdrill keys > keys.md", stdout)
	if _, err := parseFlags(fs, args); err != nil {
		return err
	}
	_, err := io.WriteString(stdout, drills.KeysMarkdown())
	return err
}
