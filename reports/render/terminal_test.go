package render

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stormdrill/stormdrill/reports"
)

// TestTerminalSummaryDrainTime: the drain time appears when the drill had
// outages (as a duration, or "not drained") and not at all without one.
func TestTerminalSummaryDrainTime(t *testing.T) {
	drained := 95.0
	cases := []struct {
		name    string
		summary reports.Summary
		want    string // "" means no drain time at all
	}{
		{"drained", reports.Summary{Outages: []reports.Outage{{Partner: "a", StartS: 0, EndS: 60}}, DrainTimeS: &drained}, "drain time 1m35s"},
		{"not drained", reports.Summary{Outages: []reports.Outage{{Partner: "a", StartS: 0, EndS: 60}}}, "drain time not drained"},
		{"no outages", reports.Summary{}, ""},
	}
	for _, c := range cases {
		var b bytes.Buffer
		s := c.summary
		s.Drill = "x"
		if err := WriteTerminalSummary(&b, &reports.Run{Summary: &s}); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		if c.want == "" && strings.Contains(out, "drain time") {
			t.Errorf("%s: mentions drain time:\n%s", c.name, out)
		}
		if c.want != "" && !strings.Contains(out, c.want) {
			t.Errorf("%s: lacks %q:\n%s", c.name, c.want, out)
		}
	}
}
