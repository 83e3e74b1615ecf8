package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stormdrill/stormdrill/drills"
)

// badDrills are the bad drills of drills/testdata/bad, relative to the
// repository root.
func badDrills(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("../../drills/testdata/bad/*.toml")
	if err != nil || len(files) < 20 {
		t.Fatalf("found %d bad drills (%v)", len(files), err)
	}
	files = append(files, "../../drills/testdata/bad/bomb/bomb-0.toml")
	for i, f := range files {
		files[i] = strings.TrimPrefix(f, "../../")
	}
	return files
}

// Every entry point that reads a drill refuses each bad drill exactly as
// validate does: exit 2, the same FILE:LINE: key: message lines, and
// nothing run or written.
func TestEntryPointsAgreeOnBadDrills(t *testing.T) {
	out := t.TempDir()
	for _, f := range badDrills(t) {
		code, _, want := stormdrill(t, "validate", f)
		if code != exitUsage || !strings.Contains(want, ".toml:") {
			t.Errorf("validate %s: exit %d, stderr %q; want 2 with FILE:LINE", f, code, want)
			continue
		}
		for _, args := range [][]string{
			{"run", f, "--out", filepath.Join(out, "run"), "--quiet"},
			{"plan", f},
			{"partner", f, "--listen", "127.0.0.1:0"},
			{"capacity", f, "--out", filepath.Join(out, "capacity"), "--max-probes", "1", "--quiet"},
			{"dispatch", "--drill", f, "--partners", "http://127.0.0.1:1", "--store", "sqlite:" + filepath.Join(out, "q.db")},
		} {
			code, stdout, got := stormdrill(t, args...)
			if code != exitUsage || got != want {
				t.Errorf("%s %s: exit %d, stderr\n%s\nwant exit 2 and validate's\n%s", args[0], f, code, got, want)
			}
			if stdout != "" {
				t.Errorf("%s %s: printed %q on stdout", args[0], f, stdout)
			}
		}
	}
	if entries, _ := os.ReadDir(out); len(entries) > 0 {
		t.Errorf("refused drills wrote %d entries under --out", len(entries))
	}
}

// Every bundled drill that validate accepts, plan, partner and the
// dispatcher process accept too.
// (run is covered by the simulation tests, which run each bundled drill.)
func TestEntryPointsAgreeOnBundledDrills(t *testing.T) {
	files, _ := filepath.Glob("../../drills/*.toml")
	if len(files) < 8 {
		t.Fatalf("found %d bundled drills", len(files))
	}
	for _, path := range files {
		f := strings.TrimPrefix(path, "../../")
		if code, _, errOut := stormdrill(t, "validate", f); code != exitOK {
			t.Errorf("validate %s: exit %d: %s", f, code, errOut)
		}
		if code, _, errOut := stormdrill(t, "plan", f); code != exitOK {
			t.Errorf("plan %s: exit %d: %s", f, code, errOut)
		}
		// The dispatcher process builds and validates its configuration
		// from the drill, then stops before opening a store.
		if code, _, errOut := stormdrill(t, "dispatch", "--drill", f, "--partners", "http://127.0.0.1:1", "--print-config"); code != exitOK {
			t.Errorf("dispatch --drill %s: exit %d: %s", f, code, errOut)
		}
		// partner serves until its context ends: with one already ended
		// it builds the server, listens and stops.
		d, err := drills.Load(path, nil)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		var stdout bytes.Buffer
		if err := servePartners(ctx, d, "127.0.0.1:0", 0, &stdout); err != nil {
			t.Errorf("partner %s: %v", f, err)
		}
	}
}

// The command line is checked before anything runs.
func TestCommandLineChecksBeforeRunning(t *testing.T) {
	dir := t.TempDir()
	same := filepath.Join(dir, "same.toml")
	data, err := os.ReadFile("../../drills/demo-healthy.toml")
	if err != nil {
		t.Fatal(err)
	}
	// Its include is relative to drills/.
	data = bytes.ReplaceAll(data, []byte(`"include/`), []byte(`"`+filepath.Join(mustAbs(t, "../../drills"), "include")+`/`))
	if err := os.WriteFile(same, data, 0o644); err != nil {
		t.Fatal(err)
	}
	notDir := filepath.Join(dir, "file")
	if err := os.WriteFile(notDir, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	drill := "drills/demo-healthy.toml"
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"run", drill, "--out", "/proc/x"}, "--out /proc/x: cannot"},
		{[]string{"run", drill, "--out", filepath.Join(notDir, "sub")}, "cannot create"},
		{[]string{"run", drill, "--out", ""}, "--out: empty value"},
		{[]string{"run", drill, "--seed", ""}, `invalid argument "" for "-s, --seed" flag`}, // a typed flag: pflag refuses the empty number
		{[]string{"run", drill, "--baseline", ""}, "--baseline: empty value"},
		{[]string{"run", drill, "--fail-on", "healthy.latency.p99=+10%"}, "--fail-on needs --baseline"},
		{[]string{"run", drill, same, "--out", filepath.Join(dir, "two")}, `both named "demo-healthy"`},
		{[]string{"run", drill, "--limit", "bogus=3"}, "--limit"},
		{[]string{"run", drill, "--limit", "gates=0"}, "at least 1"},
		{[]string{"validate", drill, "--limit", "gates="}, "--limit"},
		{[]string{"plan", drill, "--limit", ""}, "--limit: empty value"},
		{[]string{"capacity", drill, "--min", "1e-300/s"}, "between 1e-06/s"},
		{[]string{"capacity", drill, "--max", "1e300"}, "--max"},
		{[]string{"capacity", drill, "--out", "/proc/x", "--max-probes", "1"}, "--out /proc/x: cannot"},
	} {
		code, stdout, errOut := stormdrill(t, tt.args...)
		if code != exitUsage || !strings.Contains(errOut, tt.want) {
			t.Errorf("%q: exit %d, stderr %q; want 2 and %q", tt.args, code, errOut, tt.want)
		}
		if stdout != "" {
			t.Errorf("%q: ran (stdout %q)", tt.args, stdout)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "two")); err == nil {
		t.Error("two drills of one name: the run went ahead, or the --out check left its directory")
	}
	// The --out check leaves nothing behind when the command stops later.
	left := filepath.Join(dir, "left", "deep")
	if code, _, _ := stormdrill(t, "capacity", drill, "--out", left, "--min", "8", "--max", "2", "--quiet"); code != exitUsage {
		t.Errorf("capacity --min 8 --max 2: exit %d, want 2", code)
	}
	if _, err := os.Stat(filepath.Join(dir, "left")); err == nil {
		t.Error("a refused capacity search left its --out directory")
	}
	// --limit raises a ceiling: the 101-gate drill validates with it.
	if code, _, errOut := stormdrill(t, "validate", "drills/testdata/bad/gates.toml", "--limit", "gates=200"); code != exitOK {
		t.Errorf("validate with --limit gates=200: exit %d: %s", code, errOut)
	}
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}
