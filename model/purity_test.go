package model

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// randAllowed are the math/rand and math/rand/v2 names that do not touch
// the package-level source: constructors and types.
var randAllowed = map[string]bool{
	"New": true, "NewSource": true, "NewPCG": true, "NewChaCha8": true, "NewZipf": true,
	"Rand": true, "Source": true, "Source64": true, "PCG": true, "ChaCha8": true, "Zipf": true,
}

// clockFuncs read the wall clock: time.Since and time.Until call time.Now.
var clockFuncs = map[string]bool{"Now": true, "Since": true, "Until": true}

// impureUses parses one Go source file and lists its uses of the clock and
// of the package-level random source, as "file:line: what".
func impureUses(fset *token.FileSet, name string, src any) ([]string, error) {
	f, err := parser.ParseFile(fset, name, src, 0)
	if err != nil {
		return nil, err
	}
	timeNames, randNames := map[string]bool{}, map[string]bool{}
	var found []string
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		local := ""
		if imp.Name != nil {
			local = imp.Name.Name
		}
		switch path {
		case "time":
			if local == "" {
				local = "time"
			}
			timeNames[local] = true
		case "math/rand", "math/rand/v2":
			if local == "" {
				local = "rand"
			}
			randNames[local] = true
		default:
			continue
		}
		if local == "." {
			// A dot import would hide every call from the check below.
			found = append(found, fset.Position(imp.Pos()).String()+": dot import of "+path)
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		x, ok := sel.X.(*ast.Ident)
		// x.Obj is set when the name resolves to a declaration in this file
		// (a local variable named rand, say): then it is not the package.
		if !ok || x.Obj != nil {
			return true
		}
		switch {
		case timeNames[x.Name] && clockFuncs[sel.Sel.Name]:
			found = append(found, fset.Position(sel.Pos()).String()+": "+x.Name+"."+sel.Sel.Name)
		case randNames[x.Name] && !randAllowed[sel.Sel.Name]:
			found = append(found, fset.Position(sel.Pos()).String()+": "+x.Name+"."+sel.Sel.Name)
		}
		return true
	})
	return found, nil
}

func TestImpureUsesDetector(t *testing.T) {
	tests := []struct {
		src  string
		want int // uses found
		why  string
	}{
		{`package p; import "time"; func f() { _ = time.Now() }`, 1, "time.Now call"},
		{`package p; import "time"; var clock = time.Now`, 1, "time.Now as a value"},
		{`package p; import "time"; func f(t time.Time) { _ = time.Since(t); _ = time.Until(t) }`, 2, "Since and Until read the clock"},
		{`package p; import tm "time"; func f() { _ = tm.Now() }`, 1, "renamed time import"},
		{`package p; import "math/rand"; func f() { _ = rand.Intn(3); _ = rand.Int63() }`, 2, "math/rand package functions"},
		{`package p; import "math/rand/v2"; func f() { _ = rand.Float64(); _ = rand.IntN(3) }`, 2, "math/rand/v2 package functions"},
		{`package p; import mr "math/rand/v2"; func f() { _ = mr.N(3) }`, 1, "renamed rand import"},
		{`package p; import . "math/rand/v2"; func f() { _ = Float64() }`, 1, "dot import flagged"},
		{`package p; import "math/rand/v2"; func f() float64 { r := rand.New(rand.NewPCG(1, 2)); return r.Float64() }`, 0, "seeded generator is allowed"},
		{`package p; import "math/rand"; func f() *rand.Rand { return rand.New(rand.NewSource(1)) }`, 0, "v1 seeded generator is allowed"},
		{`package p; import "math/rand/v2"; func f(rand *rand.Rand) float64 { return rand.Float64() }`, 0, "a parameter named rand is not the package"},
		{`package p; import "time"; func f(now time.Time, d time.Duration) time.Time { return now.Add(d) }`, 0, "time passed in"},
		{`package p; type clock struct{}; func (clock) Now() int { return 0 }; func f(time clock) int { return time.Now() }`, 0, "no time import"},
	}
	for _, tt := range tests {
		got, err := impureUses(token.NewFileSet(), "x.go", tt.src)
		if err != nil {
			t.Fatalf("%s: %v", tt.why, err)
		}
		if len(got) != tt.want {
			t.Errorf("%s: found %v, want %d", tt.why, got, tt.want)
		}
	}
}

// TestNoClockNoGlobalRand enforces the purity rule on every non-test .go
// file under model/, subpackages included, except the runtime adapters
// under model/runtime/.
func TestNoClockNoGlobalRand(t *testing.T) {
	fset := token.NewFileSet()
	// The runtime adapters (the dispatcher runtime, the stores, the
	// precise wall clock) are the real system under drill: they read the
	// wall clock by design. Everything else under model/ takes time as
	// given.
	paths := goFilesUnderModel(t, "runtime", false)
	for _, path := range paths {
		found, err := impureUses(fset, path, nil)
		if err != nil {
			t.Errorf("%s: %v", path, err)
			continue
		}
		for _, f := range found {
			t.Errorf("%s (time and randomness are passed in under model/)", f)
		}
	}
	if len(paths) < 8 {
		t.Fatalf("checked only %d files: the walk is not seeing model/", len(paths))
	}
}

// goFilesUnderModel lists the .go files the go tool sees under model/
// (testdata, dot and underscore folders left out), without the folder
// skip when it is not "", and with test files only when tests is true.
func goFilesUnderModel(t *testing.T, skip string, tests bool) []string {
	t.Helper()
	var paths []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != "." && (n == "testdata" || strings.HasPrefix(n, ".") || strings.HasPrefix(n, "_") || path == skip) {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(path, ".go") && (tests || !strings.HasSuffix(path, "_test.go")) {
			paths = append(paths, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return paths
}

// forbiddenImport says why the pure core may not import path, or "".
func forbiddenImport(path string) string {
	const mod = "github.com/stormdrill/stormdrill/"
	switch {
	case path == "net" || strings.HasPrefix(path, "net/"):
		return "network I/O"
	case path == "database" || strings.HasPrefix(path, "database/"):
		return "database I/O"
	case path == "os" || strings.HasPrefix(path, "os/"):
		return "the operating system"
	case path == mod+"model/runtime" || strings.HasPrefix(path, mod+"model/runtime/"):
		return "a runtime adapter (store, dispatcher runtime, wall clock)"
	case isTuning(path):
		return "CPU tuning, which only the simulator turns on"
	case path == "unsafe":
		return "memory layout tricks, which are the simulator's tuning"
	case strings.HasPrefix(path, mod) && !strings.HasPrefix(path, mod+"model"):
		return "a package above model/"
	}
	return ""
}

// isTuning reports whether path is a CPU tuning package (huge pages,
// prefetch, layout hints), wherever it lives.
func isTuning(path string) bool {
	return strings.HasPrefix(path, "github.com/stormdrill/stormdrill/") && (strings.HasSuffix(path, "/tuning") || strings.Contains(path, "/tuning/"))
}

// pureDirs are the pure core's packages, relative to model/.
var pureDirs = []string{".", "dispatchcore", "eventqueue", "seed"}

// TestPureCoreImports: the pure core (model/, model/dispatchcore,
// model/eventqueue, model/seed) imports no net, database or os package,
// nothing under model/runtime/ (the adapters depend on the core, not the
// other way round), and no CPU tuning: no tuning package, no unsafe.
func TestPureCoreImports(t *testing.T) {
	fset := token.NewFileSet()
	files := 0
	for _, dir := range pureDirs {
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			name := e.Name()
			if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
				continue
			}
			path := filepath.Join(dir, name)
			f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			files++
			for _, imp := range f.Imports {
				p, _ := strconv.Unquote(imp.Path.Value)
				if why := forbiddenImport(p); why != "" {
					t.Errorf("%s: imports %s (%s): not in the pure core", fset.Position(imp.Pos()), p, why)
				}
			}
		}
	}
	if files < 10 {
		t.Fatalf("checked only %d files: the pure core's directories moved?", files)
	}
}

func TestForbiddenImport(t *testing.T) {
	for path, bad := range map[string]bool{
		"net": true, "net/http": true, "net/url": true, "database/sql": true, "os": true, "os/exec": true,
		"github.com/stormdrill/stormdrill/model/runtime/queue": true, "github.com/stormdrill/stormdrill/model/runtime/dispatcher": true,
		"github.com/stormdrill/stormdrill/model/runtime/wallclock": true, "github.com/stormdrill/stormdrill/drills": true,
		"github.com/stormdrill/stormdrill/fakepartner": true, "unsafe": true,
		"github.com/stormdrill/stormdrill/drills/sim/tuning": true, "github.com/stormdrill/stormdrill/model/tuning": true,
		"github.com/stormdrill/stormdrill/model/tuning/prefetch": true,
		"time": false, "math/rand/v2": false, "errors": false, "network": false, "osx": false,
		"github.com/stormdrill/stormdrill/model": false, "github.com/stormdrill/stormdrill/model/eventqueue": false, "github.com/stormdrill/stormdrill/model/runtimex": false,
		"github.com/stormdrill/stormdrill/model/dispatchcore": false,
	} {
		if got := forbiddenImport(path) != ""; got != bad {
			t.Errorf("%s: forbidden %v, want %v", path, got, bad)
		}
	}
}

// TestNoTuningUnderModel: nothing under model/, the runtime adapters (the
// live dispatcher among them) included, imports a CPU tuning package: only
// the simulator turns tuning on.
func TestNoTuningUnderModel(t *testing.T) {
	fset := token.NewFileSet()
	paths := goFilesUnderModel(t, "", true)
	for _, path := range paths {
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); isTuning(p) {
				t.Errorf("%s: imports %s; only the simulator (drills/sim) turns tuning on", fset.Position(imp.Pos()), p)
			}
		}
	}
	if len(paths) < 20 {
		t.Fatalf("checked only %d files: the walk is not seeing model/", len(paths))
	}
}
