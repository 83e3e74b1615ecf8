package experiments

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/BurntSushi/toml"

	"github.com/stormdrill/stormdrill/drills"
	"github.com/stormdrill/stormdrill/reports"
)

// Limits on an experiment file, so that a typo cannot queue a year of runs.
const (
	MaxExperimentBytes = 1 << 20
	MaxAxes            = 4
	MaxAxisValues      = 200
	MaxSeeds           = 1000
	MaxRuns            = 20_000 // cells × seeds
	MaxMetrics         = 50
)

// DrillAxis is the axis key whose values are drill files instead of values
// of a key: each cell runs a different drill.
const DrillAxis = "drill"

// Experiment is one experiment file as loaded: a base drill (or an axis over
// drill files), overrides applied to every cell, the axes and the seeds.
type Experiment struct {
	Path        string // the experiment file
	Name        string
	Description string
	// Drill is the base drill's path, resolved against the experiment
	// file's directory; "" when an axis over drill files gives it.
	Drill string
	// Seeds is how many seeds each cell runs: Seed, Seed+1, …
	Seeds int
	// Seed is the first seed; nil: each cell's drill's own seed.
	Seed *uint64
	// Metrics are the figures reported per cell (reports.MetricNames or
	// DerivedMetricNames).
	Metrics []string
	// Overrides apply to every cell, before the axes' values: dotted drill
	// key → TOML literal, as drills.Load takes them.
	Overrides map[string]string
	Axes      []Axis

	lines map[string]int // the experiment file's keys → their lines
}

// at is where key, or its nearest ancestor, is written in the experiment
// file.
func (e *Experiment) at(key string) int {
	for k := key; k != ""; k = parentKey(k) {
		if l, ok := e.lines[k]; ok {
			return l
		}
		if l := e.firstLineIgnoringIndex(k); l > 0 {
			return l
		}
	}
	return 0
}

// firstLineIgnoringIndex finds a key that TOML's undecoded list names
// without its array index (axes.lables for axes[0].lables): the first line
// where a key of that name stands, in whichever element.
func (e *Experiment) firstLineIgnoringIndex(key string) int {
	first := 0
	for k, l := range e.lines {
		if strings.Contains(k, "[") && withoutIndices(k) == key && (first == 0 || l < first) {
			first = l
		}
	}
	return first
}

// withoutIndices drops every [N] from a key path: a.b[2].c → a.b.c.
func withoutIndices(k string) string {
	var b strings.Builder
	depth := 0
	for _, r := range k {
		switch {
		case r == '[':
			depth++
		case r == ']' && depth > 0:
			depth--
		case depth == 0:
			b.WriteRune(r)
		}
	}
	return b.String()
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

// Axis is one dimension of the sweep.
type Axis struct {
	// Key is the drill key the values set, DrillAxis for drill files, or
	// only a name when the values are tables of overrides.
	Key    string
	Values []AxisValue
}

// AxisValue is one value of an axis.
type AxisValue struct {
	Label string
	// Overrides this value sets: dotted drill key → TOML literal.
	Overrides map[string]string
	// Drill is the drill file of a DrillAxis value, resolved.
	Drill string
	// X is the value as a number for plots (a number, or a duration or rate
	// in seconds or per second); Numeric says whether it is one.
	X       float64
	Numeric bool
}

// rawExperiment is the file as TOML decodes it.
type rawExperiment struct {
	Name        string         `toml:"name"`
	Description string         `toml:"description"`
	Drill       string         `toml:"drill"`
	Seeds       *int64         `toml:"seeds"`
	Seed        *int64         `toml:"seed"`
	Metrics     []string       `toml:"metrics"`
	Overrides   map[string]any `toml:"overrides"`
	Axes        []rawAxis      `toml:"axes"`
}

type rawAxis struct {
	Key    string   `toml:"key"`
	Values []any    `toml:"values"`
	Labels []string `toml:"labels"`
}

// LoadExperiment reads and checks an experiment file. Unknown keys, wrong
// types and impossible values are refused as drills.Errors, each
// "FILE:LINE: key: what is wrong". Every cell's drill is loaded once, so a
// bad override is reported before anything runs.
//
// A bare name such as "retry-storm" (no path separator, no .toml) loads the
// bundled experiment of that name when no file of that name exists; its
// path is then the one it has in the source tree, "experiments/retry-storm.toml".
func LoadExperiment(path string) (*Experiment, error) {
	path, data, err := readExperimentFile(path)
	if err != nil {
		return nil, drills.Errors{{File: path, Msg: err.Error()}}
	}
	e, err := parseExperiment(path, data)
	if err != nil {
		return nil, err
	}
	if _, err := e.loadCells(); err != nil {
		return nil, err
	}
	return e, nil
}

func readSmallFile(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, errors.New("no such file")
		}
		return nil, fmt.Errorf("cannot read: %v", err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && !fi.Mode().IsRegular() {
		return nil, errors.New("not a regular file")
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("cannot read: %v", err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("larger than %d bytes", limit)
	}
	return data, nil
}

var experimentKeys = map[string][]string{
	"":     {"name", "description", "drill", "seeds", "seed", "metrics", "overrides", "axes"},
	"axes": {"key", "values", "labels"},
}

func parseExperiment(path string, data []byte) (e *Experiment, err error) {
	defer func() {
		// The parser is third-party; a panic in it must not take the CLI down.
		if r := recover(); r != nil {
			e, err = nil, drills.Errors{{File: path, Msg: fmt.Sprintf("cannot parse: %v", r)}}
		}
	}()
	src := string(data)
	var raw rawExperiment
	md, derr := toml.Decode(src, &raw)
	if derr != nil {
		var pe toml.ParseError
		if errors.As(derr, &pe) {
			return nil, drills.Errors{{File: path, Line: max(pe.Position.Line, 0), Msg: pe.Message}}
		}
		return nil, drills.Errors{{File: path, Msg: strings.TrimPrefix(derr.Error(), "toml: ")}}
	}
	lines := drills.KeyLines(src)
	ep := &experimentParse{path: path, dir: filepath.Dir(path),
		e: &Experiment{Path: path, Name: raw.Name, Description: raw.Description, Metrics: raw.Metrics, Overrides: map[string]string{}, lines: lines}}
	ep.unknownKeys(md)
	ep.head(&raw)
	ep.metrics()
	ep.overrides(raw.Overrides)
	ep.axes(raw.Axes)
	if len(ep.errs) > 0 {
		return nil, ep.errs
	}
	return ep.e, nil
}

// experimentParse is one parseExperiment's state: the experiment so far
// and what is wrong with it.
type experimentParse struct {
	path, dir string
	e         *Experiment
	errs      drills.Errors
}

func (ep *experimentParse) bad(key, format string, args ...any) {
	ep.errs = append(ep.errs, &drills.Error{File: ep.path, Line: ep.e.at(key), Key: key, Msg: fmt.Sprintf(format, args...)})
}

// unknownKeys reports the keys the experiment format does not have; the
// drill keys under overrides and an axis's tables are checked when the
// drills load.
func (ep *experimentParse) unknownKeys(md toml.MetaData) {
	for _, k := range md.Undecoded() {
		if len(k) > 0 && k[0] == "overrides" || len(k) > 2 && k[0] == "axes" && k[1] == "values" {
			continue
		}
		parent := ""
		if len(k) > 1 {
			parent = k[0]
		}
		msg := "unknown key"
		if parent != "" {
			msg = "unknown key in " + parent
		}
		if names, ok := experimentKeys[parent]; ok {
			msg += "; the keys are " + strings.Join(names, ", ")
		}
		ep.bad(k.String(), "%s", msg)
	}
}

// head reads the name, the base drill and the seeds.
func (ep *experimentParse) head(raw *rawExperiment) {
	e := ep.e
	if e.Name == "" {
		e.Name = strings.TrimSuffix(filepath.Base(ep.path), filepath.Ext(ep.path))
	}
	if !validName().MatchString(e.Name) {
		ep.bad("name", "%q: letters, digits, '.', '_' and '-' only (it names the output directory)", e.Name)
	}
	if raw.Drill != "" {
		e.Drill = resolve(ep.dir, raw.Drill)
		if err := checkDrillFile(ep.path, e.Drill); err != nil {
			ep.bad("drill", "%q: %v", clipName(raw.Drill), err)
		}
	}
	e.Seeds = 1
	if raw.Seeds != nil {
		if *raw.Seeds < 1 || *raw.Seeds > MaxSeeds {
			ep.bad("seeds", "must be between 1 and %d (got %d)", MaxSeeds, *raw.Seeds)
		} else {
			e.Seeds = int(*raw.Seeds)
		}
	}
	if raw.Seed != nil {
		if *raw.Seed < 0 {
			ep.bad("seed", "must be 0 or more (got %d)", *raw.Seed)
		} else {
			s := uint64(*raw.Seed)
			e.Seed = &s
		}
	}
}

// metrics checks the metric names.
func (ep *experimentParse) metrics() {
	ms := ep.e.Metrics
	if len(ms) == 0 {
		ep.bad("metrics", "name at least one metric, such as \"amplification\"")
	}
	if len(ms) > MaxMetrics {
		ep.bad("metrics", "at most %d metrics (got %d)", MaxMetrics, len(ms))
	}
	for i, m := range ms {
		if err := CheckMetric(m); err != nil {
			ep.bad("metrics", "metrics[%d]: %v", i, err)
		}
	}
}

// overrides turns the overrides table into TOML literals.
func (ep *experimentParse) overrides(raw map[string]any) {
	for _, k := range sortedKeys(raw) {
		lit, err := tomlLiteral(raw[k])
		if err != nil {
			ep.bad("overrides."+k, "%v", err)
			continue
		}
		ep.e.Overrides[k] = lit
	}
}

// axes reads the axes and bounds the runs they make.
func (ep *experimentParse) axes(raws []rawAxis) {
	if len(raws) == 0 {
		ep.bad("axes", "give at least one [[axes]] with a key and values")
	}
	if len(raws) > MaxAxes {
		ep.bad("axes", "at most %d axes (got %d)", MaxAxes, len(raws))
	}
	runs := ep.e.Seeds
	hasDrillAxis := false
	setBy := map[string]int{} // drill key → the axis that sets it
	for i, ra := range raws {
		ep.e.Axes = append(ep.e.Axes, ep.axis(i, ra, setBy))
		hasDrillAxis = hasDrillAxis || ra.Key == DrillAxis
		if n := len(ra.Values); n > 0 && runs <= MaxRuns {
			runs *= n
		}
	}
	if runs > MaxRuns {
		ep.bad("axes", "cells × seeds is more than %d runs", MaxRuns)
	}
	if ep.e.Drill == "" && !hasDrillAxis {
		ep.bad("drill", "required: the base drill, relative to this file (or an axis with key = %q)", DrillAxis)
	}
}

// axis reads axes[i]; setBy notes which axis sets each drill key, so that
// two axes setting one key are refused.
func (ep *experimentParse) axis(i int, ra rawAxis, setBy map[string]int) Axis {
	key := "axes[" + strconv.Itoa(i) + "]"
	a := Axis{Key: ra.Key}
	if ra.Key == "" {
		ep.bad(key+".key", "required: the drill key the values set, or %q", DrillAxis)
	}
	if len(ra.Values) == 0 || len(ra.Values) > MaxAxisValues {
		ep.bad(key+".values", "give between 1 and %d values (got %d)", MaxAxisValues, len(ra.Values))
	}
	if len(ra.Labels) > 0 && len(ra.Labels) != len(ra.Values) {
		ep.bad(key+".labels", "%d labels for %d values: give one label per value, or none", len(ra.Labels), len(ra.Values))
	}
	seen := map[string]bool{}
	for j, v := range ra.Values {
		vkey := fmt.Sprintf("%s.values[%d]", key, j)
		av, err := ep.axisValue(ra.Key, v)
		if err != nil {
			ep.bad(vkey, "%v", err)
			continue
		}
		// Two axes that set one drill key: the second would silently win.
		for k := range av.Overrides {
			if prev, dup := setBy[k]; dup && prev != i {
				ep.bad(vkey, "sets %s, which axes[%d] sets too: one axis per key (or one axis of tables that set both)", k, prev)
				delete(av.Overrides, k)
				continue
			}
			setBy[k] = i
		}
		if j < len(ra.Labels) && ra.Labels[j] != "" {
			av.Label = ra.Labels[j]
		}
		if seen[av.Label] {
			ep.bad(vkey, "%q appears twice (give labels to tell the values apart)", av.Label)
		}
		seen[av.Label] = true
		a.Values = append(a.Values, av)
	}
	return a
}

// axisValue converts one value of an axis, checking a drill file's name.
func (ep *experimentParse) axisValue(key string, v any) (AxisValue, error) {
	av, err := axisValue(ep.dir, key, v)
	if err == nil && av.Drill != "" {
		if ferr := checkDrillFile(ep.path, av.Drill); ferr != nil {
			return av, fmt.Errorf("%q: %v", clipName(v.(string)), ferr)
		}
	}
	return av, err
}

// checkDrillFile checks, before any cell loads it, that a drill named by
// the experiment at path is a .toml file other than the experiment
// itself: an experiment's drill = "/etc/passwd" must not be parsed and
// quoted back in error messages.
func checkDrillFile(path, drill string) error {
	if filepath.Ext(drill) != ".toml" {
		return errors.New("a drill file ends in .toml")
	}
	a, err1 := filepath.Abs(path)
	b, err2 := filepath.Abs(drill)
	if err1 == nil && err2 == nil && a == b {
		return errors.New("names this experiment file; name the drill it sweeps")
	}
	fi, err := os.Stat(drill)
	if _, _, ok := bundledDrill(drill); ok && errors.Is(err, os.ErrNotExist) {
		return nil // read from the binary
	}
	switch {
	case errors.Is(err, os.ErrNotExist):
		return errors.New("no such file (a relative name is taken from the experiment file's directory)")
	case err != nil:
		return fmt.Errorf("cannot read: %v", err)
	case !fi.Mode().IsRegular():
		return errors.New("not a regular file")
	}
	return nil
}

// clipName shortens a name echoed in a message.
func clipName(s string) string {
	if len(s) > 100 {
		return s[:97] + "..."
	}
	return s
}

var validName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9._-]{1,100}$`) })

func resolve(dir, p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(dir, p)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// axisValue converts one TOML value of an axis.
func axisValue(dir, key string, v any) (AxisValue, error) {
	if key == DrillAxis {
		s, ok := v.(string)
		if !ok || s == "" {
			return AxisValue{}, fmt.Errorf("want a drill file name, got %T", v)
		}
		return AxisValue{Label: strings.TrimSuffix(filepath.Base(s), filepath.Ext(s)), Drill: resolve(dir, s)}, nil
	}
	if m, ok := v.(map[string]any); ok {
		// A table sets several keys at once; the axis key is then its name.
		av := AxisValue{Overrides: map[string]string{}}
		var parts []string
		for _, k := range sortedKeys(m) {
			lit, err := tomlLiteral(m[k])
			if err != nil {
				return AxisValue{}, fmt.Errorf("%s: %v", k, err)
			}
			av.Overrides[k] = lit
			parts = append(parts, k+"="+displayLiteral(lit))
		}
		if len(parts) == 0 {
			return AxisValue{}, errors.New("an empty table sets nothing")
		}
		av.Label = strings.Join(parts, " ")
		return av, nil
	}
	lit, err := tomlLiteral(v)
	if err != nil {
		return AxisValue{}, err
	}
	av := AxisValue{Label: displayLiteral(lit), Overrides: map[string]string{key: lit}}
	av.X, av.Numeric = numericValue(v)
	return av, nil
}

// numericValue reads a number, a duration (seconds) or a rate (per second).
func numericValue(v any) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case float64:
		return n, !math.IsNaN(n) && !math.IsInf(n, 0)
	case string:
		if d, err := drills.ParseDuration(n); err == nil {
			return d.Seconds(), true
		}
		if r, err := drills.ParseRate(n); err == nil {
			return r, true
		}
	}
	return 0, false
}

// tomlLiteral writes a decoded TOML value back as TOML text for
// drills.Load's overrides.
func tomlLiteral(v any) (string, error) {
	switch n := v.(type) {
	case string:
		var b strings.Builder
		if err := toml.NewEncoder(&b).Encode(map[string]any{"v": n}); err != nil {
			return "", err
		}
		return strings.TrimSpace(strings.TrimPrefix(b.String(), "v = ")), nil
	case int64:
		return strconv.FormatInt(n, 10), nil
	case float64:
		if math.IsNaN(n) || math.IsInf(n, 0) {
			return "", fmt.Errorf("want a finite number, got %v", n)
		}
		s := strconv.FormatFloat(n, 'g', -1, 64)
		if !strings.ContainsAny(s, ".eE") {
			s += ".0"
		}
		return s, nil
	case bool:
		return strconv.FormatBool(n), nil
	case []any:
		parts := make([]string, 0, len(n))
		for _, e := range n {
			s, err := tomlLiteral(e)
			if err != nil {
				return "", err
			}
			parts = append(parts, s)
		}
		return "[" + strings.Join(parts, ", ") + "]", nil
	case map[string]any:
		parts := make([]string, 0, len(n))
		for _, k := range sortedKeys(n) {
			s, err := tomlLiteral(n[k])
			if err != nil {
				return "", err
			}
			parts = append(parts, strconv.Quote(k)+" = "+s)
		}
		return "{" + strings.Join(parts, ", ") + "}", nil
	}
	return "", fmt.Errorf("a %T cannot be a drill value", v)
}

// displayLiteral is a literal as a label: strings without their quotes.
func displayLiteral(lit string) string {
	if s, err := strconv.Unquote(lit); err == nil {
		return s
	}
	return lit
}

// CheckMetric reports whether name is a metric a sweep can report.
func CheckMetric(name string) error {
	if slices.Contains(DerivedMetricNames(), name) {
		return nil
	}
	_, _, err := (&reports.Summary{}).Metric(name)
	return err
}

// Cell is one point of the sweep's grid.
type Cell struct {
	Index  int
	Values []int // index into each axis's values
	Labels []string
	Drill  string
	// Overrides are the experiment's overrides with the cell's values on
	// top.
	Overrides map[string]string
	seed      uint64 // the loaded drill's seed
	// from maps each override's drill key to the experiment key that set
	// it (overrides.K, axes[I].values[J]), and keyFrom to the key that
	// named it (axes[I].key), for errors at the experiment's own lines.
	from, keyFrom map[string]string
}

// Cells lists the grid, the last axis varying fastest.
func (e *Experiment) Cells() []Cell {
	n := 1
	for _, a := range e.Axes {
		n *= len(a.Values)
	}
	cells := make([]Cell, 0, n)
	idx := make([]int, len(e.Axes))
	for c := 0; c < n; c++ {
		cell := Cell{Index: c, Values: slices.Clone(idx), Drill: e.Drill, Overrides: map[string]string{},
			from: map[string]string{}, keyFrom: map[string]string{}}
		for k, v := range e.Overrides {
			cell.Overrides[k] = v
			cell.from[k], cell.keyFrom[k] = "overrides."+k, "overrides."+k
		}
		for ai, a := range e.Axes {
			v := a.Values[idx[ai]]
			cell.Labels = append(cell.Labels, v.Label)
			val := "axes[" + strconv.Itoa(ai) + "].values[" + strconv.Itoa(idx[ai]) + "]"
			if v.Drill != "" {
				cell.Drill = v.Drill
			}
			for k, lit := range v.Overrides {
				cell.Overrides[k] = lit
				if k == a.Key {
					cell.from[k], cell.keyFrom[k] = val, "axes["+strconv.Itoa(ai)+"].key"
				} else {
					cell.from[k], cell.keyFrom[k] = val+"."+k, val+"."+k
				}
			}
		}
		cells = append(cells, cell)
		for ai := len(idx) - 1; ai >= 0; ai-- {
			idx[ai]++
			if idx[ai] < len(e.Axes[ai].Values) {
				break
			}
			idx[ai] = 0
		}
	}
	return cells
}

// blame moves a drill error that an override caused to the experiment
// line that set the override, naming the drill key in the message, and
// reports whether it did.
func (e *Experiment) blame(c *Cell, x *drills.Error) bool {
	msg, byOverride := strings.CutSuffix(x.Msg, " (set by override)")
	keyMsg, badKey := strings.CutPrefix(x.Msg, "override: ")
	var src string
	switch {
	case badKey:
		src, msg = c.keyFrom[x.Key], keyMsg
	case byOverride:
		for k, from := range c.from {
			if overrideCovers(k, x.Key) && (src == "" || len(from) > len(src)) {
				src = from
			}
		}
	}
	if src == "" {
		return false
	}
	x.File, x.Line, x.Key, x.Msg = e.Path, e.at(src), src, x.Key+": "+msg
	return true
}

// overrideCovers reports whether the override of key k set drill key
// key: the same key or one under it, "partners.count" covering
// "partners[2].count".
func overrideCovers(k, key string) bool {
	var b strings.Builder
	for i := 0; i < len(key); i++ {
		if key[i] == '[' {
			for i < len(key) && key[i] != ']' {
				i++
			}
			continue
		}
		b.WriteByte(key[i])
	}
	bare := b.String()
	for _, kk := range []string{key, bare} {
		if kk == k || strings.HasPrefix(kk, k+".") || strings.HasPrefix(kk, k+"[") {
			return true
		}
	}
	return false
}

// loadCells loads every cell's drill once, so that a bad value is refused
// before anything runs, and notes each drill's own seed.
func (e *Experiment) loadCells() ([]Cell, error) {
	cells := e.Cells()
	var errs drills.Errors
	seen := map[string]bool{}
	for i := range cells {
		d, err := loadDrill(cells[i].Drill, cells[i].Overrides)
		if err != nil {
			es, ok := drills.AsErrors(err)
			if !ok {
				return nil, err
			}
			for _, x := range es {
				if e.blame(&cells[i], x) && seen[x.Error()] {
					continue // every cell with that value says the same
				}
				seen[x.Error()] = true
				if x.File != e.Path {
					x.Msg += " (cell " + strings.Join(cells[i].Labels, ", ") + ")"
				}
				errs = append(errs, x)
			}
			if len(errs) >= drills.MaxErrors {
				break
			}
			continue
		}
		cells[i].seed = d.Seed
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return cells, nil
}
