package deploy

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// The GitHub workflows, the reusable action and the release configuration
// have no offline validator (actionlint and `goreleaser check` are not Go
// libraries, and goreleaser's schema is not published as one), so these
// tests parse them with a YAML parser and check the keys each must have
// and the references between them.

func readYAML(t *testing.T, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

type step struct {
	Name  string            `yaml:"name"`
	ID    string            `yaml:"id"`
	Uses  string            `yaml:"uses"`
	Run   string            `yaml:"run"`
	Shell string            `yaml:"shell"`
	With  map[string]string `yaml:"with"`
	Env   map[string]string `yaml:"env"`
	If    string            `yaml:"if"`
}

// checkSteps: each step either runs a command or uses an action pinned to
// a version (or a local path).
func checkSteps(t *testing.T, where string, steps []step, needShell bool) {
	t.Helper()
	if len(steps) == 0 {
		t.Errorf("%s: no steps", where)
	}
	for i, s := range steps {
		switch {
		case (s.Uses == "") == (s.Run == ""):
			t.Errorf("%s: step %d (%s): want exactly one of uses and run", where, i+1, s.Name)
		case s.Uses != "" && !strings.HasPrefix(s.Uses, "./") && !regexp.MustCompile(`^[\w.-]+/[\w./-]+@[\w.-]+$`).MatchString(s.Uses):
			t.Errorf("%s: step %d: uses %q: want OWNER/REPO@VERSION", where, i+1, s.Uses)
		case s.Run != "" && needShell && s.Shell == "":
			t.Errorf("%s: step %d (%s): a composite action's run step needs shell", where, i+1, s.Name)
		}
	}
}

func TestWorkflows(t *testing.T) {
	files, _ := filepath.Glob("../.github/workflows/*.yml")
	if len(files) < 4 {
		t.Fatalf("workflows %v: want at least drill-gate, release, sweep-sharded and test", files)
	}
	runs := map[string]string{} // file → every run step, joined
	for _, f := range files {
		var wf struct {
			Name string         `yaml:"name"`
			On   map[string]any `yaml:"on"`
			Jobs map[string]struct {
				RunsOn string `yaml:"runs-on"`
				Needs  any    `yaml:"needs"`
				Steps  []step `yaml:"steps"`
			} `yaml:"jobs"`
		}
		readYAML(t, f, &wf)
		base := filepath.Base(f)
		if wf.Name == "" || len(wf.On) == 0 || len(wf.Jobs) == 0 {
			t.Errorf("%s: want name, on and jobs", base)
		}
		for name, j := range wf.Jobs {
			if j.RunsOn == "" {
				t.Errorf("%s: job %s: no runs-on", base, name)
			}
			checkSteps(t, base+": "+name, j.Steps, false)
			for _, s := range j.Steps {
				runs[base] += s.Run + "\n" + s.With["args"] + "\n"
			}
			needs, _ := j.Needs.(string)
			if needs != "" && wf.Jobs[needs].RunsOn == "" {
				t.Errorf("%s: job %s needs %q, no job of the workflow", base, name, needs)
			}
		}
	}
	if !strings.Contains(runs["test.yml"], "make test") || !strings.Contains(runs["test.yml"], ".ci/run") {
		t.Error("test.yml: want the quick tier (make test) and the full one (.ci/run)")
	}
	if !strings.Contains(runs["release.yml"], "release --clean") {
		t.Error("release.yml: no goreleaser release")
	}
	for _, kind := range []string{"sweep ", "capacity ", "run "} {
		if !strings.Contains(runs["sweep-sharded.yml"], kind) || !strings.Contains(runs["sweep-sharded.yml"], "--shard") {
			t.Errorf("sweep-sharded.yml: no sharded %q", kind)
		}
	}
}

func TestAction(t *testing.T) {
	var a struct {
		Name        string `yaml:"name"`
		Description string `yaml:"description"`
		Inputs      map[string]struct {
			Description string `yaml:"description"`
			Required    bool   `yaml:"required"`
		} `yaml:"inputs"`
		Outputs map[string]struct {
			Value string `yaml:"value"`
		} `yaml:"outputs"`
		Runs struct {
			Using string `yaml:"using"`
			Steps []step `yaml:"steps"`
		} `yaml:"runs"`
	}
	readYAML(t, "../action.yml", &a)
	if a.Name == "" || a.Description == "" || a.Runs.Using != "composite" {
		t.Fatalf("action.yml: want name, description and a composite action (using %q)", a.Runs.Using)
	}
	checkSteps(t, "action.yml", a.Runs.Steps, true)
	if in, ok := a.Inputs["drill"]; !ok || !in.Required {
		t.Error("action.yml: the drill input must be required")
	}
	for name, in := range a.Inputs {
		if in.Description == "" {
			t.Errorf("action.yml: input %s has no description", name)
		}
	}
	// Every ${{ inputs.X }} and steps.ID named exists.
	data, _ := os.ReadFile("../action.yml")
	for _, m := range regexp.MustCompile(`inputs\.([\w-]+)`).FindAllStringSubmatch(string(data), -1) {
		if _, ok := a.Inputs[m[1]]; !ok {
			t.Errorf("action.yml: inputs.%s is not an input", m[1])
		}
	}
	var ids []string
	var uses, runs string
	for _, s := range a.Runs.Steps {
		ids = append(ids, s.ID)
		uses += s.Uses + " "
		runs += s.Run + "\n"
	}
	for _, m := range regexp.MustCompile(`steps\.([\w-]+)\.`).FindAllStringSubmatch(string(data), -1) {
		if !slices.Contains(ids, m[1]) {
			t.Errorf("action.yml: steps.%s is no step's id", m[1])
		}
	}
	// What the action promises: install a release checked against its
	// checksums, run the drill, upload the report, publish junit.xml.
	for _, want := range []string{"gh release download", "checksums.txt", "stormdrill run"} {
		if !strings.Contains(runs, want) {
			t.Errorf("action.yml: no step runs %q", want)
		}
	}
	for _, want := range []string{"actions/upload-artifact@", "junit"} {
		if !strings.Contains(uses, want) {
			t.Errorf("action.yml: no step uses %q", want)
		}
	}
}

func TestGoreleaserConfig(t *testing.T) {
	var g struct {
		Version int `yaml:"version"`
		Builds  []struct {
			ID      string   `yaml:"id"`
			Dir     string   `yaml:"dir"`
			Main    string   `yaml:"main"`
			Ldflags []string `yaml:"ldflags"`
			Env     []string `yaml:"env"`
		} `yaml:"builds"`
		Archives []struct {
			IDs   []string `yaml:"ids"`
			Files []string `yaml:"files"`
		} `yaml:"archives"`
		Checksum struct {
			NameTemplate string `yaml:"name_template"`
		} `yaml:"checksum"`
		SBOMs []struct {
			Artifacts string `yaml:"artifacts"`
		} `yaml:"sboms"`
		Dockers []struct {
			IDs            []string `yaml:"ids"`
			Dockerfile     string   `yaml:"dockerfile"`
			ExtraFiles     []string `yaml:"extra_files"`
			ImageTemplates []string `yaml:"image_templates"`
		} `yaml:"dockers"`
	}
	readYAML(t, "../.goreleaser.yaml", &g)
	if g.Version != 2 {
		t.Errorf(".goreleaser.yaml: version %d, want 2", g.Version)
	}
	ids := map[string]bool{}
	for _, b := range g.Builds {
		ids[b.ID] = true
		dir := filepath.Join("..", b.Dir, b.Main)
		if _, err := os.Stat(filepath.Join(dir, "main.go")); err != nil {
			t.Errorf("build %s: %s has no main.go", b.ID, dir)
		}
		if !slices.Contains(b.Env, "CGO_ENABLED=0") {
			t.Errorf("build %s: not CGO_ENABLED=0", b.ID)
		}
		if b.ID == "stormdrill" && !strings.Contains(strings.Join(b.Ldflags, " "), "-X main.version={{ .Version }}") {
			t.Errorf("build stormdrill: ldflags %v do not stamp the version", b.Ldflags)
		}
	}
	if !ids["stormdrill"] {
		t.Fatal("no build of stormdrill")
	}
	if len(g.Archives) == 0 || g.Checksum.NameTemplate == "" || len(g.SBOMs) == 0 || len(g.Dockers) == 0 {
		t.Fatal("want archives, checksums, SBOMs and an image")
	}
	for _, a := range g.Archives {
		for _, f := range a.Files {
			if m, _ := filepath.Glob(filepath.Join("..", f)); len(m) == 0 {
				t.Errorf("archive file %s matches nothing", f)
			}
		}
	}
	for _, d := range g.Dockers {
		for _, id := range d.IDs {
			if !ids[id] {
				t.Errorf("docker image: build %q does not exist", id)
			}
		}
		if _, err := os.Stat(filepath.Join("..", d.Dockerfile)); err != nil {
			t.Errorf("docker image: %v", err)
		}
		df, _ := os.ReadFile(filepath.Join("..", d.Dockerfile))
		for _, f := range d.ExtraFiles {
			if _, err := os.Stat(filepath.Join("..", f)); err != nil || !strings.Contains(string(df), "COPY "+f+" ") {
				t.Errorf("docker image: extra file %s missing or not copied by %s", f, d.Dockerfile)
			}
		}
		if len(d.ImageTemplates) == 0 {
			t.Error("docker image: no image_templates")
		}
	}
}
