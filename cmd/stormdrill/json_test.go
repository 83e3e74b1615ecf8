package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCompareJSON: compare --json prints machine-readable results that say
// the same as the Markdown.
func TestCompareJSON(t *testing.T) {
	base, cand := t.TempDir(), t.TempDir()
	for _, r := range [][2]string{{"drills/demo-outage-breaker.toml", base}, {"drills/demo-outage-no-backoff.toml", cand}} {
		if code, out, e := stormdrill(t, "run", r[0], "--out", r[1], "--quiet"); code != exitOK {
			t.Fatalf("run %s: exit %d\n%s%s", r[0], code, out, e)
		}
	}
	code, out, errOut := stormdrill(t, "compare", base, cand, "--json", "--fail-on", "amplification=+1%")
	if code != exitGateFail {
		t.Fatalf("compare --json: exit %d, want 1\n%s%s", code, out, errOut)
	}
	var c struct {
		Failed bool `json:"failed"`
		Rows   []struct {
			Metric    string   `json:"metric"`
			Base      *float64 `json:"base"`
			Candidate *float64 `json:"candidate"`
			Exceeded  bool     `json:"exceeded"`
		} `json:"rows"`
	}
	if err := json.Unmarshal([]byte(out), &c); err != nil {
		t.Fatalf("compare --json is not JSON: %v\n%s", err, out)
	}
	found := false
	for _, r := range c.Rows {
		if r.Metric == "amplification" {
			found = true
			if !r.Exceeded || r.Base == nil || r.Candidate == nil || !(*r.Candidate > *r.Base) {
				t.Errorf("amplification row %+v: want exceeded, candidate above base", r)
			}
		}
	}
	if !c.Failed || !found {
		t.Errorf("compare --json: failed %v, amplification row %v", c.Failed, found)
	}
}

// TestCapacityJSON: capacity --json prints its summary.json and nothing
// else.
func TestCapacityJSON(t *testing.T) {
	dir := t.TempDir()
	sets, pools, _ := capacityCase()
	args := append([]string{"capacity", "drills/fanout-outage.toml", "--quiet", "--json", "--max-probes", "2", "--out", dir, "--set", "dispatcher.workers=" + pools[0]}, sets...)
	code, out, errOut := stormdrill(t, args...)
	if code != exitOK && code != exitGateFail {
		t.Fatalf("capacity --json: exit %d\n%s%s", code, out, errOut)
	}
	var capJSON struct {
		Key    string            `json:"key"`
		Probes []json.RawMessage `json:"probes"`
	}
	if err := json.Unmarshal([]byte(out), &capJSON); err != nil || capJSON.Key != "source.rate" || len(capJSON.Probes) == 0 {
		t.Fatalf("capacity --json: %v, %+v\n%s", err, capJSON, out)
	}
	file, _ := os.ReadFile(filepath.Join(dir, "summary.json"))
	if string(file) != out || strings.Contains(out, "report:") {
		t.Errorf("capacity --json prints something other than its summary.json")
	}
}

// TestEveryReportingCommandPrintsOneJSONDocument: run, validate and sweep
// with --json print one JSON document on stdout (the file they wrote, where
// they write one) and their log lines on stderr.
func TestEveryReportingCommandPrintsOneJSONDocument(t *testing.T) {
	dir := t.TempDir()
	code, out, errOut := stormdrill(t, "run", "drills/demo-healthy.toml", "--out", dir, "--json", "-q")
	if code != exitOK {
		t.Fatalf("run --json: exit %d\n%s%s", code, out, errOut)
	}
	if file, _ := os.ReadFile(filepath.Join(dir, "summary.json")); string(file) != out {
		t.Errorf("run --json prints something other than its summary.json:\n%.300s", out)
	}
	if !strings.Contains(errOut, "demo-healthy") {
		t.Errorf("run --json: the run's line is not on stderr: %q", errOut)
	}

	code, out, errOut = stormdrill(t, "validate", "--json", "drills/demo-healthy.toml", "cmd/stormdrill/testdata/typo.toml")
	var vs []validation
	if err := json.Unmarshal([]byte(out), &vs); err != nil || code != exitUsage || len(vs) != 2 {
		t.Fatalf("validate --json: exit %d, %v, %d entries; want 2 and two entries\n%s%s", code, err, len(vs), out, errOut)
	}
	if !vs[0].OK || vs[0].Name != "demo-healthy" || vs[1].OK || len(vs[1].Errors) != 1 || vs[1].Errors[0].Line != 11 || vs[1].Errors[0].Key != "policy.retry.max_attemps" {
		t.Errorf("validate --json: %+v", vs)
	}
	if !strings.Contains(errOut, "1 of 2 drills refused") {
		t.Errorf("validate --json: stderr %q does not say how many were refused", errOut)
	}

	sweepDir := t.TempDir()
	code, out, errOut = stormdrill(t, "sweep", "cmd/stormdrill/testdata/tiny-experiment.toml", "--out", sweepDir, "--quiet", "--json")
	if code != exitOK {
		t.Fatalf("sweep --json: exit %d\n%s%s", code, out, errOut)
	}
	if file, _ := os.ReadFile(filepath.Join(sweepDir, "summary.json")); string(file) != out || !json.Valid([]byte(out)) {
		t.Errorf("sweep --json prints something other than its summary.json:\n%.300s", out)
	}
	if !strings.Contains(errOut, "tiny: 4 cells × 2 seeds") {
		t.Errorf("sweep --json: stderr %q lacks the report line", errOut)
	}
}
