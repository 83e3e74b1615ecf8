package live

import (
	"path/filepath"
	"testing"

	"github.com/stormdrill/stormdrill/drills"
	"github.com/stormdrill/stormdrill/drills/sim"
	"github.com/stormdrill/stormdrill/reports"
)

// TestSimAndLiveAgreeOnFaults runs the partner-fault drill
// (drills/testdata/faults.toml: each new kind, lost-ack, redirect, refused,
// dribble, empty, garbage and truncated, in a cohort of its own as an
// outage, and each but refused again as a per-call probability) in
// simulation and live on SQLite, 10 times faster, and compares them with
// the agreement test's tolerances (compareRuns), and besides: dead letters
// by reason, duplicates, lost acks and duplicates beyond the attempts in
// flight within 5%, and each cohort's attempts by
// outcome (status code, reset, refused, timeout) within 8% or 4
// attempts, whichever is more: those counts are small, and an attempt
// scheduled near a window's edge moves across it when live runs late (the
// comparison runs up to 100 ms of wall lateness, 2 s of drill time, before
// it skips), while the totals over all cohorts keep compareRuns' 5%.
// About 10 s of wall time.
func TestSimAndLiveAgreeOnFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a live drill")
	}
	if raceEnabled {
		t.Skip("timing comparison; run without -race")
	}
	path := filepath.Join("..", "testdata", "faults.toml")
	simD, err := drills.Load(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	simRun, err := sim.Run(simD, sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	liveD, err := drills.Load(path, map[string]string{"mode": "live", "speed": "10"})
	if err != nil {
		t.Fatal(err)
	}
	liveRun, err := Run(liveD, t.TempDir(), Options{Executable: testExecutable(t), Log: logWriter{t}})
	if err != nil {
		t.Fatal(err)
	}
	checkDLQColumns(t, liveRun)
	checkSameKeys(t, simRun.Summary, liveRun.Summary)
	compareFaultCounts(t, simRun.Summary, liveRun.Summary)
	compareRuns(t, simRun, liveRun)
}

func compareFaultCounts(t *testing.T, s, l *reports.Summary) {
	t.Helper()
	if l.Lateness != nil && l.Lateness.P99 > 0.1 {
		return // compareRuns skips, saying why
	}
	type row struct {
		name      string
		sim, live int64
		tol       float64
		slack     int64
	}
	var rows []row
	for _, reason := range reports.DeadLetterReasons {
		rows = append(rows, row{"dlq." + reason, s.DeadLetterReasons[reason], l.DeadLetterReasons[reason], 0.05, 1})
	}
	rows = append(rows, row{"duplicates", *s.Duplicates, *l.Duplicates, 0.05, 1}, row{"lost_acks", s.LostAcks, l.LostAcks, 0.05, 1})
	beyond := func(sum *reports.Summary) int64 {
		v, _, err := sum.Metric("duplicates_beyond_in_flight")
		if err != nil {
			t.Fatal(err)
		}
		return int64(v)
	}
	rows = append(rows, row{"duplicates_beyond_in_flight", beyond(s), beyond(l), 0.05, 1})
	liveCodes := map[string]map[string]int64{}
	for _, c := range l.Cohorts {
		liveCodes[c.Name] = c.StatusCodes
	}
	for _, c := range s.Cohorts {
		keys := map[string]bool{}
		for k := range c.StatusCodes {
			keys[k] = true
		}
		for k := range liveCodes[c.Name] {
			keys[k] = true
		}
		for k := range keys {
			rows = append(rows, row{c.Name + " " + k, c.StatusCodes[k], liveCodes[c.Name][k], 0.08, 4})
		}
	}
	for _, r := range rows {
		t.Logf("%-24s sim %6d  live %6d", r.name, r.sim, r.live)
		if !agreeWithin(float64(r.sim), float64(r.live), r.tol, float64(r.slack)) {
			t.Errorf("%s: sim %d, live %d: differ by more than %.0f%% (or %d)", r.name, r.sim, r.live, r.tol*100, r.slack)
		}
	}
	// Every kind, outage and per call, must have struck in both runs.
	for _, want := range []string{"lostack reset", "redirect 307", "refused refused", "dribble timeout",
		"empty reset", "garbage reset", "truncated reset", "pc-lostack reset", "pc-redirect 307",
		"pc-dribble timeout", "pc-empty reset", "pc-garbage reset", "pc-truncated reset"} {
		found := false
		for _, r := range rows {
			found = found || (r.name == want && r.sim > 0 && r.live > 0)
		}
		if !found {
			t.Errorf("%s: not seen in both runs; the comparison does not exercise it", want)
		}
	}
}
