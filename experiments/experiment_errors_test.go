package experiments

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stormdrill/stormdrill/drills"
)

// experimentBase is a small valid drill for the experiments below.
const experimentBase = `name = "base"
duration = "1m"
[source]
rate = "1/s"
[[partners]]
name = "a"
`

// Every mistake of an experiment is reported at the experiment's own
// FILE:LINE, with the experiment key that holds it, never at the drill's
// file or as "(cell 1)": the file to open is the one that is wrong.
func TestExperimentErrorsPointAtTheExperiment(t *testing.T) {
	head := "name = \"e\"\nmetrics = [\"amplification\"]\n"
	axis := "[[axes]]\nkey = \"policy.retry.jitter\"\nvalues = [\"full\"]\n"
	for _, c := range []struct {
		name, text string
		line       int
		key, msg   string
	}{
		{"unknown axis key", head + "drill = \"base.toml\"\n[[axes]]\nkey = \"policy.retry.jiter\"\nvalues = [\"full\"]\n",
			5, "axes[0].key", "policy.retry.jiter: unknown key in policy.retry; did you mean jitter?"},
		{"bad axis value", head + "drill = \"base.toml\"\n[[axes]]\nkey = \"policy.retry.jitter\"\nvalues = [\"full\",\n  \"fulll\"]\n",
			7, "axes[0].values[1]", `policy.retry.jitter: "fulll" is not one of`},
		{"missing drill", head + "drill = \"missing.toml\"\n" + axis,
			3, "drill", `"missing.toml": no such file`},
		{"self-referencing drill", head + "drill = \"e.toml\"\n" + axis,
			3, "drill", "names this experiment file"},
		{"drill that is not a drill", head + "drill = \"/etc/passwd\"\n" + axis,
			3, "drill", "a drill file ends in .toml"},
		{"missing drill in a drill axis", head + "[[axes]]\nkey = \"drill\"\nvalues = [\"base.toml\", \"gone.toml\"]\n",
			5, "axes[0].values[1]", `"gone.toml": no such file`},
		{"bad override", head + "drill = \"base.toml\"\n[overrides]\n\"policy.retry.base\" = \"-1s\"\n" + axis,
			5, "overrides.policy.retry.base", `policy.retry.base: duration "-1s" is negative`},
		{"unknown override", head + "drill = \"base.toml\"\n[overrides]\n\"policy.retry.bse\" = \"1s\"\n" + axis,
			5, "overrides.policy.retry.bse", "did you mean base?"},
		{"bad strategy key", head + "drill = \"base.toml\"\n[[axes]]\nkey = \"strategy\"\nvalues = [\n  { \"policy.retry.jitter\" = \"full\" },\n  { \"policy.retry.jittr\" = \"none\" },\n]\n",
			8, "axes[0].values[1]", "policy.retry.jittr: unknown key in policy.retry; did you mean jitter?"},
		{"two axes on one key", head + "drill = \"base.toml\"\n" + axis + "[[axes]]\nkey = \"policy.retry.jitter\"\nvalues = [\"equal\"]\n",
			9, "axes[1].values[0]", "sets policy.retry.jitter, which axes[0] sets too"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "base.toml"), []byte(experimentBase), 0o644); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, "e.toml")
			if err := os.WriteFile(path, []byte(c.text), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := LoadExperiment(path)
			es, ok := drills.AsErrors(err)
			if !ok || len(es) == 0 {
				t.Fatalf("got %v, want drills.Errors", err)
			}
			e := es[0]
			if e.File != path || e.Line != c.line || !strings.HasPrefix(e.Key, c.key) || !strings.Contains(e.Msg, c.msg) || strings.Contains(e.Msg, "(cell") {
				t.Errorf("got\n  %v\nwant e.toml:%d: %s: …%s…", err, c.line, c.key, c.msg)
			}
		})
	}
}

// FuzzLoadExperiment loads arbitrary experiment files over a small valid
// drill, every cell's drill included: never a panic, and every error names
// the experiment file (at a line, when it names a key) or the drill.
func FuzzLoadExperiment(f *testing.F) {
	head := "name = \"e\"\nmetrics = [\"amplification\"]\ndrill = \"base.toml\"\n"
	for _, s := range []string{
		head + "[[axes]]\nkey = \"policy.retry.jitter\"\nvalues = [\"full\", \"fulll\"]\n",
		head + "[overrides]\n\"policy.retry.base\" = \"-1s\"\n[[axes]]\nkey = \"dispatcher.workers\"\nvalues = [1, 0]\n",
		head + "[[axes]]\nkey = \"s\"\nvalues = [{ \"policy.retry.jittr\" = \"none\" }, { \"partners[3].count\" = 2 }]\n",
		head + "[[axes]]\nkey = \"drill\"\nvalues = [\"base.toml\", \"e.toml\", \"/etc/passwd\"]\n",
		head + "[[axes]]\nkey = \"partners.count\"\nvalues = [1, -1]\n[[axes]]\nkey = \"partners.count\"\nvalues = [2]\n",
	} {
		f.Add(s)
	}
	dir := f.TempDir()
	base := filepath.Join(dir, "base.toml")
	if err := os.WriteFile(base, []byte(experimentBase), 0o644); err != nil {
		f.Fatal(err)
	}
	path := filepath.Join(dir, "e.toml")
	f.Fuzz(func(t *testing.T, text string) {
		if len(text) > 4096 {
			return
		}
		// Only experiments of a few cells: each cell loads a drill.
		if e, err := parseExperiment(path, []byte(text)); err == nil && len(e.Cells()) > 16 {
			return
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := LoadExperiment(path)
		if err == nil {
			return
		}
		es, ok := drills.AsErrors(err)
		if !ok {
			t.Fatalf("error is not drills.Errors: %T %v", err, err)
		}
		for _, e := range es {
			if strings.Contains(e.Msg, "cannot parse: ") {
				t.Fatalf("the parser panicked: %v", e)
			}
			if e.File != path && e.File != base && e.File != "" {
				t.Fatalf("an error names %s, neither the experiment nor its drill: %v", e.File, e)
			}
		}
	})
}
