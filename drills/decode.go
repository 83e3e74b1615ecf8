package drills

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

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
	var ok bool
	switch t := f.Type(); {
	case t == durationType:
		ok = ld.decodeWithUnit(v, f, path, `a duration with a unit, like "2s"`, parseDurationValue)
	case t == rateType:
		ok = ld.decodeWithUnit(v, f, path, `a rate, like "12/s"`, parseRateValue)
	case isTableType(t):
		var m map[string]any
		if m, ok = v.(map[string]any); !ok {
			ld.wantErr(path, "a table", v)
		} else {
			ld.decodeTable(m, f, path, spath)
		}
	case t.Kind() == reflect.Slice:
		ok = ld.decodeArray(v, f, path, spath)
	case t.Kind() == reflect.Map && t.Key().Kind() == reflect.String:
		ok = ld.decodeNamedValues(v, f, path, spath)
	default:
		ok = ld.decodeScalar(v, f, path)
	}
	if ok {
		ld.present[path] = true
	}
}

// wantErr says that the value v at path is not the what it should be.
func (ld *loader) wantErr(path, what string, v any) {
	ld.typeErrAt(path, fmt.Sprintf("want %s, got %s", what, tomlTypeName(v)))
}

// decodeWithUnit decodes text with a unit (a duration, a rate) into f:
// parse reads it into f's type; want says what was expected when v is no
// such text.
func (ld *loader) decodeWithUnit(v any, f reflect.Value, path, want string, parse func(string) (any, error)) bool {
	s, ok := unitText(v)
	if !ok {
		ld.wantErr(path, want, v)
		return false
	}
	x, err := parse(s)
	if err != nil {
		ld.typeErrAt(path, err.Error())
		return false
	}
	f.Set(reflect.ValueOf(x))
	return true
}

func parseDurationValue(s string) (any, error) {
	d, err := ParseDuration(s)
	return Duration{D: d, Set: true}, err
}

func parseRateValue(s string) (any, error) {
	r, err := ParseRate(s)
	return Rate{PerSecond: r, Set: true}, err
}

// decodeArray decodes an array of tables, or an array of values, into the
// slice f.
func (ld *loader) decodeArray(v any, f reflect.Value, path, spath string) bool {
	t := f.Type()
	if isTableType(t.Elem()) {
		elems, ok := tableElems(v)
		if !ok {
			ld.wantErr(path, "an array of tables", v)
			return false
		}
		f.Set(reflect.MakeSlice(t, len(elems), len(elems)))
		for i, m := range elems {
			ld.decodeTable(m, f.Index(i), path+"["+strconv.Itoa(i)+"]", spath)
		}
		return true
	}
	a, ok := v.([]any)
	if !ok {
		ld.wantErr(path, typeName(t), v)
		return false
	}
	f.Set(reflect.MakeSlice(t, len(a), len(a)))
	for i, e := range a {
		ld.decodeValue(e, f.Index(i), path+"["+strconv.Itoa(i)+"]", spath)
	}
	return true
}

// decodeNamedValues decodes a table of NAME = value (source.weights) into
// the map f, keys in sorted order.
func (ld *loader) decodeNamedValues(v any, f reflect.Value, path, spath string) bool {
	t := f.Type()
	m, ok := v.(map[string]any)
	if !ok {
		ld.wantErr(path, "a table", v)
		return false
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
	return true
}

// decodeScalar decodes a string, a boolean or a number into f.
func (ld *loader) decodeScalar(v any, f reflect.Value, path string) bool {
	switch k := f.Kind(); {
	case k == reflect.String:
		s, ok := v.(string)
		if !ok {
			ld.wantErr(path, "a string", v)
			return false
		}
		f.SetString(s)
	case k == reflect.Bool:
		b, ok := v.(bool)
		if !ok {
			ld.wantErr(path, "true or false", v)
			return false
		}
		f.SetBool(b)
	case k >= reflect.Int && k <= reflect.Int64, k >= reflect.Uint && k <= reflect.Uint64:
		return ld.decodeInteger(v, f, path)
	case k == reflect.Float64 || k == reflect.Float32:
		return ld.decodeFloat(v, f, path)
	default:
		ld.typeErrAt(path, fmt.Sprintf("cannot decode into %s", f.Type()))
		return false
	}
	return true
}

// decodeInteger decodes an integer into the signed or unsigned f, in its
// range.
func (ld *loader) decodeInteger(v any, f reflect.Value, path string) bool {
	n, ok := v.(int64)
	if !ok {
		ld.wantErr(path, "an integer", v)
		return false
	}
	if k := f.Kind(); k >= reflect.Int && k <= reflect.Int64 {
		if f.OverflowInt(n) {
			ld.typeErrAt(path, fmt.Sprintf("%d is out of range", n))
			return false
		}
		f.SetInt(n)
		return true
	}
	if n < 0 || f.OverflowUint(uint64(n)) {
		ld.typeErrAt(path, fmt.Sprintf("%d is out of range: want 0 or more", n))
		return false
	}
	f.SetUint(uint64(n))
	return true
}

// decodeFloat decodes a finite number, integer or float, into f.
func (ld *loader) decodeFloat(v any, f reflect.Value, path string) bool {
	var x float64
	switch n := v.(type) {
	case float64:
		x = n
	case int64:
		x = float64(n)
	default:
		ld.wantErr(path, "a number", v)
		return false
	}
	if math.IsNaN(x) || math.IsInf(x, 0) {
		ld.typeErrAt(path, fmt.Sprintf("want a finite number, got %v", x))
		return false
	}
	f.SetFloat(x)
	return true
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
