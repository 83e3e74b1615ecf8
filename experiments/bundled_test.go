package experiments

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/stormdrill/stormdrill/drills"
)

// TestBundledExperiments: every experiments/*.toml ships in the binary, no
// bundled experiment shares a name with a bundled drill, and each loads by
// name into the same cells as its file, its drills read from the binary.
func TestBundledExperiments(t *testing.T) {
	files, err := filepath.Glob("*.toml")
	if err != nil || len(files) == 0 {
		t.Fatalf("*.toml: %v %v", files, err)
	}
	bundled := BundledExperiments()
	if len(bundled) != len(files) {
		t.Errorf("%d bundled experiments, %d experiments/*.toml", len(bundled), len(files))
	}
	for _, b := range bundled {
		if _, clash := drills.BundledName(b.Name); clash {
			t.Errorf("%s is both a bundled drill and a bundled experiment: a name must say which", b.Name)
		}
		byName, err := LoadExperiment(b.Name)
		if err != nil {
			t.Errorf("LoadExperiment(%q): %v", b.Name, err)
			continue
		}
		byFile, err := LoadExperiment(b.Name + ".toml")
		if err != nil {
			t.Fatal(err)
		}
		if byName.Path != filepath.FromSlash(b.File) || b.File != "experiments/"+b.Name+".toml" {
			t.Errorf("%s: path %q, file %q; want experiments/%s.toml", b.Name, byName.Path, b.File, b.Name)
		}
		a, c := byName.Cells(), byFile.Cells()
		if len(a) != len(c) {
			t.Fatalf("%s: %d cells by name, %d from its file", b.Name, len(a), len(c))
		}
		for i := range a {
			// The bundled experiment's drills are named from the source tree's root.
			want := filepath.Join("experiments", c[i].Drill)
			if a[i].Drill != want || !reflect.DeepEqual(a[i].Overrides, c[i].Overrides) || !reflect.DeepEqual(a[i].Labels, c[i].Labels) {
				t.Errorf("%s cell %d: by name %+v, from its file %+v", b.Name, i, a[i], c[i])
			}
		}
	}
	if _, err := LoadExperiment("no-such-experiment"); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("LoadExperiment of an unknown name: %v; want no such file", err)
	}
}

// TestLoadDrillOfABundledExperiment: a command that takes one drill takes a
// bundled experiment's name for the drill it sweeps, with its overrides.
func TestLoadDrillOfABundledExperiment(t *testing.T) {
	d, err := LoadDrill("breaker", nil)
	if err != nil {
		t.Fatal(err)
	}
	if d.Name != "fanout-outage" || d.Duration.D.String() != "40m0s" {
		t.Errorf("LoadDrill(breaker): drill %q duration %v; want fanout-outage with the experiment's 40m", d.Name, d.Duration)
	}
	d, err = LoadDrill("breaker", map[string]string{"duration": `"30m"`})
	if err != nil || d.Duration.D.String() != "30m0s" {
		t.Errorf("LoadDrill(breaker) with duration = 30m: %v, %v; the caller's override wins", d, err)
	}
	if _, err := LoadDrill("demo-scenarios", nil); err == nil || !strings.Contains(err.Error(), "several drills") {
		t.Errorf("LoadDrill(demo-scenarios): %v; want: sweeps several drills", err)
	}
}
