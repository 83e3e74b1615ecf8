package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stormdrill/stormdrill/reports"
)

// TestFanoutOneOffersEventRate: 500 subscribers at 12 events/s with
// fanout = "one" offer 12 deliveries/s, not 6,000; the summary says so and
// the run creates that many.
func TestFanoutOneOffersEventRate(t *testing.T) {
	out := t.TempDir()
	code, stdout, stderr := stormdrill(t, "run", "cmd/stormdrill/testdata/fanout-one.toml", "--out", out, "--quiet")
	if code != exitOK {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	if strings.Contains(stderr, "warning") {
		t.Errorf("a drill at 12 deliveries/s on 8 workers got a warning: %s", stderr)
	}
	data, err := os.ReadFile(filepath.Join(out, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s reports.Summary
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatal(err)
	}
	if s.Offered.DeliveriesPerS != 12 || s.Offered.EventsPerS != 12 || s.Offered.FanoutMean != 1 {
		t.Errorf("offered %+v, want 12 events/s × 1 = 12 deliveries/s", s.Offered)
	}
	// Constant arrivals for 2m at 12/s: 1,440 events (and the one at 0).
	if got := s.Deliveries.Created; got < 1440 || got > 1441 {
		t.Errorf("created %d deliveries, want one per event (1,440)", got)
	}
	if len(s.Cohorts) != 1 || s.Cohorts[0].Deliveries != s.Deliveries.Created {
		t.Errorf("cohorts %+v", s.Cohorts)
	}
}

// TestValidateWarnsOnOverloadedDrill: the same drill with every event to
// every subscriber is 37.5× overloaded; validate still accepts it (exit 0)
// but says so on stderr, and run says the same before it starts.
func TestValidateWarnsOnOverloadedDrill(t *testing.T) {
	src, err := os.ReadFile("testdata/fanout-one.toml")
	if err != nil {
		t.Fatal(err)
	}
	over := filepath.Join(t.TempDir(), "over.toml")
	if err := os.WriteFile(over, []byte(strings.Replace(string(src), `fanout = "one"`, `fanout = "all"`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := stormdrill(t, "validate", over)
	if code != exitOK || !strings.Contains(stdout, "over.toml: ok") {
		t.Fatalf("validate: exit %d, stdout %q; want 0 and ok", code, stdout)
	}
	if !strings.Contains(stderr, "over.toml: warning: the plan finds this drill unstable: 37.5× overloaded") {
		t.Errorf("validate stderr %q lacks the overload warning", stderr)
	}
	if code, _, stderr := stormdrill(t, "validate", "cmd/stormdrill/testdata/fanout-one.toml"); code != exitOK || stderr != "" {
		t.Errorf("validate fanout-one: exit %d, stderr %q; want 0 and no warning", code, stderr)
	}
	// 90% busy is a warning too: k = 2 distinct of 500 gives 24 deliveries/s
	// against 8 workers × 20/s = 160/s; at 70/s events it is 140/s, 88%;
	// at 75/s, 150/s = 94%.
	busy := filepath.Join(t.TempDir(), "busy.toml")
	text := strings.Replace(string(src), `fanout = "one"`, "fanout = \"k\"\nk = 2", 1)
	text = strings.Replace(text, `rate = "12/s"`, `rate = "75/s"`, 1)
	if err := os.WriteFile(busy, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := stormdrill(t, "validate", busy); code != exitOK || !strings.Contains(stderr, "workers 94% busy") {
		t.Errorf("validate busy: exit %d, stderr %q; want 0 and a 94%% warning", code, stderr)
	}
	// run prints the same warning before it starts (a short variant, so
	// that the overloaded run itself is quick).
	short := filepath.Join(t.TempDir(), "over.toml")
	text = strings.Replace(string(src), `fanout = "one"`, `fanout = "all"`, 1)
	text = strings.Replace(text, `duration = "2m"`, `duration = "5s"`, 1)
	text = strings.Replace(text, `drain = "1m"`, `drain = "1s"`, 1)
	if err := os.WriteFile(short, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stdout, stderr = stormdrill(t, "run", short, "--out", t.TempDir(), "--quiet")
	if !strings.Contains(stderr, "over.toml: warning: the plan finds this drill unstable") || !strings.Contains(stdout, "fanout-one") {
		t.Errorf("run of an overloaded drill: stdout %q, stderr %q; want the warning and the run", stdout, stderr)
	}
}
