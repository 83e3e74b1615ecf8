package external

import (
	"bytes"
	"encoding/xml"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/stormdrill/stormdrill/drills"
)

// tool is a main package of this module that the tests build once.
type tool struct {
	pkg  string // relative to this package
	once sync.Once
	bin  string
	err  error
}

var (
	riverSenderTool = &tool{pkg: "../../cmd/river-sender"}
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
		tl.bin = filepath.Join(dir, filepath.Base(tl.pkg))
		out, err := exec.Command("go", "build", "-o", tl.bin, tl.pkg).CombinedOutput()
		if err != nil {
			tl.err = err
			t.Logf("%s", out)
		}
	})
	if tl.err != nil {
		t.Fatalf("building %s: %v", tl.pkg, tl.err)
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
	d.System.Start = append([]string{riverSender(t), "--max-attempts", "2", "--timeout", "2s"}, flags...)
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

// TestVerifyCatchesBrokenSenders runs the checklist against the River
// sender and against three broken versions of it: each defect must fail
// exactly the scenario that checks for it, and the sound sender none.
func TestVerifyCatchesBrokenSenders(t *testing.T) {
	if raceEnabled {
		t.Skip("runs in the plain test pass: several real-time runs of a River process")
	}
	cases := []struct {
		defect string
		fails  []string
	}{
		{"", nil},
		{"retry-422", []string{ScenarioPermanent}},
		{"ignore-retry-after", []string{ScenarioRetryAfter}},
		{"new-key-per-attempt", []string{ScenarioLostAnswer}},
	}
	riverSender(t)
	for _, c := range cases {
		name := c.defect
		if name == "" {
			name = "sound"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var flags []string
			if c.defect != "" {
				flags = []string{"--defect", c.defect}
			}
			vs := verifyRiver(t, flags...)
			got := failedScenarios(vs)
			if strings.Join(got, ",") != strings.Join(c.fails, ",") {
				for _, v := range vs {
					t.Logf("%s pass=%v: %s", v.Scenario, v.Pass, v.Evidence)
				}
				t.Fatalf("failed scenarios %v, want exactly %v", got, c.fails)
			}
			var b bytes.Buffer
			if err := WriteJUnit(&b, "verify-river", vs); err != nil {
				t.Fatal(err)
			}
			var suite struct {
				Tests    int `xml:"tests,attr"`
				Failures int `xml:"failures,attr"`
				Cases    []struct {
					Name    string    `xml:"name,attr"`
					Failure *struct{} `xml:"failure"`
				} `xml:"testcase"`
			}
			if err := xml.Unmarshal(b.Bytes(), &suite); err != nil {
				t.Fatalf("junit.xml: %v", err)
			}
			if suite.Tests != len(Scenarios) || suite.Failures != len(c.fails) || len(suite.Cases) != len(Scenarios) {
				t.Errorf("junit: %d tests, %d failures, %d cases; want %d, %d, %d", suite.Tests, suite.Failures, len(suite.Cases), len(Scenarios), len(c.fails), len(Scenarios))
			}
		})
	}
}
