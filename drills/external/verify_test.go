package external

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/stormdrill/stormdrill/drills"
	"github.com/stormdrill/stormdrill/internal/testsuite"
)

// tool is a main package that the tests build once.
type tool struct {
	pkg  string // relative to dir
	dir  string // where go build runs: "" for this package, or a module's directory
	once sync.Once
	bin  string
	err  error
}

var (
	// cmd/river-sender is a module of its own: built in its directory.
	riverSenderTool = &tool{pkg: ".", dir: "../../cmd/river-sender"}
	stormdrillTool  = &tool{pkg: "../../cmd/stormdrill"}
)

// build builds the tool once per test binary and returns its path.
func (tl *tool) build(t *testing.T) string {
	t.Helper()
	tl.once.Do(func() {
		dir, err := os.MkdirTemp("", "stormdrill-tool-")
		if err != nil {
			tl.err = err
			return
		}
		tl.bin = filepath.Join(dir, filepath.Base(filepath.Join(tl.dir, tl.pkg)))
		cmd := exec.Command("go", "build", "-o", tl.bin, tl.pkg)
		cmd.Dir = tl.dir
		if out, err := cmd.CombinedOutput(); err != nil {
			tl.err = fmt.Errorf("%v\n%s", err, out)
		}
	})
	if tl.err != nil {
		// A tool that does not build (cmd/river-sender's own module not
		// downloaded, say) fails under CI; elsewhere the test says why it
		// did not run.
		testsuite.NotRun(t, "a build of "+filepath.Base(filepath.Join(tl.dir, tl.pkg)),
			fmt.Sprintf("%v (go -C %s mod download fetches its modules)", tl.err, tl.dir))
	}
	return tl.bin
}

// riverSender builds cmd/river-sender once per test binary.
func riverSender(t *testing.T) string { return riverSenderTool.build(t) }

// stormdrillExe builds cmd/stormdrill once per test binary: the system
// under drill is `stormdrill dispatch`.
func stormdrillExe(t *testing.T) string { return stormdrillTool.build(t) }

// verifyRiver runs verify against the River sender with extra flags.
func verifyRiver(t *testing.T, flags ...string) []Verdict {
	t.Helper()
	d, err := drills.Load("../verify/river.toml", nil)
	if err != nil {
		t.Fatal(err)
	}
	d.System.Build = nil
	d.System.Start = append([]string{riverSender(t), "--max-attempts", "3", "--timeout", "2s"}, flags...)
	dir := t.TempDir()
	vs, err := Verify(d, dir, VerifyOptions{Options: Options{DrillDir: "../verify"}})
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	if len(vs) != len(Scenarios) {
		t.Fatalf("%d verdicts, want one per scenario (%d)", len(vs), len(Scenarios))
	}
	return vs
}

func failedScenarios(vs []Verdict) []string {
	var out []string
	for _, v := range vs {
		if !v.Pass || v.Skipped {
			out = append(out, v.Scenario)
		}
	}
	sort.Strings(out)
	return out
}

// defectCase is one run of a sender: its --defect ("" none) and the
// scenarios it must fail.
type defectCase struct {
	defect string
	fails  []string
}

// eachDefect runs every case in a parallel subtest (named after the
// defect, or correct) and checks that it failed exactly its scenarios;
// run starts the sender with the flags and may check more.
func eachDefect(t *testing.T, cases []defectCase, run func(t *testing.T, c defectCase, flags []string) []Verdict) {
	for _, c := range cases {
		name := c.defect
		if name == "" {
			name = "correct"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var flags []string
			if c.defect != "" {
				flags = []string{"--defect", c.defect}
			}
			vs := run(t, c, flags)
			if got := failedScenarios(vs); strings.Join(got, ",") != strings.Join(c.fails, ",") {
				for _, v := range vs {
					t.Logf("%s pass=%v: %s", v.Scenario, v.Pass, v.Evidence)
				}
				t.Fatalf("failed scenarios %v, want exactly %v", got, c.fails)
			}
		})
	}
}

// TestVerifyCatchesBrokenSenders runs the checklist against the River
// sender and against three broken versions of it: each defect must fail
// exactly the scenario that checks for it, and the sound sender none.
func TestVerifyCatchesBrokenSenders(t *testing.T) {
	if raceEnabled {
		t.Skip("runs in the plain test pass: several real-time runs of a River process")
	}
	t.Parallel() // beside TestVerifyWideJitter: both mostly wait on retry delays
	riverSender(t)
	eachDefect(t, []defectCase{
		{"", nil},
		{"retry-422", []string{ScenarioPermanent}},
		{"ignore-retry-after", []string{ScenarioRetryAfter}},
		{"new-key-per-attempt", []string{ScenarioLostAnswer}},
	}, func(t *testing.T, c defectCase, flags []string) []Verdict {
		vs := verifyRiver(t, flags...)
		checkJUnit(t, "verify-river", vs, len(c.fails))
		return vs
	})
}

// checkJUnit writes vs as junit.xml and checks it: one test case per
// scenario, failures of them failed.
func checkJUnit(t *testing.T, name string, vs []Verdict, failures int) {
	t.Helper()
	var b bytes.Buffer
	if err := WriteJUnit(&b, name, vs); err != nil {
		t.Fatal(err)
	}
	var suite struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Cases    []struct {
			Name string `xml:"name,attr"`
		} `xml:"testcase"`
	}
	if err := xml.Unmarshal(b.Bytes(), &suite); err != nil {
		t.Fatalf("junit.xml: %v", err)
	}
	if suite.Tests != len(Scenarios) || suite.Failures != failures || len(suite.Cases) != len(Scenarios) {
		t.Errorf("junit: %d tests, %d failures, %d cases; want %d, %d, %d", suite.Tests, suite.Failures, len(suite.Cases), len(Scenarios), failures, len(Scenarios))
	}
}

var jitterSenderTool = &tool{pkg: "./testdata/jittersender"}

// verifyJitter runs verify against testdata/jittersender with its retry
// delays cut tenfold (1.5 to 4.4 s) and extra flags, reporting progress to
// onScenario.
func verifyJitter(t *testing.T, onScenario func(ScenarioProgress), flags ...string) []Verdict {
	t.Helper()
	d, err := drills.Load("testdata/verify-jitter.toml", nil)
	if err != nil {
		t.Fatal(err)
	}
	d.System.Build = nil
	d.System.Start = append([]string{jitterSenderTool.build(t), "--retry-min", "1.5s", "--retry-max", "4.4s", "--max-attempts", "3"}, flags...)
	vs, err := Verify(d, t.TempDir(), VerifyOptions{Options: Options{DrillDir: "testdata"}, OnScenario: onScenario})
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	if len(vs) != len(Scenarios) {
		t.Fatalf("%d verdicts, want one per scenario (%d)", len(vs), len(Scenarios))
	}
	return vs
}

// TestVerifyWideJitter runs the checklist against a correct sender whose
// retries wait anywhere from 1.5 to 4.4 s (the 15–44 s of the issue, cut
// tenfold; the restart rule uses ranks, so the scale does not matter) and
// against two broken versions of it: each defect must fail exactly the
// scenario that checks for it, and the correct sender none. The correct
// run also checks the progress: one start and one end per scenario.
func TestVerifyWideJitter(t *testing.T) {
	if raceEnabled {
		t.Skip("runs in the plain test pass: real-time runs of a sender process")
	}
	t.Parallel()
	jitterSenderTool.build(t)
	eachDefect(t, []defectCase{
		{"", nil},
		{"restart-brings-retries-forward", []string{ScenarioRestart}},
		{"dead-letter-lost-answer", []string{ScenarioLostAnswer}},
	}, func(t *testing.T, c defectCase, flags []string) []Verdict {
		var steps []ScenarioProgress
		vs := verifyJitter(t, func(p ScenarioProgress) { steps = append(steps, p) }, flags...)
		for _, v := range vs {
			t.Logf("%s pass=%v: %s", v.Scenario, v.Pass, v.Evidence)
		}
		if c.defect != "" {
			return vs
		}
		starts, ends := map[string]int{}, map[string]int{}
		for _, p := range steps {
			if p.Ended {
				ends[p.Scenario]++
				if starts[p.Scenario] != 1 || p.Took <= 0 || p.Note != "settled" {
					t.Errorf("end of %s: %+v (after %d starts)", p.Scenario, p, starts[p.Scenario])
				}
			} else {
				starts[p.Scenario]++
			}
		}
		for _, s := range Scenarios {
			if starts[s] != 1 || ends[s] != 1 {
				t.Errorf("%s: %d starts and %d ends reported, want one each", s, starts[s], ends[s])
			}
		}
		return vs
	})
}
