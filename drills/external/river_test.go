package external

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stormdrill/stormdrill/drills"
	"github.com/stormdrill/stormdrill/drills/sim"
	"github.com/stormdrill/stormdrill/reports"
)

// TestRiverDrill runs the bundled drills/external-river.toml: the harness
// builds and starts cmd/river-sender (River's own retry policy), injects the
// events over HTTP and measures everything from the partners. It takes
// about half a minute of wall time (River's second retry waits 16 s), so
// the -race pass of make test leaves it to the plain pass.
func TestRiverDrill(t *testing.T) {
	if raceEnabled {
		t.Skip("runs in the plain test pass: half a minute of wall time")
	}
	// The drill builds cmd/river-sender itself; building it here first
	// fails (under CI) or skips with the reason when its module cannot be
	// built, rather than failing inside the run.
	riverSender(t)
	d, err := drills.Load("../external-river.toml", nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	run, err := Run(d, dir, Options{DrillDir: ".."})
	if err != nil {
		t.Fatalf("run: %v (system log in %s)", err, filepath.Join(dir, "system.log"))
	}
	s := run.Summary
	for _, g := range s.Gates {
		if !g.Pass {
			t.Errorf("gate %s failed: %s", g.Expr, g.Display)
		}
	}
	if s.Deliveries.Created != 96 || s.Deliveries.Delivered != 96 {
		t.Errorf("deliveries %+v, want 96 created and delivered (24 events × 4 subscribers)", s.Deliveries)
	}
	e := s.External
	if e == nil || e.Unidentified != 0 || !e.LostClaimed {
		t.Fatalf("external figures %+v: want every attempt identified and lost claimed", e)
	}
	// River's default policy: the first retry after about 1 s (±10%), the
	// second after about 16 s (±10%, plus up to River's 5 s scheduler
	// interval). The observed backoff must show that schedule.
	var g2, g3 bool
	for _, g := range e.Backoff {
		switch g.Ordinal {
		case 2:
			g2 = g.MinS >= 0.85 && g.P50S < 2
		case 3:
			g3 = g.MinS >= 14 && g.P50S < 23
		}
	}
	if !g2 || !g3 {
		t.Errorf("observed backoff %+v: want River's 1 s and 16 s delays", e.Backoff)
	}
	if len(e.CallsWhileDown) != 1 || e.CallsWhileDown[0].Calls == 0 {
		t.Errorf("calls while down %+v: River has no breaker, so it calls the down partner", e.CallsWhileDown)
	}
	if s.DrainTimeS == nil || *s.DrainTimeS < 13 {
		t.Errorf("drain time %v: deliveries that failed twice wait River's 16 s delay", s.DrainTimeS)
	}
	checkExternalKeys(t, d, s)
}

// checkExternalKeys: an external run's summary has the keys a simulation
// of the same drill has, with values of the same kinds, plus the external
// figures and nothing else: one tally assembles every mode's figures.
func checkExternalKeys(t *testing.T, d *drills.Drill, ext *reports.Summary) {
	t.Helper()
	simD := *d
	simD.Mode, simD.System = "sim", drills.System{}
	simRun, err := sim.Run(&simD, sim.Options{})
	if err != nil {
		t.Fatalf("the drill in simulation: %v", err)
	}
	simKeys, err := reports.SummaryKeys(simRun.Summary)
	if err != nil {
		t.Fatal(err)
	}
	extKeys, err := reports.SummaryKeys(ext)
	if err != nil {
		t.Fatal(err)
	}
	extra := 0
	for k := range extKeys {
		if k == "external" || strings.HasPrefix(k, "external.") {
			delete(extKeys, k)
			extra++
		}
	}
	if extra < 10 {
		t.Errorf("%d keys under external: the external figures are missing", extra)
	}
	if len(simKeys) < 40 {
		t.Fatalf("%d summary keys in simulation: the walk found too few", len(simKeys))
	}
	for _, diff := range reports.KeyDifferences("sim", simKeys, "external", extKeys) {
		t.Error(diff)
	}
}
