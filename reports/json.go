package reports

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
)

// jsonDecimals is how many decimals floats keep in summary.json: microsecond
// resolution for seconds, 0.0001% for fractions. Rounding makes the file
// stable across platforms whose floating-point results differ in the last
// bits, and readable.
const jsonDecimals = 6

// maxSummaryBytes bounds how much ReadSummary reads.
const maxSummaryBytes = 64 << 20

// WriteSummaryJSON writes s as indented JSON with a trailing newline. Floats
// are rounded to jsonDecimals; map keys are sorted by encoding/json. A NaN or
// infinite figure is an error that names the field, not a silent zero.
func WriteSummaryJSON(w io.Writer, s *Summary) error {
	if s == nil {
		return fmt.Errorf("summary.json: no summary")
	}
	v, err := roundedCopy(reflect.ValueOf(*s), "summary")
	if err != nil {
		return fmt.Errorf("summary.json: %w", err)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false) // gate expressions contain < and >
	if err := enc.Encode(v.Interface()); err != nil {
		return fmt.Errorf("summary.json: %w", err)
	}
	_, err = w.Write(buf.Bytes())
	return err
}

// ReadSummary reads summary.json from a run directory or from the file's own
// path.
func ReadSummary(path string) (*Summary, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if fi.IsDir() {
		path = filepath.Join(path, "summary.json")
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxSummaryBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(data) > maxSummaryBytes {
		return nil, fmt.Errorf("%s: larger than %d bytes; not a summary.json", path, maxSummaryBytes)
	}
	var s Summary
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &s, nil
}

// RoundFloat rounds to jsonDecimals decimals; values too large for that to
// matter are returned as they are.
func RoundFloat(v float64) float64 {
	const scale = 1e6
	if math.Abs(v) >= 1e15/scale {
		return v
	}
	r := math.Round(v*scale) / scale
	if r == 0 {
		return 0 // no "-0" in the output
	}
	return r
}

// roundedCopy deep-copies v, rounding every float on the way, so the
// caller's summary is left untouched. Nil slices and maps become empty ones. path names the field for errors.
func roundedCopy(v reflect.Value, path string) (reflect.Value, error) {
	switch v.Kind() {
	case reflect.Float32, reflect.Float64:
		f := v.Float()
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return v, fmt.Errorf("%s is %v", path, f)
		}
		out := reflect.New(v.Type()).Elem()
		out.SetFloat(RoundFloat(f))
		return out, nil
	case reflect.Pointer:
		if v.IsNil() {
			return v, nil
		}
		e, err := roundedCopy(v.Elem(), path)
		if err != nil {
			return v, err
		}
		out := reflect.New(v.Type().Elem())
		out.Elem().Set(e)
		return out, nil
	case reflect.Struct:
		out := reflect.New(v.Type()).Elem()
		for i := range v.NumField() {
			f := v.Type().Field(i)
			if !f.IsExported() {
				continue
			}
			c, err := roundedCopy(v.Field(i), path+"."+f.Name)
			if err != nil {
				return v, err
			}
			out.Field(i).Set(c)
		}
		return out, nil
	case reflect.Slice:
		// Nil becomes empty so that readers see [] rather than null; the
		// omitempty fields are omitted either way.
		out := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		for i := range v.Len() {
			c, err := roundedCopy(v.Index(i), fmt.Sprintf("%s[%d]", path, i))
			if err != nil {
				return v, err
			}
			out.Index(i).Set(c)
		}
		return out, nil
	case reflect.Map:
		out := reflect.MakeMapWithSize(v.Type(), v.Len())
		iter := v.MapRange()
		for iter.Next() {
			c, err := roundedCopy(iter.Value(), fmt.Sprintf("%s[%v]", path, iter.Key()))
			if err != nil {
				return v, err
			}
			out.SetMapIndex(iter.Key(), c)
		}
		return out, nil
	}
	return v, nil
}
