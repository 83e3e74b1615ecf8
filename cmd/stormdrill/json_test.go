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
