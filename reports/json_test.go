package reports_test

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/stormdrill/stormdrill/reports"
	"github.com/stormdrill/stormdrill/reports/internal/fixture"
)

// summaryJSON is s as summary.json, or fails t.
func summaryJSON(t *testing.T, s *reports.Summary) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := reports.WriteSummaryJSON(&b, s); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestSummaryJSONRoundTrip(t *testing.T) {
	s := fixture.Run(t).Summary
	before := summaryJSON(t, s)
	if !bytes.HasSuffix(before, []byte("}\n")) {
		t.Errorf("no trailing newline")
	}
	if *s.Amplification != 1.0417520833 {
		t.Errorf("writing rounded the caller's summary: %v", *s.Amplification)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "summary.json"), before, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{dir, filepath.Join(dir, "summary.json")} {
		got, err := reports.ReadSummary(path)
		if err != nil {
			t.Fatal(err)
		}
		if got.Amplification == nil || *got.Amplification != 1.041752 || got.Deliveries != s.Deliveries || len(got.Gates) != len(s.Gates) {
			t.Errorf("%s: read back %+v", path, got)
		}
		// Writing what was read gives the same bytes: rounding is stable.
		if again := summaryJSON(t, got); !bytes.Equal(before, again) {
			t.Errorf("%s: rewrite differs", path)
		}
	}
	if _, err := reports.ReadSummary(filepath.Join(dir, "missing")); err == nil {
		t.Error("ReadSummary of a missing path: no error")
	}
}

func TestSummaryJSONRefusesNaN(t *testing.T) {
	s := fixture.Summary()
	s.Cohorts[1].LatencyS.P99 = math.NaN()
	var buf bytes.Buffer
	err := reports.WriteSummaryJSON(&buf, s)
	if err == nil || !strings.Contains(err.Error(), "Cohorts[1].LatencyS.P99") {
		t.Errorf("err = %v, want one naming the NaN field", err)
	}
}

func TestSummaryJSONNilBecomesEmpty(t *testing.T) {
	out := summaryJSON(t, &reports.Summary{Drill: "x"})
	for _, want := range []string{`"outages": []`, `"dead_letter_reasons": {}`, `"gates": []`, `"drain_time_s": null`} {
		if !bytes.Contains(out, []byte(want)) {
			t.Errorf("output lacks %s:\n%s", want, out)
		}
	}
}

func TestRoundedCopyLeavesInputAlone(t *testing.T) {
	s := fixture.Summary()
	want := fixture.Summary()
	summaryJSON(t, s)
	if !reflect.DeepEqual(s, want) {
		t.Error("WriteSummaryJSON changed its input")
	}
}
