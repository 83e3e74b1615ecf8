package drills

import (
	"errors"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxErrors bounds how many problems one Load reports; past it the list ends
// with a "too many errors" entry.
const MaxErrors = 20

// Error is one problem with a drill, at a place in a file. Line is 0 when
// the problem has no line of its own (a default, an override).
type Error struct {
	File string
	Line int
	Key  string // dotted key with array indices, e.g. partners[1].outages[0].for
	Msg  string
}

// Error formats the problem as "FILE:LINE: key: what is wrong", leaving out
// the parts that are empty.
func (e *Error) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		if e.Line > 0 {
			b.WriteString(":")
			b.WriteString(strconv.Itoa(e.Line))
		}
		b.WriteString(": ")
	} else if e.Line > 0 {
		b.WriteString("line ")
		b.WriteString(strconv.Itoa(e.Line))
		b.WriteString(": ")
	}
	if e.Key != "" {
		b.WriteString(clipText(e.Key, maxEchoKey))
		b.WriteString(": ")
	}
	b.WriteString(clipText(e.Msg, maxEchoMsg))
	return b.String()
}

// A key or a message can echo what the file says: a 500,000-character key
// must not become a 500 KB error line.
const (
	maxEchoKey = 100
	maxEchoMsg = 400
)

// clipText shortens s to at most n bytes, on a rune boundary, marking the cut.
func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - 3
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// Errors is every problem found, in file and line order.
type Errors []*Error

// Error joins the problems with newlines.
func (es Errors) Error() string {
	parts := make([]string, len(es))
	for i, e := range es {
		parts[i] = e.Error()
	}
	return strings.Join(parts, "\n")
}

// Unwrap lets errors.As find the first *Error.
func (es Errors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// AsErrors returns err's problems when it is an Errors or *Error.
func AsErrors(err error) (Errors, bool) {
	var es Errors
	if errors.As(err, &es) {
		return es, true
	}
	var e *Error
	if errors.As(err, &e) {
		return Errors{e}, true
	}
	return nil, false
}

// sortErrors orders problems by file (in first-seen order) and line, keeping
// the order of problems on the same line.
func sortErrors(es Errors) {
	fileRank := map[string]int{}
	for _, e := range es {
		if _, ok := fileRank[e.File]; !ok {
			fileRank[e.File] = len(fileRank)
		}
	}
	sort.SliceStable(es, func(i, j int) bool {
		a, b := es[i], es[j]
		if a.File != b.File {
			return fileRank[a.File] < fileRank[b.File]
		}
		return a.Line < b.Line
	})
}

// boundErrors keeps at most MaxErrors problems.
func boundErrors(es Errors) Errors {
	if len(es) <= MaxErrors {
		return es
	}
	rest := len(es) - MaxErrors
	out := append(Errors(nil), es[:MaxErrors]...)
	return append(out, &Error{File: es[MaxErrors].File, Msg: "too many errors; " + strconv.Itoa(rest) + " more not shown"})
}

// editDistance is the optimal-string-alignment distance: insertions,
// deletions, substitutions and swaps of two neighbours each cost 1, so that
// "cuont" is one edit from "count". Long strings are never close.
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		if a == b {
			return 0
		}
		return 64
	}
	// Three rows: i-2, i-1, i.
	rows := [3][]int{make([]int, len(b)+1), make([]int, len(b)+1), make([]int, len(b)+1)}
	for j := range rows[0] {
		rows[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		pp, prev, cur := rows[(i+1)%3], rows[(i+2)%3], rows[i%3]
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], pp[j-2]+1)
			}
		}
	}
	return rows[len(a)%3][len(b)]
}

// nearest returns the candidate closest to name when it is close enough to
// be a likely typo (at most 2 edits, and at most a third of the name).
func nearest(name string, candidates []string) (string, bool) {
	best, bestD := "", 1<<30
	for _, c := range candidates {
		if d := editDistance(name, c); d < bestD {
			best, bestD = c, d
		}
	}
	limit := max(1, min(2, len(name)/3))
	return best, bestD <= limit
}

// keyLines maps every dotted key path of a TOML text, with array indices
// (partners[1].outages[0].start, gates[2]), to the line it is written on.
// BurntSushi/toml keeps one position per index-free key, so a typo in the
// first of three [[partners]] would otherwise be reported on the third.
// It is a best-effort scanner: on text it does not understand it skips to
// the next line; the real parser reports syntax errors.
func keyLines(src string) map[string]int {
	return KeyLines(src)
}

// KeyLines is keyLines for other file formats written in TOML (an
// experiment file), so that their errors name the line as a drill's do.
func KeyLines(src string) map[string]int {
	l := &lineLocator{s: src, line: 1, lines: map[string]int{}, arrays: map[string]int{}}
	l.run()
	return l.lines
}

// maxLocatorDepth bounds nested arrays and inline tables.
const maxLocatorDepth = 64

type lineLocator struct {
	s      string
	i      int
	line   int
	lines  map[string]int
	arrays map[string]int // array-of-tables path (with parent indices) → elements so far
	table  string         // current table path
	depth  int
}

func (l *lineLocator) eof() bool { return l.i >= len(l.s) }

func (l *lineLocator) record(path string) {
	if _, ok := l.lines[path]; !ok && path != "" {
		l.lines[path] = l.line
	}
}

func (l *lineLocator) run() {
	for !l.eof() {
		l.skipSpace()
		if l.eof() {
			return
		}
		start := l.i
		switch c := l.s[l.i]; c {
		case '\n':
			l.line++
			l.i++
			continue
		case '\r':
			l.i++
			continue
		case '#':
			l.skipToEOL()
			continue
		case '[':
			l.header()
		default:
			l.keyValue(l.table)
		}
		if l.i == start {
			l.i++ // always progress
		}
		l.skipToEOL()
	}
}

func (l *lineLocator) skipSpace() {
	for !l.eof() && (l.s[l.i] == ' ' || l.s[l.i] == '\t') {
		l.i++
	}
}

// skipBlank skips spaces, newlines and comments (inside arrays and inline tables).
func (l *lineLocator) skipBlank() {
	for !l.eof() {
		switch l.s[l.i] {
		case ' ', '\t', '\r':
			l.i++
		case '\n':
			l.line++
			l.i++
		case '#':
			l.skipToEOL()
		default:
			return
		}
	}
}

func (l *lineLocator) skipToEOL() {
	for !l.eof() && l.s[l.i] != '\n' {
		l.i++
	}
}

func joinKey(base, k string) string {
	if base == "" {
		return k
	}
	return base + "." + k
}

// resolve turns key pieces under base into a path, adding the index of the
// latest element of every array of tables it passes through.
func (l *lineLocator) resolve(base string, pieces []string) string {
	p := base
	for _, k := range pieces {
		p = joinKey(p, k)
		if n := l.arrays[p]; n > 0 {
			p += "[" + strconv.Itoa(n-1) + "]"
		}
	}
	return p
}

func (l *lineLocator) header() {
	l.i++ // [
	array := !l.eof() && l.s[l.i] == '['
	if array {
		l.i++
	}
	l.skipSpace()
	pieces := l.key()
	if len(pieces) == 0 {
		return
	}
	// Every table a header names gets its line: a typo in [polcy.retry]
	// is reported at "polcy".
	for k := 1; k < len(pieces); k++ {
		l.record(l.resolve("", pieces[:k]))
	}
	if !array {
		l.table = l.resolve("", pieces)
		l.record(l.table)
		return
	}
	p := joinKey(l.resolve("", pieces[:len(pieces)-1]), pieces[len(pieces)-1])
	n := l.arrays[p]
	l.arrays[p] = n + 1
	l.record(p)
	l.table = p + "[" + strconv.Itoa(n) + "]"
	l.record(l.table)
}

// key reads a dotted key: bare, "quoted" or 'literal' pieces.
func (l *lineLocator) key() []string {
	var pieces []string
	for len(pieces) < 64 {
		l.skipSpace()
		if l.eof() {
			return nil
		}
		var piece string
		switch l.s[l.i] {
		case '"':
			j := l.i + 1
			for j < len(l.s) && l.s[j] != '"' && l.s[j] != '\n' {
				if l.s[j] == '\\' {
					j++
				}
				j++
			}
			if j >= len(l.s) || l.s[j] != '"' {
				return nil
			}
			raw := l.s[l.i : j+1]
			if u, err := strconv.Unquote(raw); err == nil {
				piece = u
			} else {
				piece = raw[1 : len(raw)-1]
			}
			l.i = j + 1
		case '\'':
			j := strings.IndexAny(l.s[l.i+1:], "'\n")
			if j < 0 || l.s[l.i+1+j] != '\'' {
				return nil
			}
			piece = l.s[l.i+1 : l.i+1+j]
			l.i += j + 2
		default:
			j := l.i
			for j < len(l.s) && !strings.ContainsRune(" \t\r\n=.[]#\"',{}", rune(l.s[j])) {
				j++
			}
			if j == l.i {
				return nil
			}
			piece = l.s[l.i:j]
			l.i = j
		}
		pieces = append(pieces, piece)
		l.skipSpace()
		if l.eof() || l.s[l.i] != '.' {
			return pieces
		}
		l.i++
	}
	return nil
}

func (l *lineLocator) keyValue(base string) {
	pieces := l.key()
	if len(pieces) == 0 {
		return
	}
	l.skipSpace()
	if l.eof() || l.s[l.i] != '=' {
		return
	}
	l.i++
	l.skipSpace()
	p := base
	for _, k := range pieces {
		p = joinKey(p, k)
		l.record(p) // a.b.c = 1 also writes tables a and a.b
	}
	l.value(p)
}

func (l *lineLocator) value(p string) {
	if l.eof() {
		return
	}
	if l.depth >= maxLocatorDepth {
		l.i = len(l.s) // give up on absurd nesting
		return
	}
	l.depth++
	defer func() { l.depth-- }()
	switch l.s[l.i] {
	case '"', '\'':
		l.str()
	case '[':
		l.i++
		for idx := 0; !l.eof(); {
			l.skipBlank()
			if l.eof() {
				return
			}
			switch l.s[l.i] {
			case ']':
				l.i++
				return
			case ',':
				l.i++
				continue
			}
			ep := p + "[" + strconv.Itoa(idx) + "]"
			l.record(ep)
			start := l.i
			l.value(ep)
			if l.i == start {
				l.i++
			}
			idx++
		}
	case '{':
		l.i++
		for !l.eof() {
			l.skipBlank()
			if l.eof() {
				return
			}
			switch l.s[l.i] {
			case '}':
				l.i++
				return
			case ',':
				l.i++
				continue
			}
			start := l.i
			l.keyValue(p)
			if l.i == start {
				l.i++
			}
		}
	default:
		for !l.eof() && !strings.ContainsRune(",]}#\r\n", rune(l.s[l.i])) {
			l.i++
		}
	}
}

// str skips a string of any of TOML's four kinds, counting newlines.
func (l *lineLocator) str() {
	q := l.s[l.i]
	triple := strings.HasPrefix(l.s[l.i:], strings.Repeat(string(q), 3))
	if triple {
		l.i += 3
		end := strings.Repeat(string(q), 3)
		for !l.eof() {
			if strings.HasPrefix(l.s[l.i:], end) {
				l.i += 3
				// Up to two more quotes may belong to the content.
				for n := 0; n < 2 && !l.eof() && l.s[l.i] == q; n++ {
					l.i++
				}
				return
			}
			switch l.s[l.i] {
			case '\n':
				l.line++
			case '\\':
				if q == '"' {
					l.i++
					if !l.eof() && l.s[l.i] == '\n' {
						l.line++
					}
				}
			}
			l.i++
		}
		return
	}
	l.i++
	for !l.eof() && l.s[l.i] != '\n' {
		c := l.s[l.i]
		l.i++
		if c == q {
			return
		}
		if c == '\\' && q == '"' && !l.eof() && l.s[l.i] != '\n' {
			l.i++
		}
	}
}
