package drills

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	pathpkg "path"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
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

	// The TOML decoder takes time and memory quadratic in the nesting
	// depth and in the number of parts of a dotted key: a 1 MB file of
	// "{b = " or "t." ran for minutes and took gigabytes. A drill needs a
	// few levels and parts; these bounds are checked before decoding.
	MaxNestingDepth = 32 // open [ and { at once
	MaxKeyParts     = 32 // parts of one dotted key or table header

	// MaxArrayElements bounds every array of a drill file, inline or
	// [[table]], before it is decoded: no [limits] ceiling can be raised
	// above it. A 1 MB file holds 250,000 numbers, and decoding and
	// locating them took seconds before validation could count them.
	MaxArrayElements = 10_000
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

// decodeTOML parses TOML text into a generic tree.
func decodeTOML(name string, data []byte) (m map[string]any, e *Error) {
	defer func() {
		// The parser is third-party; a panic in it must not take the CLI down.
		if r := recover(); r != nil {
			m, e = nil, &Error{File: name, Msg: fmt.Sprintf("cannot parse: %v", r)}
		}
	}()
	if e := checkTOMLShape(name, data); e != nil {
		return nil, e
	}
	if _, err := toml.Decode(string(data), &m); err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			line := max(pe.Position.Line, 0)
			return nil, &Error{File: name, Line: line, Key: keyOnLine(string(data), line), Msg: pe.Message}
		}
		return nil, &Error{File: name, Msg: strings.TrimPrefix(err.Error(), "toml: ")}
	}
	return m, nil
}

// keyOnLine names the key written on line (the longest, when a dotted key
// also names its tables), or "" when the line holds none.
func keyOnLine(src string, line int) string {
	if line <= 0 {
		return ""
	}
	best := ""
	for k, l := range keyLines(src) {
		if l == line && (len(k) > len(best) || (len(k) == len(best) && k > best)) {
			best = k
		}
	}
	return best
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

// tomlTypeName names a decoded TOML value's type for messages.
func tomlTypeName(v any) string {
	switch v := v.(type) {
	case string:
		return fmt.Sprintf("a string (%s)", clip(strconv.Quote(v)))
	case int64:
		return fmt.Sprintf("an integer (%d)", v)
	case float64:
		return fmt.Sprintf("a number (%v)", v)
	case bool:
		return fmt.Sprintf("a bool (%v)", v)
	case map[string]any:
		return "a table"
	case []map[string]any, []any:
		return "an array"
	case time.Time:
		return "a date-time"
	}
	return fmt.Sprintf("a %T", v)
}

// clip shortens a value echoed in a message to about 100 characters.
func clip(s string) string { return clipText(s, 100) }

// schemaPathOf turns a key with indices into its schema form:
// partners[1].outages[0].for → partners[].outages[].for.
func schemaPathOf(key string) string {
	var b strings.Builder
	for i := 0; i < len(key); i++ {
		if key[i] == '[' {
			j := strings.IndexByte(key[i:], ']')
			if j < 0 {
				b.WriteString(key[i:])
				break
			}
			b.WriteString("[]")
			i += j
			continue
		}
		b.WriteByte(key[i])
	}
	return b.String()
}

// decodeTable decodes a TOML table into the struct rv; spath is the table's
// schema path. Every key must name a field.
func (ld *loader) decodeTable(m map[string]any, rv reflect.Value, path, spath string) {
	t := rv.Type()
	fields := make(map[string]int, t.NumField())
	for i := 0; i < t.NumField(); i++ {
		if tag := strings.Split(t.Field(i).Tag.Get("toml"), ",")[0]; tag != "" && tag != "-" {
			fields[tag] = i
		}
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		p := joinKey(path, k)
		i, ok := fields[k]
		if !ok {
			ld.errAt(p, unknownKeyMsg(spath, k))
			continue
		}
		f := rv.Field(i)
		sp := joinKey(spath, k)
		if f.Kind() == reflect.Slice && isTableType(f.Type().Elem()) {
			sp += "[]"
		}
		ld.decodeValue(m[k], f, p, sp)
	}
}

// unknownKeyMsg says that k is not a key of the table at spath, and
// suggests the nearest key of that table, or the same key elsewhere.
func unknownKeyMsg(spath, k string) string {
	msg := "unknown key"
	if spath != "" {
		msg = "unknown key in " + strings.ReplaceAll(spath, "[]", "")
	}
	if s, ok := nearest(k, schema()[spath].Names); ok {
		return msg + "; did you mean " + s + "?"
	}
	// A top-level key written after a [table] header belongs to that table.
	if sk, ok := schema()[k]; ok && spath != "" && sk.Kind == leafKey {
		return msg + "; " + k + " is a top-level key: put it before the first [table]"
	}
	// A key that belongs in another table: "workers" at the top level.
	var elsewhere []string
	for p, sk := range schema() {
		if sk.Kind == leafKey && (p == k || strings.HasSuffix(p, "."+k)) {
			elsewhere = append(elsewhere, strings.ReplaceAll(p, "[]", "[N]"))
		}
	}
	if len(elsewhere) > 0 && len(elsewhere) <= 3 {
		slices.Sort(elsewhere)
		return msg + "; did you mean " + strings.Join(elsewhere, " or ") + "?"
	}
	return msg
}

// decodeValue decodes one TOML value into f, whose key is path.
func (ld *loader) decodeValue(v any, f reflect.Value, path, spath string) {
	t := f.Type()
	want := func(what string) {
		ld.typeErrAt(path, fmt.Sprintf("want %s, got %s", what, tomlTypeName(v)))
	}
	switch {
	case t == durationType:
		s, ok := unitText(v)
		if !ok {
			want(`a duration with a unit, like "2s"`)
			return
		}
		d, err := ParseDuration(s)
		if err != nil {
			ld.typeErrAt(path, err.Error())
			return
		}
		f.Set(reflect.ValueOf(Duration{D: d, Set: true}))
	case t == rateType:
		s, ok := unitText(v)
		if !ok {
			want(`a rate, like "12/s"`)
			return
		}
		r, err := ParseRate(s)
		if err != nil {
			ld.typeErrAt(path, err.Error())
			return
		}
		f.Set(reflect.ValueOf(Rate{PerSecond: r, Set: true}))
	case isTableType(t):
		m, ok := v.(map[string]any)
		if !ok {
			want("a table")
			return
		}
		ld.decodeTable(m, f, path, spath)
	case t.Kind() == reflect.Slice && isTableType(t.Elem()):
		elems, ok := tableElems(v)
		if !ok {
			want("an array of tables")
			return
		}
		f.Set(reflect.MakeSlice(t, len(elems), len(elems)))
		for i, m := range elems {
			ld.decodeTable(m, f.Index(i), path+"["+strconv.Itoa(i)+"]", spath)
		}
	case t.Kind() == reflect.Slice:
		a, ok := v.([]any)
		if !ok {
			want(typeName(t))
			return
		}
		f.Set(reflect.MakeSlice(t, len(a), len(a)))
		for i, e := range a {
			ld.decodeValue(e, f.Index(i), path+"["+strconv.Itoa(i)+"]", spath)
		}
	case t.Kind() == reflect.Map && t.Key().Kind() == reflect.String:
		// A table of NAME = value (source.weights), keys in sorted order.
		m, ok := v.(map[string]any)
		if !ok {
			want("a table")
			return
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		f.Set(reflect.MakeMapWithSize(t, len(m)))
		for _, k := range keys {
			ev := reflect.New(t.Elem()).Elem()
			ld.decodeValue(m[k], ev, path+"."+k, spath)
			f.SetMapIndex(reflect.ValueOf(k), ev)
		}
	case t.Kind() == reflect.String:
		s, ok := v.(string)
		if !ok {
			want("a string")
			return
		}
		f.SetString(s)
	case t.Kind() == reflect.Bool:
		b, ok := v.(bool)
		if !ok {
			want("true or false")
			return
		}
		f.SetBool(b)
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Int64:
		n, ok := v.(int64)
		if !ok {
			want("an integer")
			return
		}
		if f.OverflowInt(n) {
			ld.typeErrAt(path, fmt.Sprintf("%d is out of range", n))
			return
		}
		f.SetInt(n)
	case t.Kind() >= reflect.Uint && t.Kind() <= reflect.Uint64:
		n, ok := v.(int64)
		if !ok {
			want("an integer")
			return
		}
		if n < 0 || f.OverflowUint(uint64(n)) {
			ld.typeErrAt(path, fmt.Sprintf("%d is out of range: want 0 or more", n))
			return
		}
		f.SetUint(uint64(n))
	case t.Kind() == reflect.Float64 || t.Kind() == reflect.Float32:
		var x float64
		switch n := v.(type) {
		case float64:
			x = n
		case int64:
			x = float64(n)
		default:
			want("a number")
			return
		}
		if math.IsNaN(x) || math.IsInf(x, 0) {
			ld.typeErrAt(path, fmt.Sprintf("want a finite number, got %v", x))
			return
		}
		f.SetFloat(x)
	default:
		ld.typeErrAt(path, fmt.Sprintf("cannot decode into %s", t))
		return
	}
	ld.present[path] = true
}

// unitText gives the text of a value that should be a string with a unit;
// a bare number is passed on so that the unit parser can say it lacks one.
func unitText(v any) (string, bool) {
	switch n := v.(type) {
	case string:
		return n, true
	case int64:
		return strconv.FormatInt(n, 10), true
	case float64:
		return strconv.FormatFloat(n, 'g', -1, 64), true
	}
	return "", false
}

// overrideSeg is one piece of an override key: name or name[index].
type overrideSeg struct {
	name  string
	index int // -1: none
}

func parseOverrideKey(key string) ([]overrideSeg, error) {
	if key == "" || len(key) > 200 {
		return nil, errors.New("bad key")
	}
	var segs []overrideSeg
	for _, piece := range strings.Split(key, ".") {
		seg := overrideSeg{name: piece, index: -1}
		if i := strings.IndexByte(piece, '['); i >= 0 {
			if !strings.HasSuffix(piece, "]") {
				return nil, fmt.Errorf("bad index in %q", piece)
			}
			n, err := strconv.Atoi(piece[i+1 : len(piece)-1])
			if err != nil || n < 0 {
				return nil, fmt.Errorf("bad index in %q", piece)
			}
			seg.name, seg.index = piece[:i], n
		}
		if seg.name == "" {
			return nil, errors.New("empty piece in key")
		}
		segs = append(segs, seg)
	}
	return segs, nil
}

// parseOverrideValue reads a TOML value; text that is not TOML is a string.
func parseOverrideValue(raw string) (v any, err error) {
	if strings.ContainsAny(raw, "\r\n") {
		return nil, errors.New("value must be on one line")
	}
	defer func() {
		if r := recover(); r != nil {
			v, err = nil, fmt.Errorf("cannot parse %q", raw)
		}
	}()
	var m map[string]any
	if _, err := toml.Decode("v = "+raw, &m); err == nil {
		if val, ok := m["v"]; ok && len(m) == 1 {
			return val, nil
		}
	}
	if t := strings.TrimSpace(raw); t != "" && !strings.ContainsAny(t[:1], `"'[{`) {
		return t, nil
	}
	return nil, fmt.Errorf("%q is not a TOML value", raw)
}

// applyOverrides sets each override in the merged tree, checking the key
// against the schema first.
func (ld *loader) applyOverrides(tree map[string]any, overrides map[string]string) {
	if len(overrides) > maxOverrides {
		ld.errs = append(ld.errs, &Error{File: ld.top, Msg: fmt.Sprintf("too many overrides (%d; at most %d)", len(overrides), maxOverrides)})
		return
	}
	keys := make([]string, 0, len(overrides))
	for k := range overrides {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, key := range keys {
		bad := func(msg string) {
			ld.errs = append(ld.errs, &Error{File: ld.top, Key: key, Msg: "override: " + msg})
		}
		segs, err := parseOverrideKey(key)
		if err != nil {
			bad(err.Error())
			continue
		}
		// Check the whole key against the schema before touching the tree.
		spath, ok := "", true
		for i, s := range segs {
			p := joinKey(spath, s.name)
			sk, known := schema()[p]
			if arr, isArr := schema()[p+"[]"]; isArr {
				sk, known, p = arr, true, p+"[]"
			}
			if p == "include" {
				bad("include cannot be overridden")
				ok = false
				break
			}
			if !known {
				bad(unknownKeyMsg(spath, s.name))
				ok = false
				break
			}
			if s.index >= 0 && sk.Kind != tableArrayKey {
				bad(fmt.Sprintf("%s is not an array of tables; it takes no index", s.name))
				ok = false
				break
			}
			if sk.Kind == leafKey && i < len(segs)-1 {
				bad(fmt.Sprintf("%s is not a table", strings.ReplaceAll(p, "[]", "")))
				ok = false
				break
			}
			spath = p
		}
		if !ok {
			continue
		}
		val, err := parseOverrideValue(overrides[key])
		if err != nil {
			bad(err.Error())
			continue
		}
		if msg := ld.setOverride(tree, segs, "", "", val); msg != "" {
			bad(msg)
		}
	}
}

// setOverride sets segs under the table m (at path) to val.
func (ld *loader) setOverride(m map[string]any, segs []overrideSeg, path, spath string, val any) string {
	s := segs[0]
	p := joinKey(path, s.name)
	sp := joinKey(spath, s.name)
	if len(segs) == 1 && s.index < 0 {
		m[s.name] = val
		ld.markOverride(p)
		return ""
	}
	if _, isArr := schema()[sp+"[]"]; isArr {
		elems, ok := tableElems(m[s.name])
		if !ok || len(elems) == 0 {
			return fmt.Sprintf("the drill has no %s", s.name)
		}
		if s.index >= len(elems) {
			return fmt.Sprintf("%s[%d] does not exist; the drill has %d", s.name, s.index, len(elems))
		}
		for i, e := range elems {
			if s.index >= 0 && i != s.index {
				continue
			}
			ep := p + "[" + strconv.Itoa(i) + "]"
			if len(segs) == 1 {
				// The whole element is replaced.
				if vm, ok := val.(map[string]any); ok {
					elems[i] = vm
					if a, ok := m[s.name].([]any); ok {
						a[i] = vm
					}
					ld.markOverride(ep)
					continue
				}
				return fmt.Sprintf("%s[%d] takes a table", s.name, i)
			}
			if msg := ld.setOverride(e, segs[1:], ep, sp+"[]", val); msg != "" {
				return msg
			}
		}
		return ""
	}
	sub, ok := m[s.name].(map[string]any)
	if !ok {
		if _, exists := m[s.name]; exists {
			return fmt.Sprintf("%s is not a table in the drill", p)
		}
		sub = map[string]any{}
		m[s.name] = sub
	}
	return ld.setOverride(sub, segs[1:], p, sp, val)
}

func (ld *loader) markOverride(p string) {
	for k := range ld.origins {
		if hasKeyPrefix(k, p) {
			delete(ld.origins, k)
		}
	}
	ld.origins[p] = origin{file: ld.top, override: true}
}

// checkTOMLShape refuses text nested deeper than MaxNestingDepth, with a
// key of more than MaxKeyParts parts or with an array (inline, or the
// [[tables]] of one name under one parent) of more than MaxArrayElements,
// in one linear pass and before the decoder sees it. It reads just enough
// TOML to skip strings and comments and to tell keys from values; anything
// else is left for the decoder.
func checkTOMLShape(name string, data []byte) *Error {
	var (
		open      []byte // the [ and { open at this point, innermost last
		elems     []int  // commas seen in each open [ (and { alike)
		line      = 1
		lineStart = 0    // offset of the current line
		inKey     = true // at the start of a line, keys come first
		parts     = 1    // parts of the key being read
		header    = 0    // depth of an open [table] or [[table]] header
		hdrStart  = 0    // offset of the header's first bracket
		hdrDouble = false
		table     = ""               // the last table header's name
		key       = ""               // the key whose value is being read
		arrayLine = 0                // where the outermost open array started
		tables    = map[string]int{} // [[name]] count under the parent's current element
	)
	fail := func(msg string) *Error { return &Error{File: name, Line: line, Msg: msg} }
	tooMany := func(at int, k string) *Error {
		return &Error{File: name, Line: at, Key: k, Msg: fmt.Sprintf("an array of more than %d elements (no [limits] ceiling goes above %d)", MaxArrayElements, MaxArrayElements)}
	}
	for i := 0; i < len(data); i++ {
		c := data[i]
		switch {
		case c == '\n':
			line++
			lineStart = i + 1
			if len(open) == 0 {
				inKey, parts = true, 1
			}
		case c == '#':
			for i+1 < len(data) && data[i+1] != '\n' {
				i++
			}
		case c == '"' || c == '\'':
			// A string: skip to its end, counting lines. Three quotes open
			// a multi-line string; a backslash escapes in basic strings.
			quote := []byte{c}
			if i+2 < len(data) && data[i+1] == c && data[i+2] == c {
				quote = []byte{c, c, c}
			}
			j := i + len(quote)
			for j < len(data) && !bytesAt(data, j, quote) {
				if data[j] == '\\' && c == '"' {
					j++
				}
				if j < len(data) && data[j] == '\n' {
					line++
					lineStart = j + 1
				}
				j++
			}
			i = j + len(quote) - 1
		case c == '.' && inKey:
			parts++
			if parts > MaxKeyParts {
				return fail(fmt.Sprintf("a key with more than %d dotted parts", MaxKeyParts))
			}
		case c == '=' && inKey:
			if len(open) == 0 {
				key = joinKey(table, strings.TrimSpace(string(data[lineStart:i])))
			}
			inKey, parts = false, 1
		case c == '[' && inKey && (len(open) == 0 || header > 0):
			header++ // [table] or [[array of tables]]
			if header > 2 {
				return fail("a table header with too many brackets")
			}
			if header == 1 {
				hdrStart = i
			}
			hdrDouble = header == 2
		case c == ']' && header > 0:
			header--
			if header == 0 {
				inKey, parts = false, 1
				table = strings.TrimSpace(strings.Trim(string(data[hdrStart:i+1]), "[]"))
				if hdrDouble {
					// Count this element among its siblings: the tables of
					// this name under the parent's current element.
					parent := parentKey(table)
					slot := table + "#" + strconv.Itoa(tables[parent+"#"])
					if parent == "" {
						slot = table
					}
					if tables[slot]++; tables[slot] > MaxArrayElements {
						return tooMany(line, table)
					}
					tables[table+"#"] = tables[slot] // the parent's current element, for nested arrays
				}
			}
		case c == '[' || c == '{':
			if len(open) == 0 {
				arrayLine = line
			}
			open = append(open, c)
			elems = append(elems, 0)
			if len(open) > MaxNestingDepth {
				return fail(fmt.Sprintf("nested deeper than %d levels", MaxNestingDepth))
			}
			inKey, parts = c == '{', 1
		case c == ']' || c == '}':
			if len(open) > 0 {
				open = open[:len(open)-1]
				elems = elems[:len(elems)-1]
			}
			inKey = false
		case c == ',':
			// In an inline table a comma starts the next key.
			inKey, parts = len(open) > 0 && open[len(open)-1] == '{', 1
			if n := len(elems); n > 0 && open[n-1] == '[' {
				if elems[n-1]++; elems[n-1] >= MaxArrayElements {
					return tooMany(arrayLine, key)
				}
			}
		}
	}
	return nil
}

// bytesAt reports whether data holds want at i.
func bytesAt(data []byte, i int, want []byte) bool {
	return i+len(want) <= len(data) && string(data[i:i+len(want)]) == string(want)
}
