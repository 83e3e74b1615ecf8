package drills

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stormdrill/stormdrill/fakepartner"
	"github.com/stormdrill/stormdrill/model"
)

// kindTable is one kind table: the file that declares it, the names a
// drill writes, and the Go type of its constants (none for kinds that
// are names only).
type kindTable struct {
	file      string // relative to the module root
	names     []string
	constType string
}

func kindTables() []kindTable {
	var reasons []string
	for _, r := range model.Reasons {
		reasons = append(reasons, string(r))
	}
	return []kindTable{
		{"model/jitterkinds.go", model.JitterNames(), "Jitter"},
		{"model/triprules.go", model.TripRuleNames(), "TripRule"},
		{"fakepartner/outagekinds.go", fakepartner.OutageKindNames(), "OutageKind"},
		{"drills/arrivals.go", ArrivalKindNames(), ""},
		{"drills/faultkinds.go", FaultKindNames(), ""},
		{"model/reasons.go", reasons, "Reason"},
	}
}

// sharedWords are kind names that are also words of another vocabulary
// of the drill format, so a literal cannot tell which it means; their
// kinds are checked by their constants only.
var sharedWords = map[string]string{
	"none":     "policy.breaker.trip and system.dead_letters: no breaker, no dead-letter source",
	"constant": "a latency table's dist",
	"garbage":  "an outage's retry_after",
	"empty":    "a summary key's kind in the key reference",
}

// A kind is asked of its table, never named elsewhere: no non-test file
// but the table's own compares a value with a kind's name as a string
// literal, or with one of the table's constants (== or != or a switch
// case). A consumer that did would miss a kind added to the table.
func TestKindsComparedOnlyInTheirTable(t *testing.T) {
	root := moduleRoot(t)
	fset := token.NewFileSet()
	names, consts := kindIndex(t, root, fset)
	for _, file := range goFiles(t, root) {
		f, err := parser.ParseFile(fset, filepath.Join(root, file), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range kindComparisons(f, file, names, consts) {
			t.Errorf("%s:%d: %s compared outside its table (%s): ask the table instead", file, fset.Position(c.pos).Line, c.what, c.table)
		}
	}
}

// The scan finds each way of comparing a kind outside its table, in any
// package, and lets the table's own file and the shared words be.
func TestKindComparisonsFound(t *testing.T) {
	fset := token.NewFileSet()
	names, consts := kindIndex(t, moduleRoot(t), fset)
	src := `package x
func f() {
	_ = s == "decorrelated"
	_ = model.JitterHash != j
	_ = string(r) == string(model.ReasonQueueFull)
	_ = k.String() == fakepartner.OutageSlow.String()
	switch s {
	case "graceful-restart":
	}
	_ = s == "none"
	_ = s == "not-a-kind"
}`
	want := []string{
		`kind name "decorrelated"`, "kind constant JitterHash", "kind constant ReasonQueueFull",
		"kind constant OutageSlow", `kind name "graceful-restart"`,
	}
	for _, file := range []string{"experiments/x.go", "drills/sim/x.go", "fakepartner/x.go"} {
		f, err := parser.ParseFile(fset, file, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, c := range kindComparisons(f, file, names, consts) {
			got = append(got, c.what)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: found %q, want %q", file, got, want)
		}
	}
	// In the table's own file nothing is flagged; elsewhere in its package
	// an unqualified constant is.
	own := "package model\nfunc f() { _ = j == JitterHash; _ = s == \"hash\" }"
	for file, want := range map[string]int{"model/jitterkinds.go": 0, "model/policy.go": 2} {
		f, err := parser.ParseFile(fset, file, own, 0)
		if err != nil {
			t.Fatal(err)
		}
		if got := len(kindComparisons(f, file, names, consts)); got != want {
			t.Errorf("%s: %d comparisons found, want %d", file, got, want)
		}
	}
}

// kindIndex maps each kind's name (the shared words left out) and each
// table's constants to the files of the tables that declare them.
func kindIndex(t *testing.T, root string, fset *token.FileSet) (names map[string][]string, consts map[string]string) {
	tables := kindTables()
	consts = map[string]string{} // constant → its table's file
	for _, k := range tables {
		if k.constType == "" {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(root, k.file), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		cs := constsOfType(f, k.constType)
		if len(cs) == 0 {
			// A table moved to another file would otherwise leave its
			// constants unchecked, and the test passing.
			t.Errorf("%s declares no constant of type %s: is the table still there?", k.file, k.constType)
		}
		for _, name := range cs {
			consts[name] = k.file
		}
	}
	names = map[string][]string{} // kind name → the files of the tables that declare it
	for _, k := range tables {
		for _, n := range k.names {
			if _, shared := sharedWords[n]; !shared {
				names[n] = append(names[n], k.file)
			}
		}
	}
	for w := range sharedWords {
		if !slices.ContainsFunc(tables, func(k kindTable) bool { return slices.Contains(k.names, w) }) {
			t.Errorf("sharedWords: %q is no kind's name any more", w)
		}
	}
	return names, consts
}

// comparison is a kind named in a comparison.
type comparison struct {
	pos   token.Pos
	what  string
	table string
}

// kindComparisons lists the operands of f's comparisons and switch cases
// that name a kind whose table is not file.
func kindComparisons(f *ast.File, file string, names map[string][]string, consts map[string]string) []comparison {
	var out []comparison
	var check func(e ast.Expr)
	check = func(e ast.Expr) {
		switch e := ast.Unparen(e).(type) {
		case *ast.BasicLit:
			if e.Kind != token.STRING {
				return
			}
			s, err := strconv.Unquote(e.Value)
			if tabs := names[s]; err == nil && len(tabs) > 0 && !slices.Contains(tabs, file) {
				out = append(out, comparison{e.Pos(), "kind name " + e.Value, strings.Join(tabs, ", ")})
			}
		case *ast.Ident:
			// Unqualified, it is the constant only in the table's package.
			if tab, ok := consts[e.Name]; ok && tab != file && filepath.Dir(tab) == filepath.Dir(file) {
				out = append(out, comparison{e.Pos(), "kind constant " + e.Name, tab})
			}
		case *ast.SelectorExpr:
			if tab, ok := consts[e.Sel.Name]; ok && tab != file {
				out = append(out, comparison{e.Pos(), "kind constant " + e.Sel.Name, tab})
			}
		case *ast.CallExpr: // string(model.ReasonX), model.JitterHash.String()
			if id, ok := e.Fun.(*ast.Ident); ok && id.Name == "string" && len(e.Args) == 1 {
				check(e.Args[0])
			} else if sel, ok := e.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "String" && len(e.Args) == 0 {
				check(sel.X)
			}
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.BinaryExpr:
			if n.Op == token.EQL || n.Op == token.NEQ {
				check(n.X)
				check(n.Y)
			}
		case *ast.CaseClause:
			for _, e := range n.List {
				check(e)
			}
		}
		return true
	})
	return out
}

// constsOfType lists the constants f declares of the named type, the
// iota runs included.
func constsOfType(f *ast.File, typ string) []string {
	var out []string
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		cur := ""
		for _, s := range g.Specs {
			vs := s.(*ast.ValueSpec)
			if id, ok := vs.Type.(*ast.Ident); ok {
				cur = id.Name
			} else if vs.Type != nil || len(vs.Values) > 0 {
				cur = "" // a new run of another type, or untyped
			}
			if cur != typ {
				continue
			}
			for _, n := range vs.Names {
				out = append(out, n.Name)
			}
		}
	}
	return out
}

// goFiles lists the module's non-test Go files, relative to root,
// leaving out testdata and modules of their own.
func goFiles(t *testing.T, root string) []string {
	var out []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if rel != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || fileExists(filepath.Join(path, "go.mod"))) {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(rel, ".go") && !strings.HasSuffix(rel, "_test.go") {
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// moduleRoot is the directory of go.mod above this package.
func moduleRoot(t *testing.T) string {
	dir, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	for !fileExists(filepath.Join(dir, "go.mod")) {
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the package")
		}
		dir = parent
	}
	return dir
}
