package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// checkBundledExperiments is TestBundledDrillsFromAnEmptyDirectory's part
// for the bundled experiments: with no checkout, `drills` lists each as an
// experiment, sweep, plan and capacity take one by name, and init copies one
// out laid out as in the source tree, so that sweeping the copy writes the
// same summary as sweeping the bundled one.
func checkBundledExperiments(t *testing.T, cli func(args ...string) (int, string, string), dir, list string) {
	t.Helper()
	sources, err := filepath.Glob("../../experiments/*.toml")
	if err != nil || len(sources) == 0 {
		t.Fatalf("experiments/*.toml: %v %v", sources, err)
	}
	kinds := map[string]string{}
	for _, line := range strings.Split(list, "\n") {
		if f := strings.Fields(line); len(f) > 2 {
			kinds[f[0]] = f[1]
		}
	}
	for _, src := range sources {
		if name := strings.TrimSuffix(filepath.Base(src), ".toml"); kinds[name] != "experiment" {
			t.Errorf("drills lists %s as %q; want experiment:\n%s", name, kinds[name], list)
		}
	}
	if kinds["fanout-outage"] != "drill" {
		t.Errorf("drills lists fanout-outage as %q; want drill", kinds["fanout-outage"])
	}

	bundled := filepath.Join(t.TempDir(), "herd-bundled")
	if code, stdout, stderr := cli("sweep", "herd", "--quiet", "--out", bundled); code != exitOK {
		t.Fatalf("sweep herd: exit %d\n%s%s", code, stdout, stderr)
	}
	var s struct {
		Experiment string
		Cells      []struct{ Drill string }
	}
	js, err := os.ReadFile(filepath.Join(bundled, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(js, &s); err != nil {
		t.Fatal(err)
	}
	if s.Experiment != "herd" || len(s.Cells) == 0 || s.Cells[0].Drill != "experiments/drills/herd.toml" {
		t.Errorf("sweep herd: experiment %q, %d cells, first drill %+v; want herd's cells on experiments/drills/herd.toml", s.Experiment, len(s.Cells), s.Cells)
	}
	if code, stdout, stderr := cli("plan", "retry-storm"); code != exitOK || !strings.Contains(stdout, "# Capacity plan: retry-storm") {
		t.Errorf("plan retry-storm: exit %d\n%s%s", code, stdout, stderr)
	}
	if code, _, stderr := cli("plan", "demo-scenarios"); code != exitUsage || !strings.Contains(stderr, "several drills") {
		t.Errorf("plan demo-scenarios (an axis over drills): exit %d, stderr %q; want 2 saying it sweeps several drills", code, stderr)
	}
	capOut := filepath.Join(t.TempDir(), "cap")
	if code, stdout, stderr := cli("capacity", "retry-storm", "--seeds", "1", "--max-probes", "3", "--quiet", "--out", capOut); code != exitOK && code != exitGateFail {
		t.Errorf("capacity retry-storm: exit %d\n%s%s", code, stdout, stderr)
	} else if _, err := os.Stat(filepath.Join(capOut, "report.md")); err != nil {
		t.Errorf("capacity retry-storm wrote no report: %v", err)
	}

	for name, files := range map[string][]string{
		"herd":    {"experiments/herd.toml", "experiments/drills/herd.toml"},
		"breaker": {"experiments/breaker.toml", "drills/fanout-outage.toml"},
	} {
		if code, stdout, stderr := cli("init", name); code != exitOK {
			t.Fatalf("init %s: exit %d\n%s%s", name, code, stdout, stderr)
		}
		for _, f := range files {
			got, err := os.ReadFile(filepath.Join(dir, f))
			if err != nil {
				t.Fatal(err)
			}
			if want, err := os.ReadFile(filepath.Join("../..", f)); err != nil || !bytes.Equal(got, want) {
				t.Errorf("init %s wrote %s unlike the source tree's (%v)", name, f, err)
			}
		}
	}
	copied := filepath.Join(t.TempDir(), "herd-copied")
	if code, stdout, stderr := cli("sweep", "experiments/herd.toml", "--quiet", "--out", copied); code != exitOK {
		t.Fatalf("sweep experiments/herd.toml: exit %d\n%s%s", code, stdout, stderr)
	}
	if js2, err := os.ReadFile(filepath.Join(copied, "summary.json")); err != nil || !bytes.Equal(js, js2) {
		t.Errorf("sweeping the copy init wrote differs from sweeping the bundled herd (%v)", err)
	}
}
