package drills

import (
	"math"
	"strings"
	"testing"
	"time"
)

// FuzzParseDuration: no panic; an error is an error with a message; a
// parsed duration is never negative and re-parses from its Go form to the
// same value.
func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"250ms", "2s", "30m", "1h", "1.5d", "0s", "2", "-1s", "", "NaNd", "Infd", "1e400d", "99999999h", "1h30m"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDuration(s)
		if err != nil {
			if err.Error() == "" {
				t.Fatalf("ParseDuration(%q): empty error", s)
			}
			return
		}
		if d < 0 {
			t.Fatalf("ParseDuration(%q) = %v, negative", s, d)
		}
		again, err := ParseDuration(d.String())
		if err != nil && d != 0 {
			t.Fatalf("ParseDuration(%q) = %v, which does not re-parse: %v", s, d, err)
		}
		if err == nil && again != d {
			t.Fatalf("ParseDuration(%q) = %v, re-parsed as %v", s, d, again)
		}
	})
}

// FuzzParseRate: no panic; an error is an error; a parsed rate is finite,
// not negative, and re-parses from its "N/s" form to the same value.
func FuzzParseRate(f *testing.F) {
	for _, s := range []string{"12/s", "600/m", "5/h", "0/s", "12", "-1/s", "1/d", "NaN/s", "Inf/s", "1e308/m", " 3 / s ", "/s", "1/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseRate(s)
		if err != nil {
			if err.Error() == "" {
				t.Fatalf("ParseRate(%q): empty error", s)
			}
			return
		}
		if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			t.Fatalf("ParseRate(%q) = %v", s, v)
		}
		text, _ := Rate{PerSecond: v, Set: true}.MarshalText()
		again, err := ParseRate(string(text))
		if err != nil || again != v {
			t.Fatalf("ParseRate(%q) = %v, formatted %q, re-parsed %v, %v", s, v, text, again, err)
		}
	})
}

func TestParseDurationEdges(t *testing.T) {
	cases := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"1.5d", 36 * time.Hour, true}, // days are a unit of their own
		{"NaNd", 0, false},             // not a number of days
		{"Infd", 0, false},             // overflows
		{"-1d", 0, false},              // negative
		{"2", 0, false},                // no unit
	}
	for _, c := range cases {
		got, err := ParseDuration(c.in)
		if (err == nil) != c.ok || (c.ok && got != c.want) {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v, ok %v", c.in, got, err, c.want, c.ok)
		}
	}
}

// TestTOMLShapeBounds: text nested too deep or with too long a dotted key is
// refused with a line, quickly, before the decoder (quadratic in both) sees
// it; ordinary nesting and dots inside strings and values are not.
func TestTOMLShapeBounds(t *testing.T) {
	cases := []struct {
		name, src string
		wantLine  int // 0: accepted by the shape check
	}{
		{"deep arrays", "a = 1\nb = " + strings.Repeat("[", 100000) + strings.Repeat("]", 100000), 2},
		{"deep inline tables", "a = " + strings.Repeat("{b = ", 50000) + "1" + strings.Repeat("}", 50000), 1},
		{"long dotted key", strings.Repeat("t.", 200000) + "t = 1", 1},
		{"long table header", "\n\n[" + strings.Repeat("t.", 200000) + "t]", 3},
		{"dots in strings and values", "a = \"x.y.z\" # a.b.c\nb = [1.5, 2.5, {c = 3.5}]\n" + `"q.r" = 1.0` + "\n", 0},
		{"32 levels", "a = " + strings.Repeat("[", MaxNestingDepth) + strings.Repeat("]", MaxNestingDepth), 0},
		{"33 levels", "a = " + strings.Repeat("[", MaxNestingDepth+1) + strings.Repeat("]", MaxNestingDepth+1), 1},
		{"brackets in a multi-line string", "a = '''\n" + strings.Repeat("[", 100) + "\n'''\nb = 1", 0},
		{"array of tables header", "[[partners]]\nname = \"x\"\n[[partners.outages]]\nfor = \"1s\"", 0},
	}
	for _, c := range cases {
		start := time.Now()
		e := checkTOMLShape("f.toml", []byte(c.src))
		if took := time.Since(start); took > time.Second {
			t.Errorf("%s: took %v", c.name, took)
		}
		switch {
		case c.wantLine == 0 && e != nil:
			t.Errorf("%s: refused: %v", c.name, e)
		case c.wantLine != 0 && (e == nil || e.Line != c.wantLine):
			t.Errorf("%s: got %v, want an error at line %d", c.name, e, c.wantLine)
		}
	}
	// Through Parse: exit-2 material, not minutes of decoding.
	_, err := Parse("deep.toml", []byte("a = "+strings.Repeat("{b = ", 50000)+"1"+strings.Repeat("}", 50000)))
	if es, ok := AsErrors(err); !ok || len(es) != 1 || es[0].Line != 1 {
		t.Errorf("Parse(deep) = %v", err)
	}
}
