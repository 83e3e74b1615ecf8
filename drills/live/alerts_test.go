package live

import (
	"bytes"
	"sort"
	"strings"
	"testing"

	"github.com/stormdrill/stormdrill/reports"
	"github.com/stormdrill/stormdrill/reports/render"
)

// alertDrill dead-letters steadily for two reasons: "bad" answers 422 to
// half its calls (permanent) and "down" is down for the whole drill, so its
// deliveries run out of their 2 attempts (max-attempts). "ok" is healthy
// and must raise no alert. At speed 10 the 5s alert_interval is 0.5s wall.
const alertDrill = `
name = "alerts"
mode = "live"
speed = 10
seed = 9
duration = "30s"
drain = "20s"
sample_interval = "1s"
[source]
arrival = "constant"
rate = "4/s"
[[partners]]
name = "ok"
count = 2
latency = { dist = "constant", value = "5ms" }
[[partners]]
name = "bad"
count = 2
latency = { dist = "constant", value = "5ms" }
permanent_errors = 0.5
[[partners]]
name = "down"
count = 1
latency = { dist = "constant", value = "5ms" }
  [[partners.outages]]
  start = "0s"
  for = "40s"
  kind = "unavailable"
[policy.retry]
max_attempts = 2
base = "1s"
cap = "1s"
jitter = "none"
[dispatcher]
workers = 8
attempt_timeout = "2s"
lease_timeout = "5s"
alert_interval = "5s"
`

// TestDLQAlertsBatchedRateLimitedAndReported runs a live drill whose
// deliveries dead-letter and checks the alerts the partner server's sink
// received: batched per (partner, reason), every dead letter counted in
// exactly one alert, at most one alert per key per alert_interval (the
// shutdown flush, which arrives after the run ended, excepted), and a
// report that says when each alert arrived.
func TestDLQAlertsBatchedRateLimitedAndReported(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a live drill for about 5s")
	}
	if raceEnabled {
		// The rate limit is checked against arrival times; the race
		// detector's slowdown times the speed factor would be measured.
		t.Skip("timing check; run without -race")
	}
	d := parseDrill(t, alertDrill)
	run, err := Run(d, t.TempDir(), Options{Executable: testExecutable(t), Log: logWriter{t}})
	if err != nil {
		t.Fatal(err)
	}
	s := run.Summary
	if len(s.Alerts) == 0 {
		t.Fatalf("no alert arrived; dead letters %v", s.DeadLetterReasons)
	}
	// What the store says was dead-lettered, per (cohort, reason).
	type key struct{ partner, reason string }
	dead := map[key]int64{}
	for _, c := range s.Cohorts {
		for reason, n := range c.DeadLetters {
			dead[key{c.Name, reason}] += n
		}
	}
	wantKeys := map[key]bool{{"bad", "permanent"}: true, {"down", "max-attempts"}: true}
	for k := range dead {
		if !wantKeys[k] {
			t.Errorf("unexpected dead letters %v: %d", k, dead[k])
		}
	}
	alerted := map[key]int64{}
	at := map[key][]float64{}
	for _, a := range s.Alerts {
		k := key{a.Partner, a.Reason}
		if !wantKeys[k] {
			t.Errorf("alert for %v: no such dead letters expected", k)
		}
		if a.Count <= 0 {
			t.Errorf("alert %+v: count must be positive", a)
		}
		alerted[k] += a.Count
		at[k] = append(at[k], a.AtS)
	}
	const slackS = 0.5 // 50ms of wall-clock scheduling jitter at speed 10
	intervalS := d.Dispatcher.AlertInterval.D.Seconds()
	for k := range wantKeys {
		if dead[k] == 0 {
			t.Errorf("%v: the drill dead-lettered nothing", k)
			continue
		}
		// Every dead letter is in exactly one alert.
		if alerted[k] != dead[k] {
			t.Errorf("%v: alerts count %d dead letters, the store holds %d", k, alerted[k], dead[k])
		}
		// Batched: fewer alerts than dead letters.
		if int64(len(at[k])) >= dead[k] {
			t.Errorf("%v: %d alerts for %d dead letters: not batched", k, len(at[k]), dead[k])
		}
		ts := at[k]
		sort.Float64s(ts)
		for i := 1; i < len(ts); i++ {
			if ts[i] >= s.DrillTimeS {
				continue // the shutdown flush: sent once the run had ended
			}
			if gap := ts[i] - ts[i-1]; gap < intervalS-slackS {
				t.Errorf("%v: alerts at %.2fs and %.2fs are %.2fs apart; alert_interval is %vs", k, ts[i-1], ts[i], gap, intervalS)
			}
		}
		t.Logf("%v: %d dead letters in %d alerts at %v", k, dead[k], len(ts), ts)
	}
	var md bytes.Buffer
	if err := render.WriteMarkdown(&md, run, nil); err != nil {
		t.Fatal(err)
	}
	text := md.String()
	if !strings.Contains(text, "### DLQ alerts") {
		t.Fatalf("report.md has no DLQ alerts section")
	}
	first := s.Alerts[0]
	row := "| " + reports.FormatDuration(first.AtS) + " | " + first.Partner + " | `" + first.Reason + "` |"
	if !strings.Contains(text, row) {
		t.Errorf("report.md lacks the first alert's arrival row %q", row)
	}
}
