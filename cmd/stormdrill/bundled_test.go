package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stormdrill/stormdrill/reports"
)

// TestBundledDrillsFromAnEmptyDirectory is what a user who ran go install
// has: a freshly built binary and no checkout. It runs the flagship and
// validates the EDI drill by name, lists every drills/*.toml, and copies
// one out with init, which refuses to overwrite it.
func TestBundledDrillsFromAnEmptyDirectory(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs the flagship")
	}
	bin := filepath.Join(t.TempDir(), "stormdrill")
	build := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-o", bin, ".")
	if msg, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, msg)
	}
	sources, err := filepath.Glob("../../drills/*.toml")
	if err != nil || len(sources) == 0 {
		t.Fatalf("drills/*.toml: %v %v", sources, err)
	}
	empty := t.TempDir()
	cli := func(args ...string) (int, string, string) {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Dir = empty
		cmd.Env = append(os.Environ(), envCLI+"=") // the real binary, not the test's
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return code, out.String(), errb.String()
	}

	out := filepath.Join(t.TempDir(), "flagship")
	if code, stdout, stderr := cli("run", "fanout-outage", "--out", out, "--quiet"); code != exitOK {
		t.Fatalf("run fanout-outage: exit %d\n%s%s", code, stdout, stderr)
	}
	s, err := reports.ReadSummary(out)
	if err != nil {
		t.Fatal(err)
	}
	if s.Drill != "fanout-outage" || !s.Pass {
		t.Errorf("summary.json: drill %q pass %v; want fanout-outage passing", s.Drill, s.Pass)
	}
	if code, stdout, stderr := cli("validate", "edi-partner"); code != exitOK || !strings.Contains(stdout, "edi-partner: ok") {
		t.Errorf("validate edi-partner: exit %d\n%s%s", code, stdout, stderr)
	}
	if code, _, stderr := cli("validate", "edi-partner.toml"); code != exitUsage || !strings.Contains(stderr, "named without .toml: edi-partner") {
		t.Errorf("validate edi-partner.toml in an empty directory: exit %d, stderr %q; want 2 and the bundled name", code, stderr)
	}

	code, list, stderr := cli("drills")
	if code != exitOK {
		t.Fatalf("drills: exit %d\n%s", code, stderr)
	}
	listed := map[string]bool{}
	for _, line := range strings.Split(list, "\n") {
		if f := strings.Fields(line); len(f) > 1 {
			listed[f[0]] = true
		}
	}
	for _, src := range sources {
		name := strings.TrimSuffix(filepath.Base(src), ".toml")
		if !listed[name] {
			t.Errorf("drills does not list %s:\n%s", name, list)
		}
	}

	if code, stdout, stderr := cli("init", "demo-healthy"); code != exitOK {
		t.Fatalf("init demo-healthy: exit %d\n%s%s", code, stdout, stderr)
	}
	for _, f := range []string{"demo-healthy.toml", "include/demo-common.toml"} {
		got, err := os.ReadFile(filepath.Join(empty, f))
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(filepath.Join("../../drills", f))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("init wrote %s unlike drills/%s", f, f)
		}
	}
	if code, _, stderr := cli("init", "demo-healthy"); code != exitUsage || !strings.Contains(stderr, "not overwritten") {
		t.Errorf("init over an existing file: exit %d, stderr %q; want 2", code, stderr)
	}
	checkBundledExperiments(t, cli, empty, list)
	// The copy on disk now wins over the bundled drill of the same name.
	if err := os.WriteFile(filepath.Join(empty, "edi-partner"), []byte("name = 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := cli("validate", "edi-partner"); code != exitUsage || !strings.Contains(stderr, "edi-partner:1: name:") {
		t.Errorf("validate edi-partner beside a file of that name: exit %d, stderr %q; want the file's error", code, stderr)
	}
}
