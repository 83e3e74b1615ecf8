package drills

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
)

// Bounds on the shape of TOML text, checked before it is decoded.
const (
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
