package drills

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	pathpkg "path"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// Limits on drill files.
const (
	MaxDrillBytes   = 1 << 20 // one drill file
	MaxIncludeDepth = 8       // include chains
	// MaxIncludes bounds the files one drill includes in all, so that a
	// few files that each include the next many times (no cycle, but
	// exponential work) are refused at once.
	MaxIncludes  = 64
	maxOverrides = 1000
)

// Load reads the drill at path, resolves its includes, decodes it strictly,
// applies overrides, fills defaults and validates it. An override maps a
// dotted key to a TOML value: "policy.retry.jitter" → `"full"`,
// "dispatcher.workers" → `40`, "partners[1].count" → `3`; a key that crosses
// an array of tables without an index ("partners.concurrency") sets it in
// every element; a value that is not valid TOML is taken as a bare string.
//
// A bare name such as "fanout-outage" (no path separator, no .toml) loads
// the bundled drill of that name when no file of that name exists: a path
// wins when the file exists. A bundled drill's errors name its file,
// "fanout-outage.toml:12: key: what is wrong".
//
// Every problem is returned as Errors, each "FILE:LINE: key: what is wrong".
func Load(path string, overrides map[string]string) (*Drill, error) {
	if ResolvesToBundled(path) {
		b, _ := BundledName(path)
		data, err := fs.ReadFile(bundledFS, b.File)
		if err != nil {
			return nil, Errors{{File: b.File, Msg: err.Error()}}
		}
		return parseDrillIn(bundledFS, b.File, data, overrides)
	}
	data, err := readDrillFile(path)
	if err != nil {
		msg := err.Error()
		if b, ok := BundledName(strings.TrimSuffix(path, ".toml")); ok && path == b.File {
			msg += fmt.Sprintf(" (the bundled drill is named without .toml: %s)", b.Name)
		}
		return nil, Errors{{File: path, Msg: msg}}
	}
	return parseDrill(path, data, overrides)
}

// Parse is Load for a drill already in memory; name is used in errors and
// includes are resolved relative to its directory.
func Parse(name string, data []byte) (*Drill, error) {
	return parseDrill(name, data, nil)
}

// ParseWithOverrides is Parse with overrides as in Load.
func ParseWithOverrides(name string, data []byte, overrides map[string]string) (*Drill, error) {
	return parseDrill(name, data, overrides)
}

// origin is where a key's value came from.
type origin struct {
	file     string
	line     int
	override bool
}

// loader holds one Load's state.
type loader struct {
	top      string
	errs     Errors
	typeErrs int // errors other than unknown keys
	origins  map[string]origin
	present  map[string]bool // every key path decoded
	includes int             // files included so far, at any depth
	// fsys is where the files are when they are not on disk (the bundled
	// drills); names are then slash-separated paths in it.
	fsys fs.FS
}

func parseDrill(name string, data []byte, overrides map[string]string) (*Drill, error) {
	return parseDrillIn(nil, name, data, overrides)
}

// parseDrillIn is parseDrill for a drill whose includes are read from
// fsys, or from disk when fsys is nil.
func parseDrillIn(fsys fs.FS, name string, data []byte, overrides map[string]string) (*Drill, error) {
	ld := &loader{top: name, present: map[string]bool{}, fsys: fsys}
	abs := ld.identity(name)
	tree, origins, ok := ld.loadFile(name, data, []string{abs})
	if !ok {
		return nil, ld.result()
	}
	ld.origins = origins
	ld.applyOverrides(tree, overrides)
	if len(ld.errs) > 0 {
		return nil, ld.result()
	}
	var d Drill
	ld.decodeTable(tree, reflect.ValueOf(&d).Elem(), "", "")
	if ld.typeErrs > 0 {
		// Validation would only repeat what failed to decode.
		return nil, ld.result()
	}
	for k := range ld.present {
		d.policyDeclared = d.policyDeclared || strings.HasPrefix(k, "policy.")
	}
	applyDefaults(&d, func(key string) bool { return ld.present[key] })
	ps := validate(&d, func(key string) bool { return ld.present[key] })
	if len(ps) == 0 {
		ps = systemPathChecks(&d, filepath.Dir(name))
	}
	for _, p := range ps {
		ld.errAt(p.key, p.msg)
	}
	if len(ld.errs) > 0 {
		return nil, ld.result()
	}
	return &d, nil
}

func (ld *loader) result() error {
	sortErrors(ld.errs)
	return boundErrors(ld.errs)
}

// pos finds where key, or failing that its nearest ancestor, was written.
func (ld *loader) pos(key string) origin {
	for k := key; k != ""; k = parentKey(k) {
		if o, ok := ld.origins[k]; ok {
			return o
		}
	}
	return origin{file: ld.top}
}

// parentKey strips the last piece or index: a.b[2].c → a.b[2] → a.b → a.
func parentKey(k string) string {
	if strings.HasSuffix(k, "]") {
		if i := strings.LastIndexByte(k, '['); i >= 0 {
			return k[:i]
		}
	}
	if i := strings.LastIndexByte(k, '.'); i >= 0 {
		return k[:i]
	}
	return ""
}

func (ld *loader) errAt(key, msg string) {
	o := ld.pos(key)
	if o.override {
		msg += " (set by override)"
	}
	ld.errs = append(ld.errs, &Error{File: o.file, Line: o.line, Key: key, Msg: msg})
}

func (ld *loader) typeErrAt(key, msg string) {
	ld.typeErrs++
	ld.errAt(key, msg)
}

// includePath is the file that inc, included by the file name, names.
func (ld *loader) includePath(name, inc string) string {
	if ld.fsys != nil {
		return pathpkg.Join(pathpkg.Dir(name), filepath.ToSlash(inc))
	}
	if filepath.IsAbs(inc) {
		return inc
	}
	return filepath.Join(filepath.Dir(name), inc)
}

// identity is what tells two names of one file apart from two files, for
// include cycles: the absolute path on disk, the path itself in fsys.
func (ld *loader) identity(name string) string {
	if ld.fsys != nil {
		return name
	}
	abs, err := filepath.Abs(name)
	if err != nil {
		return filepath.Clean(name)
	}
	return abs
}

// readFile reads one drill file, from fsys or from disk.
func (ld *loader) readFile(name string) ([]byte, error) {
	if ld.fsys == nil {
		return readDrillFile(name)
	}
	data, err := fs.ReadFile(ld.fsys, name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, errors.New("no such file")
	} else if err != nil {
		return nil, fmt.Errorf("cannot read: %v", err)
	}
	if len(data) > MaxDrillBytes {
		return nil, fmt.Errorf("larger than %d bytes", MaxDrillBytes)
	}
	return data, nil
}

// readDrillFile reads a regular file of at most MaxDrillBytes.
func readDrillFile(path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, errors.New("no such file")
		}
		return nil, fmt.Errorf("cannot read: %v", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, errors.New("not a regular file")
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read: %v", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxDrillBytes+1))
	if err != nil {
		return nil, fmt.Errorf("cannot read: %v", err)
	}
	if len(data) > MaxDrillBytes {
		return nil, fmt.Errorf("larger than %d bytes", MaxDrillBytes)
	}
	return data, nil
}

// loadFile parses one file and the files it includes, and merges them: the
// included files' keys are defaults under this file's. stack holds the
// absolute paths being loaded, outermost first, to catch cycles.
func (ld *loader) loadFile(name string, data []byte, stack []string) (map[string]any, map[string]origin, bool) {
	if len(data) > MaxDrillBytes {
		ld.errs = append(ld.errs, &Error{File: name, Msg: fmt.Sprintf("larger than %d bytes", MaxDrillBytes)})
		return nil, nil, false
	}
	tree, perr := decodeTOML(name, data)
	if perr != nil {
		ld.errs = append(ld.errs, perr)
		return nil, nil, false
	}
	origins := map[string]origin{}
	for k, line := range keyLines(string(data)) {
		origins[k] = origin{file: name, line: line}
	}
	local := func(key, msg string) {
		o, ok := origins[key]
		if !ok {
			o = origins["include"]
		}
		ld.typeErrs++
		ld.errs = append(ld.errs, &Error{File: name, Line: o.line, Key: key, Msg: msg})
	}
	raw, has := tree["include"]
	if !has {
		return tree, origins, true
	}
	if len(stack) == 1 {
		defer func() { tree["include"] = raw }() // the top file's list is Drill.Include
	} else {
		delete(tree, "include")
	}
	list, ok := raw.([]any)
	if !ok {
		local("include", fmt.Sprintf("want an array of file names, got %s", tomlTypeName(raw)))
		return nil, nil, false
	}
	var merged map[string]any
	var mergedOrigins map[string]origin
	failed := false
	for i, v := range list {
		key := "include[" + strconv.Itoa(i) + "]"
		inc, ok := v.(string)
		if !ok {
			local(key, fmt.Sprintf("want a file name, got %s", tomlTypeName(v)))
			failed = true
			continue
		}
		if filepath.Ext(inc) != ".toml" {
			local(key, fmt.Sprintf("%q: an included drill file ends in .toml", inc))
			failed = true
			continue
		}
		path := ld.includePath(name, inc)
		abs := ld.identity(path)
		if j := slices.Index(stack, abs); j >= 0 {
			chain := make([]string, 0, len(stack)-j+1)
			for _, s := range stack[j:] {
				chain = append(chain, filepath.Base(s))
			}
			local(key, fmt.Sprintf("include cycle: %s → %s", strings.Join(chain, " → "), filepath.Base(abs)))
			failed = true
			continue
		}
		if len(stack) > MaxIncludeDepth {
			local(key, fmt.Sprintf("includes nested more than %d deep", MaxIncludeDepth))
			failed = true
			continue
		}
		if ld.includes++; ld.includes > MaxIncludes {
			if ld.includes == MaxIncludes+1 { // said once, where it happened
				local(key, fmt.Sprintf("more than %d included files in all (counting every include of every file, from %s)", MaxIncludes, filepath.Base(ld.top)))
			}
			return nil, nil, false
		}
		incData, err := ld.readFile(path)
		if err != nil {
			local(key, fmt.Sprintf("%q: %v", inc, err))
			failed = true
			continue
		}
		t, o, ok := ld.loadFile(path, incData, append(stack[:len(stack):len(stack)], abs))
		if !ok {
			if ld.includes > MaxIncludes {
				return nil, nil, false
			}
			failed = true
			continue
		}
		if merged == nil {
			merged, mergedOrigins = t, o
		} else {
			mergeTrees(merged, t, "", mergedOrigins, o)
		}
	}
	if failed {
		return nil, nil, false
	}
	if merged == nil {
		return tree, origins, true
	}
	mergeTrees(merged, tree, "", mergedOrigins, origins)
	// Included files' own include lines must not stand in for this file's.
	replaceOrigins(mergedOrigins, origins, "include")
	return merged, mergedOrigins, true
}

// mergeTrees lays src over dst: tables merge key by key, anything else
// (values, arrays, arrays of tables) in src replaces dst's.
func mergeTrees(dst, src map[string]any, path string, dstOrigins, srcOrigins map[string]origin) {
	for k, sv := range src {
		p := joinKey(path, k)
		dm, dIsTable := dst[k].(map[string]any)
		sm, sIsTable := sv.(map[string]any)
		if dIsTable && sIsTable {
			mergeTrees(dm, sm, p, dstOrigins, srcOrigins)
			if o, ok := srcOrigins[p]; ok {
				dstOrigins[p] = o
			}
			continue
		}
		dst[k] = sv
		replaceOrigins(dstOrigins, srcOrigins, p)
	}
}

// hasKeyPrefix reports whether key is p or lies under it.
func hasKeyPrefix(key, p string) bool {
	return strings.HasPrefix(key, p) && (len(key) == len(p) || key[len(p)] == '.' || key[len(p)] == '[')
}

// replaceOrigins makes dst's origins for p and everything under it src's.
func replaceOrigins(dst, src map[string]origin, p string) {
	for k := range dst {
		if hasKeyPrefix(k, p) {
			delete(dst, k)
		}
	}
	for k, o := range src {
		if hasKeyPrefix(k, p) {
			dst[k] = o
		}
	}
}

// tableElems returns the tables of an array of tables, written either as
// [[x]] sections or as an inline array of inline tables.
func tableElems(v any) ([]map[string]any, bool) {
	switch a := v.(type) {
	case []map[string]any:
		return a, true
	case []any:
		out := make([]map[string]any, len(a))
		for i, e := range a {
			m, ok := e.(map[string]any)
			if !ok {
				return nil, false
			}
			out[i] = m
		}
		return out, true
	}
	return nil, false
}
