package experiments

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/stormdrill/stormdrill/drills"
)

// bundledFS holds the bundled experiments and the drills that only they
// use, so that a binary installed without a checkout sweeps them by name.
//
//go:embed *.toml drills/*.toml
var bundledFS embed.FS

// The bundled files are named by their paths in the source tree, so that a
// bundled experiment resolves its drills, and reports name them, exactly as
// the same experiment run from a checkout's root does.
const (
	bundledExperimentDir = "experiments" // experiments/NAME.toml
	bundledDrillDir      = "drills"      // drills/NAME.toml: drills.BundledDrills
)

// BundledExperiment is one experiment that ships in the binary.
type BundledExperiment struct {
	Name        string // what `stormdrill sweep NAME` takes
	File        string // its path in the source tree: "experiments/retry-storm.toml"
	Description string
}

// BundledExperiments lists the bundled experiments (experiments/*.toml of
// the source tree), sorted by name.
func BundledExperiments() []BundledExperiment {
	var out []BundledExperiment
	for _, b := range drills.BundledIn(bundledFS) {
		out = append(out, BundledExperiment{Name: b.Name, File: path.Join(bundledExperimentDir, b.File), Description: b.Description})
	}
	return out
}

// BundledExperimentName returns the bundled experiment that arg names, when
// arg is a bare name (no path separator, no .toml) of one, and no file of
// that name exists: a path wins, as with drills.Load.
func BundledExperimentName(arg string) (BundledExperiment, bool) {
	if arg == "" || strings.ContainsAny(arg, `/\`) || strings.HasSuffix(arg, ".toml") {
		return BundledExperiment{}, false
	}
	if _, err := os.Lstat(arg); !errors.Is(err, fs.ErrNotExist) {
		return BundledExperiment{}, false
	}
	for _, b := range BundledExperiments() {
		if b.Name == arg {
			return b, true
		}
	}
	return BundledExperiment{}, false
}

// readExperimentFile reads an experiment from disk or, for a bundled
// experiment's name, from the binary; it returns the path that errors and
// drill references are taken from.
func readExperimentFile(arg string) (string, []byte, error) {
	b, ok := BundledExperimentName(arg)
	if !ok {
		data, err := readSmallFile(arg, MaxExperimentBytes)
		return arg, data, err
	}
	data, err := fs.ReadFile(bundledFS, strings.TrimPrefix(b.File, bundledExperimentDir+"/"))
	return filepath.FromSlash(b.File), data, err
}

// bundledDrill reads a drill a bundled experiment names when no file of
// that path exists: experiments/drills/NAME.toml from the binary, or
// drills/NAME.toml as the bundled drill NAME. ok is false for any other
// path.
func bundledDrill(ref string) (name string, data []byte, ok bool) {
	p := filepath.ToSlash(ref)
	if rest, found := strings.CutPrefix(p, bundledExperimentDir+"/"); found && strings.HasPrefix(rest, "drills/") {
		data, err := fs.ReadFile(bundledFS, rest)
		return "", data, err == nil
	}
	if rest, found := strings.CutPrefix(p, bundledDrillDir+"/"); found {
		if b, isDrill := drills.BundledName(strings.TrimSuffix(rest, ".toml")); isDrill && rest == b.File {
			return b.Name, nil, true
		}
	}
	return "", nil, false
}

// loadDrill is drills.Load for the drills an experiment names: a file on
// disk wins, and a bundled experiment's drills are read from the binary.
func loadDrill(ref string, overrides map[string]string) (*drills.Drill, error) {
	if _, err := os.Lstat(ref); errors.Is(err, fs.ErrNotExist) {
		if name, data, ok := bundledDrill(ref); ok {
			if name != "" {
				return drills.Load(name, overrides)
			}
			return drills.ParseWithOverrides(ref, data, overrides)
		}
	}
	return drills.Load(ref, overrides)
}

// LoadDrill loads what a command that takes one drill was given: a drill
// file, a bundled drill's name, or a bundled experiment's name, which
// stands for the drill that experiment sweeps with the experiment's
// overrides beneath the caller's.
func LoadDrill(arg string, overrides map[string]string) (*drills.Drill, error) {
	ref, ov, err := resolveDrillArg(arg, overrides)
	if err != nil {
		return nil, err
	}
	return loadDrill(ref, ov)
}

// resolveDrillArg turns a bundled experiment's name into its base drill
// and overrides; any other argument is returned as it is.
func resolveDrillArg(arg string, overrides map[string]string) (string, map[string]string, error) {
	b, ok := BundledExperimentName(arg)
	if !ok || drills.ResolvesToBundled(arg) {
		return arg, overrides, nil
	}
	path, data, err := readExperimentFile(arg)
	if err != nil {
		return "", nil, drills.Errors{{File: b.File, Msg: err.Error()}}
	}
	e, err := parseExperiment(path, data)
	if err != nil {
		return "", nil, err
	}
	if e.Drill == "" {
		return "", nil, fmt.Errorf("%s: the bundled experiment sweeps several drills (an axis over %q); name one of them", arg, DrillAxis)
	}
	ov := maps.Clone(e.Overrides)
	maps.Copy(ov, overrides)
	return e.Drill, ov, nil
}

// BundledExperimentFiles returns the bundled experiment name's file and
// every bundled drill it sweeps, with the files those include, as paths in
// the source tree with their contents, the experiment first: what
// `stormdrill init NAME` writes out, so that `stormdrill sweep
// experiments/NAME.toml` runs the copy as it runs in a checkout.
func BundledExperimentFiles(name string) ([]string, map[string][]byte, error) {
	b, ok := BundledExperimentName(name)
	if !ok {
		return nil, nil, fmt.Errorf("%s: no bundled experiment of that name (stormdrill drills lists them)", name)
	}
	p, data, err := readExperimentFile(name)
	if err != nil {
		return nil, nil, err
	}
	e, err := parseExperiment(p, data)
	if err != nil {
		return nil, nil, err
	}
	order := []string{b.File}
	files := map[string][]byte{b.File: data}
	for _, ref := range e.drillRefs() {
		if err := addBundledDrill(filepath.ToSlash(ref), &order, files); err != nil {
			return nil, nil, err
		}
	}
	return order, files, nil
}

// addBundledDrill adds one drill a bundled experiment names, and what it
// includes, to the files init writes.
func addBundledDrill(ref string, order *[]string, files map[string][]byte) error {
	if _, seen := files[ref]; seen {
		return nil
	}
	name, data, ok := bundledDrill(ref)
	if !ok {
		return fmt.Errorf("%s: not a bundled drill", ref)
	}
	if name == "" {
		*order = append(*order, ref)
		files[ref] = data
		return nil
	}
	dorder, dfiles, err := drills.BundledFiles(name)
	if err != nil {
		return err
	}
	for _, f := range dorder {
		p := path.Join(bundledDrillDir, f)
		if _, seen := files[p]; !seen {
			*order = append(*order, p)
			files[p] = dfiles[f]
		}
	}
	return nil
}

// drillRefs lists the drills the experiment runs: its base drill and those
// of an axis over drills, in order, each once.
func (e *Experiment) drillRefs() []string {
	var refs []string
	if e.Drill != "" {
		refs = append(refs, e.Drill)
	}
	for _, a := range e.Axes {
		for _, v := range a.Values {
			if v.Drill != "" && !slices.Contains(refs, v.Drill) {
				refs = append(refs, v.Drill)
			}
		}
	}
	return refs
}
