package render

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stormdrill/stormdrill/reports"
)

// junit.xml's times are the span the cases judged: drill time in
// simulation, wall time (drill time ÷ speed) live, every seed's drill for
// a multi-seed run; left out when the summary does not know it.
func TestJUnitTimesAreTheDrillsSpan(t *testing.T) {
	cases := []struct {
		name string
		s    reports.Summary
		want []string // time attributes in order: root, suite, cases
	}{
		{"sim", reports.Summary{Drill: "d", Mode: "sim", DrillTimeS: 302}, []string{`time="302.000"`}},
		{"live at speed 20", reports.Summary{Drill: "d", Mode: "live", Speed: 20, DrillTimeS: 600}, []string{`time="30.000"`}},
		{"three seeds", reports.Summary{Drill: "d", Mode: "sim", DrillTimeS: 100, Seeds: &reports.SeedStats{Runs: []reports.SeedRun{{Seed: 1}, {Seed: 2}, {Seed: 3}}}}, []string{`time="300.000"`}},
		{"unknown", reports.Summary{Drill: "d", Mode: "live"}, nil},
	}
	for _, c := range cases {
		var b bytes.Buffer
		if err := WriteJUnit(&b, &c.s); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		n := strings.Count(out, `time="`)
		if c.want == nil {
			if n != 0 {
				t.Errorf("%s: times written for a run of unknown length:\n%s", c.name, out)
			}
			continue
		}
		if got := strings.Count(out, c.want[0]); got != n || n < 3 {
			t.Errorf("%s: want every time %s (%d of %d):\n%s", c.name, c.want[0], got, n, out)
		}
	}
}
