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
