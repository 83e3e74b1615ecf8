package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stormdrill/stormdrill/drills/external"
)

// verify's progress: a line as each scenario starts and ends, with the
// time since the checklist began and, at the end, how long it took.
func TestVerifyProgressLines(t *testing.T) {
	var b bytes.Buffer
	p := verifyProgress(&b, "verify-jitter")
	p(external.ScenarioProgress{Scenario: external.ScenarioRetry, At: 20 * time.Millisecond})
	p(external.ScenarioProgress{Scenario: external.ScenarioRetry, Ended: true, At: 31270 * time.Millisecond, Took: 31250 * time.Millisecond, Note: "settled"})
	p(external.ScenarioProgress{Scenario: external.ScenarioRestart, Ended: true, At: 2 * time.Minute, Took: time.Minute, Note: "timed out"})
	want := []string{
		"verify verify-jitter:      0s  started  retry-then-success",
		"verify verify-jitter:   31.3s  ended    retry-then-success after 31.3s (settled)",
		"verify verify-jitter:    2m0s  ended    restart-brings-no-retry-forward after 1m0s (timed out)",
	}
	if got := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("progress lines:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
