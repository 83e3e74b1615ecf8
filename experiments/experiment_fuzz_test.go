package experiments

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stormdrill/stormdrill/drills"
)

// FuzzParseExperiment feeds arbitrary bytes to the experiment parser. It
// must never panic (parseExperiment turns a panic into "cannot parse: …",
// which the fuzzer reports too, since it would hide a bug of ours), must
// refuse bad input as drills.Errors, and whatever it accepts must respect
// the file limits.
func FuzzParseExperiment(f *testing.F) {
	bundled, _ := filepath.Glob("*.toml")
	for _, p := range bundled {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(data)
		}
	}
	for _, s := range []string{
		"",                                   // empty file
		"name = 1",                           // wrong type
		"metrics = [\"attempts\"]\n[[axes]]", // axis without key
		"drill = \"d.toml\"\nmetrics = [\"attempts\"]\n[[axes]]\nkey = \"k\"\nvalues = [{}]",                // empty table value
		"drill = \"d.toml\"\nmetrics = [\"attempts\"]\n[[axes]]\nkey = \"k\"\nvalues = [1, 1]",              // duplicate labels
		"drill = \"d.toml\"\nmetrics = [\"attempts\"]\nseeds = 1000\n[[axes]]\nkey = \"k\"\nvalues = [nan]", // NaN
		"[overrides]\n\"a.b\" = [[1], {x = 2}]",                                                             // nested values
		"[[axes]]\nkey = \"drill\"\nvalues = [3]\nlabels = []",                                              // drill axis, not a file
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > MaxExperimentBytes {
			return
		}
		e, err := parseExperiment("fuzz/experiment.toml", data)
		if err != nil {
			es, ok := drills.AsErrors(err)
			if !ok || len(es) == 0 {
				t.Fatalf("error is not drills.Errors: %T %v", err, err)
			}
			if strings.Contains(err.Error(), "cannot parse: ") {
				t.Fatalf("the parser panicked: %v", err)
			}
			return
		}
		if e.Seeds < 1 || e.Seeds > MaxSeeds {
			t.Fatalf("accepted %d seeds", e.Seeds)
		}
		if len(e.Metrics) == 0 || len(e.Metrics) > MaxMetrics {
			t.Fatalf("accepted %d metrics", len(e.Metrics))
		}
		if len(e.Axes) == 0 || len(e.Axes) > MaxAxes {
			t.Fatalf("accepted %d axes", len(e.Axes))
		}
		runs := e.Seeds
		for _, a := range e.Axes {
			if len(a.Values) == 0 || len(a.Values) > MaxAxisValues {
				t.Fatalf("axis %q: accepted %d values", a.Key, len(a.Values))
			}
			seen := map[string]bool{}
			for _, v := range a.Values {
				if seen[v.Label] {
					t.Fatalf("axis %q: label %q twice", a.Key, v.Label)
				}
				seen[v.Label] = true
			}
			runs *= len(a.Values)
		}
		if runs > MaxRuns {
			t.Fatalf("accepted %d runs", runs)
		}
		if got := len(e.Cells()) * e.Seeds; got != runs {
			t.Fatalf("%d cells × seeds, want %d", got, runs)
		}
	})
}
