package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/stormdrill/stormdrill/drills"
	"github.com/stormdrill/stormdrill/experiments"
)

const drillsExamples = `  stormdrill drills
  stormdrill run fanout-outage          # a bundled drill, by name
  stormdrill init fanout-outage         # copy it out to edit
  stormdrill sweep retry-storm          # a bundled experiment, by name`

// cmdDrills lists the drills and experiments that ship in the binary.
func cmdDrills(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("drills", "", drillsExamples, stdout)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("stormdrill drills: unexpected argument %q", pos[0])
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tKIND\tDESCRIPTION")
	for _, b := range drills.BundledDrills() {
		fmt.Fprintf(tw, "%s\tdrill\t%s\n", b.Name, oneLineText(b.Description))
	}
	for _, b := range experiments.BundledExperiments() {
		fmt.Fprintf(tw, "%s\texperiment\t%s\n", b.Name, oneLineText(b.Description))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(stdout, "\nRun a drill by name (stormdrill run NAME), sweep an experiment by name (stormdrill sweep NAME);")
	fmt.Fprintln(stdout, "plan and capacity take either. A file of that name in the current directory is taken instead.")
	return nil
}

// oneLineText folds a description's line breaks, for a one-line listing.
func oneLineText(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

const initExamples = `  stormdrill init fanout-outage               # writes ./fanout-outage.toml
  stormdrill init demo-healthy drills/        # and drills/include/demo-common.toml, which it includes
  stormdrill init retry-storm                 # experiments/retry-storm.toml and the drill it sweeps`

// cmdInit copies a bundled drill, and the files it includes, out into a
// directory, refusing to overwrite a file that differs from the bundled one.
// A bundled experiment is copied with the drills it sweeps, laid out as in
// the source tree (experiments/NAME.toml, experiments/drills/, drills/).
func cmdInit(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("init", "NAME [DIR]", initExamples, stdout)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 || len(pos) > 2 {
		return usagef("stormdrill init: name one bundled drill or experiment and at most one directory (see --help)")
	}
	dir := "."
	if len(pos) == 2 {
		dir = pos[1]
	}
	order, files, err := drills.BundledFiles(pos[0])
	if _, isExperiment := experiments.BundledExperimentName(pos[0]); err != nil && isExperiment {
		order, files, err = experiments.BundledExperimentFiles(pos[0])
	}
	if err != nil {
		return usageError{err}
	}
	// Check every file before writing any, so that a refusal leaves nothing half done.
	var write []string
	for i, name := range order {
		dst := filepath.Join(dir, filepath.FromSlash(name))
		old, err := os.ReadFile(dst)
		switch {
		case err == nil && i > 0 && bytes.Equal(old, files[name]):
			continue // an include that another init already wrote
		case err == nil:
			return usagef("stormdrill init: %s exists; not overwritten (remove it, or name another DIR)", dst)
		case !errors.Is(err, os.ErrNotExist):
			return runError{err}
		}
		write = append(write, name)
	}
	for _, name := range write {
		dst := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return runError{err}
		}
		if err := writeNew(dst, files[name]); err != nil {
			return err
		}
		fmt.Fprintln(stdout, dst)
	}
	return nil
}

// writeNew writes a file that must not exist yet (O_EXCL: a file created
// since the check is not overwritten either).
func writeNew(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return usagef("stormdrill init: %s exists; not overwritten", path)
	} else if err != nil {
		return runError{err}
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return runError{err}
	}
	if err := f.Close(); err != nil {
		return runError{err}
	}
	return nil
}
