package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stormdrill/stormdrill/internal/testsuite"
)

// shortFlagshipSets shortens the flagship drill for a capacity search: a
// 3-minute outage in a 6-minute drill, drained for up to 15 minutes. The
// full tier searches it with 16 and 32 workers.
var shortFlagshipSets = []string{
	"--set", `duration="6m"`,
	"--set", `drain="15m"`,
	"--set", `partners[1].outages[0].start="1m"`,
	"--set", `partners[1].outages[0].for="3m"`,
}

// smallFlagshipSets cut the flagship down for the quick tier: 20
// subscribers, a 1-minute outage in a 2-minute drill; searched with 2 and
// 4 workers, it has the same boundary that moves with the pool, at a
// hundredth of the attempts per probe, so it runs under -race too.
var smallFlagshipSets = []string{
	"--set", `duration="2m"`,
	"--set", `drain="10m"`,
	"--set", `partners[0].count=19`,
	"--set", `partners[1].outages[0].start="30s"`,
	"--set", `partners[1].outages[0].for="1m"`,
}

// capacityCase is the drill settings, the two pool sizes and a rate at
// which more than one worker is needed, for the tier that runs.
func capacityCase() (sets []string, pools [2]string, rate string) {
	if testsuite.Full() {
		return shortFlagshipSets, [2]string{"16", "32"}, `"2/s"`
	}
	return smallFlagshipSets, [2]string{"2", "4"}, `"10/s"`
}

// capacitySummary is the part of a capacity summary.json the tests read.
type capacitySummary struct {
	Key     string   `json:"key"`
	Search  string   `json:"search"`
	Found   bool     `json:"found"`
	Answer  *float64 `json:"answer"`
	Failing *float64 `json:"failing"`
	Probes  []struct {
		Value float64 `json:"value"`
		Pass  bool    `json:"pass"`
	} `json:"probes"`
}

func readCapacitySummary(t *testing.T, dir string) capacitySummary {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s capacitySummary
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatalf("summary.json: %v", err)
	}
	return s
}

// capacityOnShortFlagship runs `stormdrill capacity` with the given workers
// and extra flags and returns its summary; it fails the test unless the
// command exits 0 having written every file.
func capacityOnShortFlagship(t *testing.T, workers string, extra ...string) capacitySummary {
	t.Helper()
	dir := t.TempDir()
	// One seed: these tests check the search itself.
	sets, _, _ := capacityCase()
	args := append([]string{"capacity", "drills/fanout-outage.toml", "--quiet", "--seeds", "1", "--out", dir, "--set", "dispatcher.workers=" + workers}, sets...)
	code, out, errOut := stormdrill(t, append(args, extra...)...)
	if code != exitOK {
		t.Fatalf("capacity (workers %s): exit %d\n%s%s", workers, code, out, errOut)
	}
	for _, f := range []string{"report.md", "summary.json", "capacity.png", "capacity.svg"} {
		if fi, err := os.Stat(filepath.Join(dir, f)); err != nil || fi.Size() == 0 {
			t.Errorf("capacity did not write %s: %v", f, err)
		}
	}
	md, _ := os.ReadFile(filepath.Join(dir, "report.md"))
	if !bytes.HasPrefix(md, []byte(out[:strings.Index(out, "\n")])) {
		t.Errorf("report.md does not start with what stdout printed")
	}
	return readCapacitySummary(t, dir)
}

// checkBracket asserts that the summary reports a bracketed boundary the
// probes agree with: the answer passed, the failing value failed, and no
// probe beyond the answer passed.
func checkBracket(t *testing.T, s capacitySummary) {
	t.Helper()
	if !s.Found || s.Answer == nil || s.Failing == nil {
		t.Fatalf("no bracketed boundary: %+v", s)
	}
	largest := s.Search == "largest"
	if largest && !(*s.Failing > *s.Answer) || !largest && !(*s.Failing < *s.Answer) {
		t.Fatalf("search %s: failing %g is on the wrong side of answer %g", s.Search, *s.Failing, *s.Answer)
	}
	for _, p := range s.Probes {
		switch {
		case p.Value == *s.Answer && !p.Pass:
			t.Errorf("the answer %g did not pass", p.Value)
		case p.Value == *s.Failing && p.Pass:
			t.Errorf("the failing value %g passed", p.Value)
		case p.Pass && (largest && p.Value > *s.Answer || !largest && p.Value < *s.Answer):
			t.Errorf("probe %g passed beyond the answer %g", p.Value, *s.Answer)
		}
	}
}

// capacity on a shortened flagship finds a rate boundary, writes its files,
// and the boundary rises when the worker pool doubles.
func TestCapacityFindsBoundaryThatMovesWithWorkers(t *testing.T) {
	_, pools, _ := capacityCase()
	small := capacityOnShortFlagship(t, pools[0])
	checkBracket(t, small)
	if small.Key != "source.rate" || small.Search != "largest" {
		t.Errorf("default search: key %q, search %q; want source.rate, largest", small.Key, small.Search)
	}
	if (*small.Failing-*small.Answer)/(*small.Answer) > 0.02+1e-9 {
		t.Errorf("bracket %g–%g is wider than the default 2%%", *small.Answer, *small.Failing)
	}
	large := capacityOnShortFlagship(t, pools[1])
	checkBracket(t, large)
	t.Logf("largest passing rate: %g/s with %s workers, %g/s with %s", *small.Answer, pools[0], *large.Answer, pools[1])
	if !(*large.Answer > *small.Answer) {
		t.Errorf("doubling the workers did not raise the boundary: %g/s → %g/s", *small.Answer, *large.Answer)
	}
}

// --vary dispatcher.workers searches the smallest passing pool, to a step
// of one.
func TestCapacityVaryWorkersFindsSmallestPool(t *testing.T) {
	_, pools, rate := capacityCase()
	s := capacityOnShortFlagship(t, pools[0], "--vary", "dispatcher.workers", "--set", "source.rate="+rate)
	checkBracket(t, s)
	if s.Search != "smallest" || *s.Failing != *s.Answer-1 {
		t.Errorf("want the smallest passing pool to a step of one, got answer %g, failing %g (%s)", *s.Answer, *s.Failing, s.Search)
	}
}

func TestCapacityUsageErrorsExit2(t *testing.T) {
	tests := []struct {
		args []string
		want string // in stderr
	}{
		{[]string{"capacity"}, "want one drill"},                                                    // no drill
		{[]string{"capacity", "drills/fanout-outage.toml", "--seeds", "0"}, "--seeds"},              // too few seeds
		{[]string{"capacity", "drills/fanout-outage.toml", "--min", "8", "--max", "2"}, "min"},      // empty range
		{[]string{"capacity", "drills/fanout-outage.toml", "--min", "fast"}, "--min"},               // not a number
		{[]string{"capacity", "drills/fanout-outage.toml", "--set", "workers"}, "KEY=VALUE"},        // no '='
		{[]string{"capacity", "drills/fanout-outage.toml", "--set", "no.such.key=1"}, "no.such"},    // unknown key
		{[]string{"capacity", "drills/fanout-outage.toml", "--precision", "2"}, "--precision"},      // not a fraction
		{[]string{"capacity", "no/such/drill.toml"}, "no such"},                                     // missing file
		{[]string{"capacity", "drills/fanout-outage.toml", "--vary", "policy.retry.jitter"}, "jit"}, // not a number
	}
	for _, tt := range tests {
		code, _, errOut := stormdrill(t, tt.args...)
		if code != exitUsage {
			t.Errorf("%v: exit %d, want 2; stderr %q", tt.args, code, errOut)
		}
		if !strings.Contains(errOut, tt.want) {
			t.Errorf("%v: stderr %q lacks %q", tt.args, errOut, tt.want)
		}
	}
}

// The same experiment run twice gives byte-identical runs.csv and
// summary.json, with one CSV row per cell × seed.
func TestSweepSameExperimentSameFiles(t *testing.T) {
	var dirs []string
	for range 2 {
		dir := t.TempDir()
		code, out, errOut := stormdrill(t, "sweep", "cmd/stormdrill/testdata/tiny-experiment.toml", "--out", dir, "--quiet")
		if code != exitOK {
			t.Fatalf("sweep: exit %d\n%s%s", code, out, errOut)
		}
		if !strings.Contains(out, "tiny: 4 cells × 2 seeds") {
			t.Errorf("stdout %q does not say cells × seeds", out)
		}
		dirs = append(dirs, dir)
	}
	for _, f := range []string{"runs.csv", "summary.json", "report.md", "report.html"} {
		a, err1 := os.ReadFile(filepath.Join(dirs[0], f))
		b, err2 := os.ReadFile(filepath.Join(dirs[1], f))
		if err1 != nil || err2 != nil {
			t.Fatalf("%s: %v %v", f, err1, err2)
		}
		if len(a) == 0 || !bytes.Equal(a, b) {
			t.Errorf("%s differs between two runs of the same experiment (or is empty)", f)
		}
	}
	csv, _ := os.ReadFile(filepath.Join(dirs[0], "runs.csv"))
	if lines := strings.Count(string(csv), "\n"); lines != 1+2*2*2 {
		t.Errorf("runs.csv has %d lines, want a header and 8 runs", lines)
	}
	for _, f := range []string{"plot_attempts.png", "plot_attempts.svg", "plot_completion_time.png"} {
		if fi, err := os.Stat(filepath.Join(dirs[0], f)); err != nil || fi.Size() == 0 {
			t.Errorf("sweep did not write %s: %v", f, err)
		}
	}
}

func TestSweepUsageErrorsExit2(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.toml")
	if err := os.WriteFile(bad, []byte("name = \"bad\"\nseeds = 2\nmetricz = [\"attempts\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args []string
		want string // in stderr
	}{
		{[]string{"sweep"}, "want one experiment"},                // no file
		{[]string{"sweep", "no/such/experiment.toml"}, "no such"}, // missing file
		{[]string{"sweep", bad}, "bad.toml:3: metricz"},           // typo, with FILE:LINE
	}
	for _, tt := range tests {
		code, _, errOut := stormdrill(t, tt.args...)
		if code != exitUsage {
			t.Errorf("%v: exit %d, want 2; stderr %q", tt.args, code, errOut)
		}
		if !strings.Contains(errOut, tt.want) {
			t.Errorf("%v: stderr %q lacks %q", tt.args, errOut, tt.want)
		}
	}
}

// textbookErlangC is the Erlang C formula as textbooks write it:
//
//	C(c, a) = (a^c/c! · c/(c−a)) / (Σ_{k<c} a^k/k! + a^c/c! · c/(c−a)),
//
// with a = λ/μ, summed term by term (the code under test uses the Erlang B
// recursion instead).
func textbookErlangC(c int, lambda, mu float64) float64 {
	a := lambda / mu
	sum, term := 0.0, 1.0 // term = a^k/k!
	for k := 0; k < c; k++ {
		sum += term
		term *= a / float64(k+1)
	}
	tail := term * float64(c) / (float64(c) - a)
	return tail / (sum + tail)
}

// textbookWaitP99 inverts the M/M/c wait tail P(Wq > t) = C·e^(−(cμ−λ)t)
// at 1%; 0 when fewer than 1% of arrivals wait.
func textbookWaitP99(c int, lambda, mu float64) float64 {
	pw := textbookErlangC(c, lambda, mu)
	if pw <= 0.01 {
		return 0
	}
	return math.Log(pw/0.01) / (float64(c)*mu - lambda)
}

// textbookMinWorkers is the smallest stable pool whose p99 queue wait is
// within targetS, counting up from 1.
func textbookMinWorkers(lambda, mu, targetS float64) int {
	for c := 1; c < 100_000; c++ {
		if lambda < float64(c)*mu && textbookWaitP99(c, lambda, mu) <= targetS {
			return c
		}
	}
	return 0
}

func sameTo6(a, b float64) bool {
	return a == b || math.Abs(a-b) <= 5e-7*math.Max(math.Abs(a), math.Abs(b))
}

// plan --json prints its inputs and the M/M/c figures; recomputing the
// figures from the printed inputs with the textbook formulas agrees to 6
// significant digits, so the JSON path shows the same numbers the Erlang
// tests check.
func TestPlanJSONErlangMatchesTextbook(t *testing.T) {
	for _, drill := range []string{"drills/fanout-outage.toml", "drills/demo-overload.toml", "drills/edi-partner.toml"} {
		code, out, errOut := stormdrill(t, "plan", drill, "--json")
		if code != exitOK {
			t.Fatalf("plan %s --json: exit %d\n%s", drill, code, errOut)
		}
		var p struct {
			Inputs struct {
				ArrivalPerS  float64 `json:"arrival_per_s"`
				Workers      int     `json:"workers"`
				MeanServiceS float64 `json:"mean_service_s"`
				MaxAttempts  int     `json:"max_attempts"`
				FailureProb  float64 `json:"failure_prob"`
			} `json:"inputs"`
			Pool struct {
				Stable     bool    `json:"stable"`
				TargetS    float64 `json:"queue_wait_target_s"`
				MinWorkers int     `json:"min_workers"`
				MMc        *struct {
					C      int     `json:"c"`
					Lambda float64 `json:"lambda_per_s"`
					Mu     float64 `json:"mu_per_s"`
					Rho    float64 `json:"rho"`
					PWait  float64 `json:"p_wait"`
					Lq     float64 `json:"lq"`
					Wq     float64 `json:"wq_s"`
					W      float64 `json:"w_s"`
					L      float64 `json:"l"`
					WqP99  float64 `json:"wq_p99_s"`
				} `json:"mmc"`
			} `json:"pool"`
		}
		if err := json.Unmarshal([]byte(out), &p); err != nil {
			t.Fatalf("plan %s --json: %v", drill, err)
		}
		in := p.Inputs
		// λ_eff = λ × (1 − p^k)/(1 − p), from the printed inputs.
		q, k := in.FailureProb, float64(in.MaxAttempts)
		attempts := k
		if q < 1 {
			attempts = (1 - math.Pow(q, k)) / (1 - q)
		}
		lambda, mu := in.ArrivalPerS*attempts, 1/in.MeanServiceS
		if want := textbookMinWorkers(lambda, mu, p.Pool.TargetS); p.Pool.MinWorkers != want {
			t.Errorf("%s: smallest pool for a p99 wait ≤ %gs is %d; textbook %d", drill, p.Pool.TargetS, p.Pool.MinWorkers, want)
		}
		if rho := lambda / (float64(in.Workers) * mu); rho >= 1 {
			// Unstable: no steady state to report.
			if p.Pool.Stable || p.Pool.MMc != nil {
				t.Errorf("%s: ρ = %g, but the plan reports a stable pool or M/M/c figures", drill, rho)
			}
			continue
		}
		m := p.Pool.MMc
		if m == nil || !p.Pool.Stable {
			t.Fatalf("%s: stable pool without M/M/c figures", drill)
		}
		if m.C != in.Workers || !sameTo6(m.Lambda, lambda) || !sameTo6(m.Mu, mu) {
			t.Errorf("%s: M/M/c inputs c %d λ %g μ %g; from the printed inputs c %d λ %g μ %g", drill, m.C, m.Lambda, m.Mu, in.Workers, lambda, mu)
		}
		c := float64(m.C)
		rho := lambda / (c * mu)
		pw := textbookErlangC(m.C, lambda, mu)
		lq := pw * rho / (1 - rho)
		wq := lq / lambda
		w := wq + 1/mu
		p99 := textbookWaitP99(m.C, lambda, mu)
		for _, f := range []struct {
			name      string
			got, want float64
		}{
			{"rho", m.Rho, rho},
			{"p_wait", m.PWait, pw},
			{"lq", m.Lq, lq},
			{"wq_s", m.Wq, wq},
			{"w_s", m.W, w},
			{"l", m.L, lambda * w}, // Little's law
			{"wq_p99_s", m.WqP99, p99},
		} {
			if !sameTo6(f.got, f.want) {
				t.Errorf("%s: %s = %.10g, textbook %.10g", drill, f.name, f.got, f.want)
			}
		}
		t.Logf("%s: c %d λ %.6g μ %.6g: P(wait) %.6g", drill, m.C, lambda, mu, pw)
	}
}

// TestSweepShardsMergeToTheWholeSweep: a sweep run as 3 shards and merged
// writes byte for byte the files of the same sweep run whole.
func TestSweepShardsMergeToTheWholeSweep(t *testing.T) {
	const exp = "cmd/stormdrill/testdata/tiny-experiment.toml"
	whole := t.TempDir()
	if code, out, errOut := stormdrill(t, "sweep", exp, "--out", whole, "--quiet"); code != exitOK {
		t.Fatalf("sweep: exit %d\n%s%s", code, out, errOut)
	}
	root := t.TempDir()
	var shards []string
	for i := range 3 {
		dir := filepath.Join(root, strconv.Itoa(i))
		code, out, errOut := stormdrill(t, "sweep", exp, "--shard", fmt.Sprintf("%d/3", i), "--out", dir, "--quiet")
		if code != exitOK {
			t.Fatalf("shard %d: exit %d\n%s%s", i, code, out, errOut)
		}
		shards = append(shards, dir)
	}
	// Merging needs every shard, once.
	if code, _, errOut := stormdrill(t, "merge", exp, shards[0], shards[2], "--out", t.TempDir()); code != exitUsage || !strings.Contains(errOut, "shards missing: 1 of 3") {
		t.Errorf("merge without shard 1: exit %d, stderr %q; want 2 naming the missing shard", code, errOut)
	}
	if code, _, errOut := stormdrill(t, "merge", exp, shards[0], shards[1], shards[1], shards[2], "--out", t.TempDir()); code != exitUsage || !strings.Contains(errOut, "also in") {
		t.Errorf("merge with shard 1 twice: exit %d, stderr %q; want 2", code, errOut)
	}
	merged := t.TempDir()
	// Shards in any order.
	if code, out, errOut := stormdrill(t, "merge", exp, shards[2], shards[0], shards[1], "--out", merged); code != exitOK {
		t.Fatalf("merge: exit %d\n%s%s", code, out, errOut)
	}
	entries, err := os.ReadDir(whole)
	if err != nil || len(entries) < 4 {
		t.Fatalf("the whole sweep wrote %d files: %v", len(entries), err)
	}
	for _, e := range entries {
		a, _ := os.ReadFile(filepath.Join(whole, e.Name()))
		b, err := os.ReadFile(filepath.Join(merged, e.Name()))
		if err != nil {
			t.Errorf("merge did not write %s", e.Name())
			continue
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs between the whole sweep and the merged shards", e.Name())
		}
	}
}

func TestSweepShardFlagRefusesBadShares(t *testing.T) {
	for _, v := range []string{"3/3", "-1/3", "1/0", "a/b", "1"} {
		code, _, errOut := stormdrill(t, "sweep", "cmd/stormdrill/testdata/tiny-experiment.toml", "--shard", v, "--out", t.TempDir())
		if code != exitUsage || !strings.Contains(errOut, "--shard") {
			t.Errorf("--shard %s: exit %d, stderr %q; want 2", v, code, errOut)
		}
	}
}

// skipUnderRace skips a test that only simulates, at length, under the race
// detector: the plain pass runs it, and the race pass would spend many
// minutes on code whose goroutines shorter tests already cover.
func skipUnderRace(t *testing.T, what string) {
	t.Helper()
	if raceEnabled {
		t.Skipf("%s; run by the plain pass, skipped under -race", what)
	}
}

// TestRunSeedsAndCapacityShardsThroughMerge: run --seeds and capacity take
// --shard I/N like sweep, and merge (given the drill file) writes the
// summary.json of the whole run. The experiments package compares every
// file; this checks the command line around it.
func TestRunSeedsAndCapacityShardsThroughMerge(t *testing.T) {
	const drill = "cmd/stormdrill/testdata/fanout-one.toml"
	cases := []struct {
		name string
		args []string
	}{
		{"run", []string{"run", drill, "--seeds", "4", "--quiet"}},
		{"capacity", []string{"capacity", drill, "--seeds", "2", "--max-probes", "4", "--precision", "0.3", "--vary", "dispatcher.workers", "--quiet"}},
	}
	for _, c := range cases {
		whole := t.TempDir()
		if code, out, errOut := stormdrill(t, append(c.args, "--out", whole)...); code != exitOK {
			t.Fatalf("%s: exit %d\n%s%s", c.name, code, out, errOut)
		}
		var shards []string
		for i := range 2 {
			dir := filepath.Join(t.TempDir(), strconv.Itoa(i))
			if code, out, errOut := stormdrill(t, append(c.args, "--shard", fmt.Sprintf("%d/2", i), "--out", dir)...); code != exitOK {
				t.Fatalf("%s shard %d: exit %d\n%s%s", c.name, i, code, out, errOut)
			}
			shards = append(shards, dir)
		}
		if code, _, errOut := stormdrill(t, "merge", drill, shards[1], "--out", t.TempDir()); code != exitUsage || !strings.Contains(errOut, "shards missing: 0 of 2") {
			t.Errorf("%s: merge without shard 0: exit %d, stderr %q; want 2", c.name, code, errOut)
		}
		merged := t.TempDir()
		if code, out, errOut := stormdrill(t, "merge", drill, shards[1], shards[0], "--out", merged); code != exitOK {
			t.Fatalf("%s merge: exit %d\n%s%s", c.name, code, out, errOut)
		}
		a, _ := os.ReadFile(filepath.Join(whole, "summary.json"))
		b, err := os.ReadFile(filepath.Join(merged, "summary.json"))
		if err != nil || len(a) == 0 || !bytes.Equal(a, b) {
			t.Errorf("%s: summary.json of the merged shards differs from the whole run's (%v)", c.name, err)
		}
	}
	if code, _, errOut := stormdrill(t, "run", drill, "--shard", "0/2", "--out", t.TempDir()); code != exitUsage || !strings.Contains(errOut, "--seeds") {
		t.Errorf("run --shard without --seeds: exit %d, stderr %q; want 2", code, errOut)
	}
	if code, _, errOut := stormdrill(t, "capacity", drill, "--seeds", "2", "--shard", "0/3", "--out", t.TempDir()); code != exitUsage || !strings.Contains(errOut, "at least one seed") {
		t.Errorf("capacity: 3 shards of 2 seeds: exit %d, stderr %q; want 2", code, errOut)
	}
}
