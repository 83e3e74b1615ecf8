package drills

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
)

// TestBundledDrillsAreTheSourceFiles: every drills/*.toml is bundled under
// its name, byte for byte, and loads by that name from an empty directory.
func TestBundledDrillsAreTheSourceFiles(t *testing.T) {
	src, err := filepath.Glob("*.toml")
	if err != nil || len(src) == 0 {
		t.Fatalf("*.toml: %v %v", src, err)
	}
	want := map[string][]byte{}
	for _, f := range src {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		want[f] = data
	}
	t.Chdir(t.TempDir())
	list := BundledDrills()
	if len(list) != len(src) {
		t.Errorf("%d bundled drills, %d files", len(list), len(src))
	}
	for _, b := range list {
		_, files, err := BundledFiles(b.Name)
		if err != nil {
			t.Fatal(err)
		}
		if string(files[b.File]) != string(want[b.File]) {
			t.Errorf("%s: bundled copy differs from the source", b.File)
		}
		if b.Description == "" {
			t.Errorf("%s: no description", b.File)
		}
		d, err := Load(b.Name, nil)
		if err != nil && !strings.Contains(err.Error(), "system.dir") {
			// An external drill names its system's directory, which
			// only a checkout has.
			t.Errorf("Load(%q): %v", b.Name, err)
		}
		if err == nil && d.Name != b.Name {
			t.Errorf("Load(%q) loaded %q", b.Name, d.Name)
		}
	}
}

// TestBundledNameRule: only a bare name is looked up among the bundled
// drills, and a file of that name wins.
func TestBundledNameRule(t *testing.T) {
	for arg, want := range map[string]bool{
		"fanout-outage": true, "fanout-outage.toml": false, "drills/fanout-outage": false,
		"./fanout-outage": false, "no-such-drill": false, "": false, "include/demo-common": false,
	} {
		if _, ok := BundledName(arg); ok != want {
			t.Errorf("BundledName(%q) = %v, want %v", arg, ok, want)
		}
	}
	dir := t.TempDir()
	t.Chdir(dir)
	if !ResolvesToBundled("fanout-outage") {
		t.Fatal("fanout-outage does not resolve to the bundled drill in an empty directory")
	}
	if err := os.WriteFile("fanout-outage", []byte("name = \"mine\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if ResolvesToBundled("fanout-outage") {
		t.Error("a file named fanout-outage does not win over the bundled drill")
	}
	if _, err := Load("fanout-outage", nil); err == nil || !strings.Contains(err.Error(), "fanout-outage:") || strings.Contains(err.Error(), ".toml") {
		t.Errorf("Load read the bundled drill, not the file: %v", err)
	}
}

// TestDrillInFSNamesItsFiles: a drill read from a file system (as the
// bundled ones are) names the file of each error, an included one too.
func TestDrillInFSNamesItsFiles(t *testing.T) {
	fsys := fstest.MapFS{
		"top.toml":            {Data: []byte("include = [\"include/common.toml\"]\nname = \"top\"\nduration = \"1h\"\nsource.rate = \"1/s\"\n[[partners]]\nname = \"p\"\n")},
		"include/common.toml": {Data: []byte("seed = 1\n\ndrain = \"-5m\"\n")},
	}
	_, err := parseDrillIn(fsys, "top.toml", fsys["top.toml"].Data, nil)
	var errs Errors
	if !errors.As(err, &errs) || len(errs) != 1 {
		t.Fatalf("want one error, got %v", err)
	}
	if got := errs[0].Error(); !strings.HasPrefix(got, "include/common.toml:3: drain: ") {
		t.Errorf("error %q does not name include/common.toml:3", got)
	}
	fsys["include/common.toml"] = &fstest.MapFile{Data: []byte("include = [\"../top.toml\"]\n")}
	if _, err := parseDrillIn(fsys, "top.toml", fsys["top.toml"].Data, nil); err == nil || !strings.Contains(err.Error(), "include cycle") {
		t.Errorf("a cycle through ../ in the file system: %v", err)
	}
}
