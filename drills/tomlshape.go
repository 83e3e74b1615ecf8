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
	sc := &shapeScan{name: name, data: data, line: 1, inKey: true, parts: 1, tables: map[string]int{}}
	for sc.i = 0; sc.i < len(data); sc.i++ {
		if e := sc.step(); e != nil {
			return e
		}
	}
	return nil
}

// shapeScan is checkTOMLShape's state at offset i of data.
type shapeScan struct {
	name string
	data []byte
	i    int

	open      []byte // the [ and { open at this point, innermost last
	elems     []int  // commas seen in each open [ (and { alike)
	line      int
	lineStart int    // offset of the current line
	inKey     bool   // at the start of a line, keys come first
	parts     int    // parts of the key being read
	header    int    // depth of an open [table] or [[table]] header
	hdrStart  int    // offset of the header's first bracket
	hdrDouble bool   // the header is [[table]]
	table     string // the last table header's name
	key       string // the key whose value is being read
	arrayLine int    // where the outermost open array started
	// tables counts [[name]] under the parent's current element.
	tables map[string]int
}

// step reads the byte at i and, for a comment or a string, the rest of it.
func (sc *shapeScan) step() *Error {
	switch c := sc.data[sc.i]; {
	case c == '\n':
		sc.newline()
	case c == '#':
		for sc.i+1 < len(sc.data) && sc.data[sc.i+1] != '\n' {
			sc.i++
		}
	case c == '"' || c == '\'':
		sc.skipString(c)
	case c == '.' && sc.inKey:
		sc.parts++
		if sc.parts > MaxKeyParts {
			return sc.fail(fmt.Sprintf("a key with more than %d dotted parts", MaxKeyParts))
		}
	case c == '=' && sc.inKey:
		if len(sc.open) == 0 {
			sc.key = joinKey(sc.table, strings.TrimSpace(string(sc.data[sc.lineStart:sc.i])))
		}
		sc.inKey, sc.parts = false, 1
	case c == '[' && sc.inKey && (len(sc.open) == 0 || sc.header > 0):
		return sc.headerOpen()
	case c == ']' && sc.header > 0:
		return sc.headerClose()
	case c == '[' || c == '{':
		return sc.openBracket(c)
	case c == ']' || c == '}':
		sc.closeBracket()
	case c == ',':
		return sc.comma()
	}
	return nil
}

func (sc *shapeScan) fail(msg string) *Error {
	return &Error{File: sc.name, Line: sc.line, Msg: msg}
}

func (sc *shapeScan) tooMany(at int, k string) *Error {
	return &Error{File: sc.name, Line: at, Key: k, Msg: fmt.Sprintf("an array of more than %d elements (no [limits] ceiling goes above %d)", MaxArrayElements, MaxArrayElements)}
}

// newline starts a line: outside any array or inline table, keys come
// first.
func (sc *shapeScan) newline() {
	sc.line++
	sc.lineStart = sc.i + 1
	if len(sc.open) == 0 {
		sc.inKey, sc.parts = true, 1
	}
}

// closeBracket reads the ] of an array or the } of an inline table.
func (sc *shapeScan) closeBracket() {
	if len(sc.open) > 0 {
		sc.open = sc.open[:len(sc.open)-1]
		sc.elems = sc.elems[:len(sc.elems)-1]
	}
	sc.inKey = false
}

// skipString skips the string that quote c opens, counting lines. Three
// quotes open a multi-line string; a backslash escapes in basic strings.
func (sc *shapeScan) skipString(c byte) {
	data := sc.data
	quote := []byte{c}
	if sc.i+2 < len(data) && data[sc.i+1] == c && data[sc.i+2] == c {
		quote = []byte{c, c, c}
	}
	j := sc.i + len(quote)
	for j < len(data) && !bytesAt(data, j, quote) {
		if data[j] == '\\' && c == '"' {
			j++
		}
		if j < len(data) && data[j] == '\n' {
			sc.line++
			sc.lineStart = j + 1
		}
		j++
	}
	sc.i = j + len(quote) - 1
}

// headerOpen reads a bracket of a [table] or [[array of tables]] header.
func (sc *shapeScan) headerOpen() *Error {
	sc.header++
	if sc.header > 2 {
		return sc.fail("a table header with too many brackets")
	}
	if sc.header == 1 {
		sc.hdrStart = sc.i
	}
	sc.hdrDouble = sc.header == 2
	return nil
}

// headerClose reads a closing bracket of a table header; the last one
// names the table, and counts an [[array of tables]]'s element.
func (sc *shapeScan) headerClose() *Error {
	sc.header--
	if sc.header > 0 {
		return nil
	}
	sc.inKey, sc.parts = false, 1
	sc.table = strings.TrimSpace(strings.Trim(string(sc.data[sc.hdrStart:sc.i+1]), "[]"))
	if !sc.hdrDouble {
		return nil
	}
	// Count this element among its siblings: the tables of this name
	// under the parent's current element.
	parent := parentKey(sc.table)
	slot := sc.table + "#" + strconv.Itoa(sc.tables[parent+"#"])
	if parent == "" {
		slot = sc.table
	}
	if sc.tables[slot]++; sc.tables[slot] > MaxArrayElements {
		return sc.tooMany(sc.line, sc.table)
	}
	sc.tables[sc.table+"#"] = sc.tables[slot] // the parent's current element, for nested arrays
	return nil
}

// openBracket reads the [ of an array or the { of an inline table.
func (sc *shapeScan) openBracket(c byte) *Error {
	if len(sc.open) == 0 {
		sc.arrayLine = sc.line
	}
	sc.open = append(sc.open, c)
	sc.elems = append(sc.elems, 0)
	if len(sc.open) > MaxNestingDepth {
		return sc.fail(fmt.Sprintf("nested deeper than %d levels", MaxNestingDepth))
	}
	sc.inKey, sc.parts = c == '{', 1
	return nil
}

// comma reads a comma: in an inline table it starts the next key, in an
// array the next element.
func (sc *shapeScan) comma() *Error {
	sc.inKey, sc.parts = len(sc.open) > 0 && sc.open[len(sc.open)-1] == '{', 1
	if n := len(sc.elems); n > 0 && sc.open[n-1] == '[' {
		if sc.elems[n-1]++; sc.elems[n-1] >= MaxArrayElements {
			return sc.tooMany(sc.arrayLine, sc.key)
		}
	}
	return nil
}

// bytesAt reports whether data holds want at i.
func bytesAt(data []byte, i int, want []byte) bool {
	return i+len(want) <= len(data) && string(data[i:i+len(want)]) == string(want)
}
