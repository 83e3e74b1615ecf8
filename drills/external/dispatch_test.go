package external

import (
	"math"
	"os"
	"strings"
	"testing"

	"github.com/stormdrill/stormdrill/drills"
	"github.com/stormdrill/stormdrill/drills/live"
	"github.com/stormdrill/stormdrill/reports"
)

// asLive is the external drill file's text as a live drill: mode live at
// speed 1 (the external run is wall time), without the [system] table.
func asLive(t *testing.T, path string) *drills.Drill {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(src)
	a, b := strings.Index(s, "\n[system]"), strings.Index(s, "\n[source]")
	if a < 0 || b < a || !strings.Contains(s, `mode        = "external"`) {
		t.Fatalf("%s: want mode = \"external\" and a [system] table just before [source]", path)
	}
	s = strings.Replace(s[:a]+s[b:], `mode        = "external"`, "mode = \"live\"\nspeed = 1", 1)
	d, err := drills.Parse(path, []byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestDispatchExternalAgreesWithLive runs drills/external-dispatch.toml:
// `stormdrill dispatch` started as an external system, fed through its HTTP
// ingest, measured from the partners; then the same drill in live mode,
// measured from the inside (the queue store). The partner-side view must
// not drift from the inside view: delivered, dead-lettered and attempts
// within 5%, healthy p99 and drain time within 25%. Both runs take about
// 8 s of wall time each.
func TestDispatchExternalAgreesWithLive(t *testing.T) {
	if raceEnabled {
		t.Skip("timing comparison; runs in the plain test pass")
	}
	exe := stormdrillExe(t)
	d, err := drills.Load("../external-dispatch.toml", nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	extRun, err := Run(d, dir, Options{DrillDir: "..", Env: map[string]string{"STORMDRILL_EXECUTABLE": exe}})
	if err != nil {
		t.Fatalf("external run: %v (see %s)", err, dir)
	}
	liveRun, err := live.Run(asLive(t, "../external-dispatch.toml"), t.TempDir(), live.Options{Executable: exe})
	if err != nil {
		t.Fatalf("live run: %v", err)
	}
	e, l := extRun.Summary, liveRun.Summary
	for _, g := range e.Gates {
		if !g.Pass {
			t.Errorf("external: gate %s failed: %s", g.Expr, g.Display)
		}
	}
	if e.External == nil || e.External.Unidentified != 0 || e.External.Unresolved != 0 {
		t.Errorf("external figures %+v: want every attempt identified and every delivery resolved", e.External)
	}
	if e.Deliveries.DeadLettered == 0 || len(e.Outages) != 1 || e.DrainTimeS == nil {
		t.Fatalf("external run %+v, outages %+v: the drill must dead-letter and drain an outage", e.Deliveries, e.Outages)
	}
	checkExternalKeys(t, d, e)
	lk, err := reports.SummaryKeys(l)
	if err != nil {
		t.Fatal(err)
	}
	ek, err := reports.SummaryKeys(e)
	if err != nil {
		t.Fatal(err)
	}
	for k := range ek {
		if k == "external" || strings.HasPrefix(k, "external.") {
			delete(ek, k)
		}
	}
	for _, diff := range reports.KeyDifferences("live", lk, "external", ek) {
		t.Error(diff)
	}
	drain := func(s *reports.Summary) float64 {
		if s.DrainTimeS == nil {
			return math.NaN()
		}
		return *s.DrainTimeS
	}
	rows := []struct {
		name      string
		live, ext float64
		tol       float64
	}{
		{"delivered", float64(l.Deliveries.Delivered), float64(e.Deliveries.Delivered), 0.05},
		{"dead_lettered", float64(l.Deliveries.DeadLettered), float64(e.Deliveries.DeadLettered), 0.05},
		{"attempts", float64(l.Attempts.Total), float64(e.Attempts.Total), 0.05},
		{"healthy.latency.p99", l.HealthyLatencyS.P99, e.HealthyLatencyS.P99, 0.25},
		{"drain_time", drain(l), drain(e), 0.25},
	}
	for _, r := range rows {
		t.Logf("%-20s live %8.3f  external %8.3f", r.name, r.live, r.ext)
		if !(math.Abs(r.ext-r.live) <= r.tol*math.Abs(r.live)) {
			t.Errorf("%s: external %.3f, live %.3f: more than %.0f%% apart", r.name, r.ext, r.live, 100*r.tol)
		}
	}
}

// TestVerifyDispatch runs the release checklist against `stormdrill
// dispatch` (drills/verify/dispatch.toml): every scenario passes, and
// junit.xml has one passing test case per scenario. About 10 s.
func TestVerifyDispatch(t *testing.T) {
	if raceEnabled {
		t.Skip("runs in the plain test pass: a real-time run of a dispatcher process")
	}
	exe := stormdrillExe(t)
	d, err := drills.Load("../verify/dispatch.toml", nil)
	if err != nil {
		t.Fatal(err)
	}
	vs, err := Verify(d, t.TempDir(), VerifyOptions{Options: Options{DrillDir: "../verify", Env: map[string]string{"STORMDRILL_EXECUTABLE": exe}}})
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	if len(vs) != len(Scenarios) {
		t.Fatalf("%d verdicts, want one per scenario (%d)", len(vs), len(Scenarios))
	}
	if got := failedScenarios(vs); len(got) != 0 {
		for _, v := range vs {
			t.Logf("%s pass=%v: %s", v.Scenario, v.Pass, v.Evidence)
		}
		t.Fatalf("failed scenarios %v: stormdrill dispatch must pass the whole checklist", got)
	}
	checkJUnit(t, "verify-dispatch", vs, 0)
}
