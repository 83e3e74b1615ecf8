package sim

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stormdrill/stormdrill/drills"
	"github.com/stormdrill/stormdrill/drills/sim/tuning"
	"github.com/stormdrill/stormdrill/model"
	"github.com/stormdrill/stormdrill/reports"
	"github.com/stormdrill/stormdrill/reports/render"
)

// drillsDir is the drill format's folder, which holds the bundled drills
// and the test drills (testdata/) the simulator's tests run.
const drillsDir = ".."

// bundledDrills lists the drills shipped with the drill format, by path
// relative to drillsDir.
func bundledDrills(t testing.TB) []string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(drillsDir, "*.toml"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no bundled drills found (%v)", err)
	}
	for i, p := range paths {
		paths[i] = filepath.Base(p)
	}
	return paths
}

// loadDrill loads the drill at path: relative to drillsDir, or absolute.
func loadDrill(t testing.TB, path string, overrides map[string]string) *drills.Drill {
	t.Helper()
	if !filepath.IsAbs(path) {
		path = filepath.Join(drillsDir, path)
	}
	d, err := drills.Load(path, overrides)
	if err != nil {
		t.Fatalf("load %s: %v", path, err)
	}
	return d
}

// actionBase is testdata/actions-base.toml, a small valid drill with an
// outage and dead letters to replay: 4 attempts and no breaker, so the
// outage's deliveries run out.
func actionBase(tb testing.TB) string {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join(drillsDir, "testdata", "actions-base.toml"))
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}

func runDrill(t testing.TB, d *drills.Drill) *reports.Run {
	t.Helper()
	run, err := Run(d, Options{})
	if err != nil {
		t.Fatalf("run %s: %v", d.Name, err)
	}
	return run
}

// runInternal runs d and returns the finished run with its recorder, for
// figures that are not in the summary.
func runInternal(t testing.TB, d *drills.Drill) (*simRun, *reports.Run) {
	t.Helper()
	r, err := newSimRun(d)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.run(Options{}); err != nil {
		t.Fatal(err)
	}
	run, err := r.report()
	if err != nil {
		t.Fatal(err)
	}
	return r, run
}

func summaryJSON(t testing.TB, run *reports.Run) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := reports.WriteSummaryJSON(&buf, run.Summary); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func timeseriesCSV(t testing.TB, run *reports.Run) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := render.WriteTimeseriesCSV(&buf, run.Timeseries); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// requiredKeys are the summary.json keys issue 3 names. "a.b" is a key of
// an object; "a[].b" is a key of every element of an array.
var requiredKeys = []string{
	"drill", "seed", "mode", "pass",
	"deliveries.created", "deliveries.delivered", "deliveries.dead_lettered", "deliveries.pending", "deliveries.lost",
	"attempts.total", "attempts.first", "attempts.retries", "attempts.by_ordinal",
	"amplification",
	"outages", "outages[].partner", "outages[].start_s", "outages[].end_s", "outages[].drain_time_s",
	"drain_time_s",
	"oldest_ready_age_max_s", "oldest_delayed_age_max_s",
	"healthy_latency_s.p50", "healthy_latency_s.p90", "healthy_latency_s.p99", "healthy_latency_s.p999", "healthy_latency_s.max",
	"healthy_within_slo", "slo_s",
	"dead_letter_reasons",
	"duplicates",
	"breaker_transitions", "breaker_transitions[].partner", "breaker_transitions[].at_s", "breaker_transitions[].from", "breaker_transitions[].to",
	"gates", "gates[].expr", "gates[].value", "gates[].pass",
}

// lookupKey reports whether key (as in requiredKeys) exists in v; for
// "a[].b" every element of a must have b.
func lookupKey(v any, key string) bool {
	head, rest, more := strings.Cut(key, ".")
	if name, ok := strings.CutSuffix(head, "[]"); ok {
		m, isObj := v.(map[string]any)
		arr, isArr := m[name].([]any)
		if !isObj || !isArr {
			return false
		}
		for _, e := range arr {
			if !lookupKey(e, rest) {
				return false
			}
		}
		return true
	}
	m, ok := v.(map[string]any)
	if !ok {
		return false
	}
	child, ok := m[head]
	if !ok {
		return false
	}
	if !more {
		return true
	}
	return lookupKey(child, rest)
}

// TestBundledDrillsRun runs every bundled drill under the simulation and
// checks that its summary.json has the keys, adds up, loses
// nothing and passes the drill's own gates.
func TestBundledDrillsRun(t *testing.T) {
	for _, path := range bundledDrills(t) {
		t.Run(strings.TrimSuffix(path, ".toml"), func(t *testing.T) {
			d := loadDrill(t, path, nil)
			run := runDrill(t, d)
			data := summaryJSON(t, run)
			var m map[string]any
			if err := json.Unmarshal(data, &m); err != nil {
				t.Fatalf("summary.json does not decode: %v", err)
			}
			for _, k := range requiredKeys {
				if !lookupKey(m, k) {
					t.Errorf("summary.json has no %s", k)
				}
			}
			for _, k := range []string{"outages", "breaker_transitions", "gates", "attempts.by_ordinal"} {
				parent, _, _ := strings.Cut(k, ".")
				v := m[parent]
				if k == "attempts.by_ordinal" {
					v = m["attempts"].(map[string]any)["by_ordinal"]
				}
				if _, ok := v.([]any); !ok {
					t.Errorf("%s is %T, want an array", k, v)
				}
			}
			if _, ok := m["pass"].(bool); !ok {
				t.Errorf("pass is %T, want a bool", m["pass"])
			}
			if v := m["drain_time_s"]; v != nil {
				if _, ok := v.(float64); !ok {
					t.Errorf("drain_time_s is %T, want a number or null", v)
				}
			}

			s := run.Summary
			if s.Deliveries.Lost != 0 {
				t.Errorf("lost = %d, want 0 (%+v)", s.Deliveries.Lost, s.Deliveries)
			}
			if s.Deliveries.Created == 0 || s.Attempts.Total == 0 {
				t.Errorf("the drill did nothing: %+v, %d attempts", s.Deliveries, s.Attempts.Total)
			}
			var byOrd int64
			for _, n := range s.Attempts.ByOrdinal {
				byOrd += n
			}
			if byOrd != s.Attempts.Total || len(s.Attempts.ByOrdinal) == 0 || s.Attempts.ByOrdinal[0] != s.Attempts.First {
				t.Errorf("by_ordinal %v does not add up to total %d with first %d", s.Attempts.ByOrdinal, s.Attempts.Total, s.Attempts.First)
			}
			var dl int64
			for _, n := range s.DeadLetterReasons {
				dl += n
			}
			if dl != s.Deliveries.DeadLettered {
				t.Errorf("dead_letter_reasons %v add up to %d, dead_lettered is %d", s.DeadLetterReasons, dl, s.Deliveries.DeadLettered)
			}
			if len(s.Gates) != len(d.Gates) {
				t.Errorf("%d gate results for %d gates", len(s.Gates), len(d.Gates))
			}
			if len(s.Outages) != countOutages(d) {
				t.Errorf("%d outages in the summary, %d in the drill", len(s.Outages), countOutages(d))
			}
			for _, g := range s.Gates {
				if !g.Pass {
					t.Errorf("gate %q fails: measured %s", g.Expr, g.Display)
				}
			}
		})
	}
}

func countOutages(d *drills.Drill) int {
	n := 0
	for _, p := range d.Partners {
		n += len(p.Outages)
	}
	return n
}

// TestDeterminism: the same seed gives byte-identical summary.json and
// timeseries.csv; another seed gives different figures, not just a
// different "seed" field.
func TestDeterminism(t *testing.T) {
	for _, path := range bundledDrills(t) {
		t.Run(strings.TrimSuffix(path, ".toml"), func(t *testing.T) {
			d1 := loadDrill(t, path, nil)
			a := runDrill(t, d1)
			d2 := loadDrill(t, path, nil)
			b := runDrill(t, d2)
			if !bytes.Equal(summaryJSON(t, a), summaryJSON(t, b)) {
				t.Errorf("same seed, different summary.json")
			}
			if !bytes.Equal(timeseriesCSV(t, a), timeseriesCSV(t, b)) {
				t.Errorf("same seed, different timeseries.csv")
			}
			other := loadDrill(t, path, map[string]string{"seed": strconv.FormatUint(d1.Seed+1, 10)})
			c := runDrill(t, other)
			sameSeed := *c.Summary
			sameSeed.Seed = a.Summary.Seed
			if bytes.Equal(summaryJSON(t, a), summaryJSON(t, &reports.Run{Summary: &sameSeed})) {
				t.Errorf("seed %d and %d give the same figures", d1.Seed, other.Seed)
			}
			if bytes.Equal(timeseriesCSV(t, a), timeseriesCSV(t, c)) {
				t.Errorf("seed %d and %d give the same timeseries.csv", d1.Seed, other.Seed)
			}
		})
	}
}

// TestRestartFault: a hard restart loses the attempts in flight, which the
// partner had processed; their deliveries come back after the lease and
// succeed again, so each shows up as a duplicate, and nothing is lost. A
// graceful restart lets them finish and makes no duplicate.
func TestRestartFault(t *testing.T) {
	cases := []struct {
		kind      string
		graceful  bool
		wantDupes bool // duplicates == attempts in flight at the restart
	}{
		// Hard restart: every lost attempt was processed, so every one is a duplicate.
		{"restart", false, true},
		// Graceful: attempts in flight complete; no duplicate.
		{"graceful-restart", true, false},
	}
	for _, tc := range cases {
		t.Run(tc.kind, func(t *testing.T) {
			d := loadDrill(t, "testdata/sim_restart.toml", map[string]string{"faults[0].kind": strconv.Quote(tc.kind)})
			s := runDrill(t, d).Summary
			if len(s.Restarts) != 1 {
				t.Fatalf("%d restarts recorded, want 1", len(s.Restarts))
			}
			rs := s.Restarts[0]
			if rs.Graceful != tc.graceful || rs.AtS != 120 || rs.InFlight < 50 {
				t.Fatalf("restart %+v, want at 120s, graceful %v, with tens of attempts in flight", rs, tc.graceful)
			}
			want := int64(0)
			if tc.wantDupes {
				want = rs.InFlight
			}
			if *s.Duplicates != want {
				t.Errorf("duplicates %d, want %d (%d in flight at the restart)", *s.Duplicates, want, rs.InFlight)
			}
			if s.Deliveries.Lost != 0 || s.Deliveries.Delivered != s.Deliveries.Created || s.Deliveries.Created == 0 {
				t.Errorf("deliveries %+v: want every one delivered and none lost", s.Deliveries)
			}
			// The lost attempts count: their deliveries needed a 2nd attempt.
			second := int64(0)
			if len(s.Attempts.ByOrdinal) > 1 {
				second = s.Attempts.ByOrdinal[1]
			}
			if tc.wantDupes && second != rs.InFlight {
				t.Errorf("%d second attempts, want %d (one per lost attempt)", second, rs.InFlight)
			}
		})
	}
}

// TestBrokenIdentityIsARunError breaks the accounting identity after a run
// (one delivery created that the tally never hears of again) and checks that the tally reports it as
// ErrAccounting while still returning the run to write down.
func TestBrokenIdentityIsARunError(t *testing.T) {
	d := loadDrill(t, "demo-healthy.toml", nil)
	r, err := newSimRun(d)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.run(Options{}); err != nil {
		t.Fatal(err)
	}
	r.tally.Created(0, 1)
	run, err := r.report()
	if !errors.Is(err, drills.ErrAccounting) {
		t.Fatalf("finish with a delivery unaccounted for: err %v, want ErrAccounting", err)
	}
	if run == nil || run.Summary.Deliveries.Lost != 1 {
		t.Fatalf("run %v: want the run back with lost = 1", run)
	}
}

// TestDLQByReasonIsCountNotRate is a regression test: the recorder divided
// each sample's per-reason dead letters by the interval, though
// Sample.DLQByReason holds counts (plots sum them; the CSV writer divides
// by the interval itself). At the default 1s interval the two agree, so it
// only showed with a longer interval.
func TestDLQByReasonIsCountNotRate(t *testing.T) {
	d := loadDrill(t, "demo-bad-data.toml", map[string]string{"sample_interval": `"10s"`})
	run := runDrill(t, d)
	ts := run.Timeseries
	if ts.IntervalS != 10 {
		t.Fatalf("interval %v, want 10s", ts.IntervalS)
	}
	col := slices.Index(ts.Reasons, string(model.ReasonPermanent))
	var counted, fromRate float64
	for _, s := range ts.Samples {
		counted += s.DLQByReason[col]
		fromRate += s.DLQPerS * ts.IntervalS
	}
	want := float64(run.Summary.DeadLetterReasons[string(model.ReasonPermanent)])
	if want == 0 || counted != want || fromRate != want {
		t.Fatalf("permanent dead letters: samples count %v, DLQPerS × interval %v, summary %v; want all equal", counted, fromRate, want)
	}
}

// TestBurstAtOutageEndDrains is a regression test: a burst released at the
// very instant an outage ends ran before the outage-end event, so its
// deliveries were counted in the outage's backlog; terminal only counts
// deliveries created before the end, so the backlog never reached zero and
// the outage was reported as not drained although everything was delivered.
func TestBurstAtOutageEndDrains(t *testing.T) {
	d := loadDrill(t, "testdata/sim_burst_at_outage_end.toml", nil)
	s := runDrill(t, d).Summary
	if s.Deliveries.Delivered != s.Deliveries.Created || s.Deliveries.Created != 200 {
		t.Fatalf("deliveries %+v, want all 200 delivered", s.Deliveries)
	}
	// Nothing was created before the outage ended, so there was no backlog.
	if len(s.Outages) != 1 || s.Outages[0].DrainTimeS == nil || *s.Outages[0].DrainTimeS != 0 || s.DrainTimeS == nil {
		t.Fatalf("outages %+v, drain_time_s %v; want drained at once", s.Outages, s.DrainTimeS)
	}
}

// TestFreshDeliveriesChangeNoFigure runs drills with every delivery
// offered fresh, its item made only when its partner is about to try it,
// and again with every delivery given its item when it is created (as
// past 2^32 events): the summaries must be the same byte for byte, bad
// data, hash jitter, breakers, replays and back-pressure included.
func TestFreshDeliveriesChangeNoFigure(t *testing.T) {
	for _, tc := range []struct {
		path      string
		overrides map[string]string
	}{
		{"demo-bad-data.toml", nil},                                              // bad data: the item's data draw
		{"demo-outage-breaker.toml", nil},                                        // a breaker holds a backlog
		{"fanout-outage.toml", map[string]string{"policy.retry.jitter": "hash"}}, // hash jitter reads the id
		{"fanout-replay.toml", nil},                                              // replays requeue dead letters
		{"demo-overload.toml", nil},                                              // the queue fills
	} {
		t.Run(tc.path, func(t *testing.T) {
			sameSummaryWhen(t, tc.path, tc.overrides, "every delivery gets its item when created", &freshEvents, 0)
		})
	}
}

// TestPrefetchChangesNoFigure runs small drills with the prefetch of
// package tuning on, as from 4,096 subscribers, and off: the summaries must
// be the same byte for byte, a hard restart's lost completions included
// (the prefetch reads the event queue's next event and asks for the
// slot, item and subscriber it names).
func TestPrefetchChangesNoFigure(t *testing.T) {
	if !tuning.On {
		t.Skip("built with stormdrill_notuning: no prefetch")
	}
	for _, tc := range []struct {
		path      string
		overrides map[string]string
	}{
		{"fanout-outage.toml", map[string]string{"duration": `"20m"`}}, // the flagship: breakers, held backlog
		{"fanout-replay.toml", nil},                                    // replays requeue dead letters
		{"testdata/sim_restart.toml", nil},                             // a hard restart loses attempts in flight
		{"demo-bad-data.toml", nil},                                    // bad data: the item's data draw
	} {
		t.Run(tc.path, func(t *testing.T) {
			sameSummaryWhen(t, tc.path, tc.overrides, "the prefetch is on", &prefetchFrom, 0)
		})
	}
}

// sameSummaryWhen runs the drill at path, then again with *seam set to v
// (what the change names), and fails unless the two summaries are the
// same byte for byte. It puts the seam back.
func sameSummaryWhen[T any](t *testing.T, path string, overrides map[string]string, change string, seam *T, v T) {
	t.Helper()
	before := summaryJSON(t, runDrill(t, loadDrill(t, path, overrides)))
	saved := *seam
	*seam = v
	defer func() { *seam = saved }()
	after := summaryJSON(t, runDrill(t, loadDrill(t, path, overrides)))
	if !bytes.Equal(before, after) {
		t.Fatalf("summaries differ when %s:\nbefore: %s\nafter: %s", change, before, after)
	}
}
