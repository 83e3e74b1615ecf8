package main

import (
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

const versionExamples = `  stormdrill version
  stormdrill --version                     # the same line; -v too
  stormdrill version --json
  go version -m $(command -v stormdrill)   # the build information, from outside`

// version is stamped by release builds and the image:
// go build -ldflags "-X main.version=v1.2.3". Left empty, the main
// module's version from the build information stands in (a tag under
// go install …@v1.2.3, "(devel)" in a checkout).
var version string

// buildInfo is what `version --json` prints and stormdrill_build_info
// carries.
type buildInfo struct {
	Version   string `json:"version"`
	Commit    string `json:"commit,omitempty"`
	Modified  bool   `json:"modified,omitempty"`
	Time      string `json:"time,omitempty"`
	GoVersion string `json:"go_version"`
	OS        string `json:"os"`
	Arch      string `json:"arch"`
}

// readBuildInfo combines the stamped version with what the Go toolchain
// recorded: the commit, whether the tree was modified, the toolchain.
func readBuildInfo() buildInfo {
	b := buildInfo{Version: version, GoVersion: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		if b.Version == "" {
			b.Version = "(unknown)"
		}
		return b
	}
	if b.Version == "" {
		b.Version = bi.Main.Version
	}
	if b.Version == "" {
		b.Version = "(devel)"
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Commit = s.Value
		case "vcs.time":
			b.Time = s.Value
		case "vcs.modified":
			b.Modified = s.Value == "true"
		}
	}
	return b
}

// cmdVersion prints the version and build information.
func cmdVersion(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("version", "[--json]", versionExamples, stdout)
	asJSON := fs.Bool("json", false, "print the build information as one JSON object")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("stormdrill version: unexpected argument %q", pos[0])
	}
	if *asJSON {
		return writeJSON(stdout, readBuildInfo())
	}
	fmt.Fprintln(stdout, versionString())
	return nil
}

// versionString is "stormdrill VERSION (commit REV[, modified], TIME) GOVERSION OS/ARCH".
func versionString() string {
	b := readBuildInfo()
	line := "stormdrill " + b.Version
	if rev := b.Commit; rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		line += " (commit " + rev
		if b.Modified {
			line += ", modified"
		}
		if b.Time != "" {
			line += ", " + b.Time
		}
		line += ")"
	}
	return line + " " + b.GoVersion + " " + b.OS + "/" + b.Arch
}

// writeJSON writes v as one indented JSON document: what every --json
// prints on stdout.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return runError{err}
	}
	return nil
}
