package main

import (
	"fmt"
	"io"
	"runtime/debug"
)

const versionExamples = `  stormdrill version
  go version -m $(command -v stormdrill)   # the same, from outside`

// cmdVersion prints what the Go toolchain stamped into the binary: the
// module version (a tag under go install …@v1.2.3 or a release build), the
// commit and whether the tree was modified.
func cmdVersion(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("version", "", versionExamples, stdout)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("stormdrill version: unexpected argument %q", pos[0])
	}
	fmt.Fprintln(stdout, versionLine())
	return nil
}

// versionLine is "stormdrill VERSION (commit REV[, modified], BUILT) GOVERSION OS/ARCH".
func versionLine() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "stormdrill (no build information)"
	}
	version := bi.Main.Version
	if version == "" {
		version = "(devel)"
	}
	var rev, when, modified, goos, goarch string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			when = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = ", modified"
			}
		case "GOOS":
			goos = s.Value
		case "GOARCH":
			goarch = s.Value
		}
	}
	line := "stormdrill " + version
	if rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		line += " (commit " + rev + modified
		if when != "" {
			line += ", " + when
		}
		line += ")"
	}
	line += " " + bi.GoVersion
	if goos != "" {
		line += " " + goos + "/" + goarch
	}
	return line
}
