package drills

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"
)

// bundledFS holds the bundled drills and the files they include, so that a
// binary installed without a checkout runs them by name.
//
//go:embed *.toml include/*.toml compose/*.toml
var bundledFS embed.FS

// BundledDrill is one drill that ships in the binary.
type BundledDrill struct {
	Name        string // what `stormdrill run NAME` takes
	File        string // its path among the bundled files: "fanout-outage.toml"
	Description string
}

// BundledDrills lists the bundled drills (drills/*.toml of the source
// tree), sorted by name. The included files and the compose example are
// bundled too, but only as what these drills read.
func BundledDrills() []BundledDrill { return BundledIn(bundledFS) }

// BundledIn lists the *.toml files at the root of fsys, an embedded tree,
// with the description each declares, sorted by name: the bundled drills
// here, the bundled experiments in package experiments.
func BundledIn(fsys fs.FS) []BundledDrill {
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	var out []BundledDrill
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".toml")
		if !ok || e.IsDir() {
			continue
		}
		var head struct{ Description string }
		data, _ := fs.ReadFile(fsys, e.Name())
		_, _ = toml.Decode(string(data), &head) // the files' own tests load them strictly
		out = append(out, BundledDrill{Name: name, File: e.Name(), Description: head.Description})
	}
	slices.SortFunc(out, func(a, b BundledDrill) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// BundledName returns the bundled drill that arg names, when arg is a bare
// name: no path separator, no .toml, and a drill of that name is bundled.
func BundledName(arg string) (BundledDrill, bool) {
	if arg == "" || strings.ContainsAny(arg, `/\`) || strings.HasSuffix(arg, ".toml") {
		return BundledDrill{}, false
	}
	for _, b := range BundledDrills() {
		if b.Name == arg {
			return b, true
		}
	}
	return BundledDrill{}, false
}

// ResolvesToBundled reports whether Load(arg) loads a bundled drill: arg is
// a bare bundled name and no file of that name exists. A path wins when the
// file exists, so a drill on disk is never shadowed by a bundled one.
func ResolvesToBundled(arg string) bool {
	if _, ok := BundledName(arg); !ok {
		return false
	}
	_, err := os.Lstat(arg)
	return errors.Is(err, fs.ErrNotExist)
}

// BundledFiles returns the bundled drill name's file and every file it
// includes, directly or not, as paths among the bundled files with their
// contents, the drill first: what `stormdrill init` writes out.
func BundledFiles(name string) ([]string, map[string][]byte, error) {
	b, ok := BundledName(name)
	if !ok {
		return nil, nil, fmt.Errorf("%s: no bundled drill of that name (stormdrill drills lists them)", name)
	}
	var order []string
	files := map[string][]byte{}
	var walk func(p string) error
	walk = func(p string) error {
		if _, seen := files[p]; seen {
			return nil
		}
		if len(files) > MaxIncludes {
			return fmt.Errorf("%s: more than %d included files", b.File, MaxIncludes)
		}
		data, err := fs.ReadFile(bundledFS, p)
		if err != nil {
			return err
		}
		order = append(order, p)
		files[p] = data
		var head struct{ Include []string }
		if _, err := toml.Decode(string(data), &head); err != nil {
			return fmt.Errorf("%s: %v", p, err)
		}
		for _, inc := range head.Include {
			if err := walk(path.Join(path.Dir(p), inc)); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(b.File); err != nil {
		return nil, nil, err
	}
	return order, files, nil
}
