package render

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/stormdrill/stormdrill/reports"
	"github.com/stormdrill/stormdrill/reports/internal/fixture"
)

func TestCompareRows(t *testing.T) {
	base := fixture.Summary()
	cand := fixture.Summary()
	cand.Amplification = new(2 * *base.Amplification)
	cand.Deliveries.Lost = 3
	c := reports.Compare(base, cand, nil)
	if c.Failed {
		t.Error("failed without tolerances")
	}
	rows := map[string]reports.CompareRow{}
	for _, r := range c.Rows {
		rows[r.Metric] = r
	}
	amp := rows["amplification"]
	if math.Abs(amp.Change-*base.Amplification) > 1e-9 || math.Abs(amp.Percent-100) > 1e-9 || amp.Verdict() != "worse" {
		t.Errorf("amplification row %+v, verdict %s", amp, amp.Verdict())
	}
	lost := rows["lost"]
	if !math.IsNaN(lost.Percent) || lost.Change != 3 {
		t.Errorf("lost row: %+v (percent of a zero base must be NaN)", lost)
	}
	if _, ok := rows["drain_time"]; ok {
		t.Error("drain_time applies to neither run but has a row")
	}
	if r := rows["created"]; r.Verdict() != "same" {
		t.Errorf("unchanged figure verdict %q", r.Verdict())
	}
	var buf bytes.Buffer
	if err := WriteComparisonMarkdown(&buf, c); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{"| metric | base | candidate | change | % change | verdict |", "| `amplification` | 1.042 | 2.084 | +1.042 | +100% | worse |", "| `lost` | 0 | 3 | +3 | — | worse |"} {
		if !strings.Contains(out, want) {
			t.Errorf("comparison lacks %q:\n%s", want, out)
		}
	}
	// Changed rows are shown, unchanged ones counted.
	shown, same := shownRows(c)
	if len(shown) != 2 || same != len(c.Rows)-2 {
		t.Errorf("%d rows shown, %d same, of %d", len(shown), same, len(c.Rows))
	}
	if strings.Count(out, "\n| `") != len(shown) || !strings.Contains(out, fmt.Sprintf("%d more figures are the same", same)) {
		t.Errorf("want one table row per changed figure and a count of the rest:\n%s", out)
	}
}
