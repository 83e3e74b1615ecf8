package main

import (
	"bytes"
	"encoding/xml"
	"flag"
	"fmt"
	"html"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stormdrill/stormdrill/drills"
	"github.com/stormdrill/stormdrill/experiments"
	"github.com/stormdrill/stormdrill/internal/testsuite"
	"github.com/stormdrill/stormdrill/reports"
	"github.com/stormdrill/stormdrill/reports/browsercheck"
	"github.com/stormdrill/stormdrill/reports/leakscan"
)

// stormdrill runs the CLI in-process from the repository root (where the
// bundled drills are) and returns its exit status and output.
func stormdrill(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	wd, _ := os.Getwd()
	if err := os.Chdir("../.."); err != nil {
		t.Fatal(err)
	}
	defer os.Chdir(wd)
	code = run(args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestEveryCommandHasHelpWithExamples(t *testing.T) {
	for _, c := range commands() {
		code, out, _ := stormdrill(t, c.name, "--help")
		if code != exitOK {
			t.Errorf("%s --help: exit %d, want 0", c.name, code)
		}
		if !strings.Contains(out, "Usage: stormdrill "+c.name) || !strings.Contains(out, "Examples:") {
			t.Errorf("%s --help lacks usage or examples:\n%s", c.name, out)
		}
		if n := strings.Count(out, "Usage: stormdrill "+c.name); n > 1 {
			t.Errorf("%s --help prints the usage %d times", c.name, n)
		}
	}
}

// TestUsageErrorsKeepStdoutClean: a bad flag is an error on stderr, not
// the whole usage on stdout, where results go.
func TestUsageErrorsKeepStdoutClean(t *testing.T) {
	for _, args := range [][]string{
		{"run", "--no-such-flag"}, // bad flag
		{"validate", "--seed"},    // a flag of another command
		{"compare", "--fail-on"},  // flag without its value
	} {
		code, out, errOut := stormdrill(t, args...)
		if code != exitUsage || out != "" || !strings.Contains(errOut, "see --help") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 2, nothing, the error", args, code, out, errOut)
		}
	}
}

// TestLoadDrillsReportsEveryBadFile: one validate run names the problems of
// every bad drill and still says which files are fine.
func TestLoadDrillsReportsEveryBadFile(t *testing.T) {
	code, out, errOut := stormdrill(t, "validate", "cmd/stormdrill/testdata/typo.toml", "drills/edi-partner.toml", "cmd/stormdrill/testdata/typo.toml", "--", "drills/fanout-outage.toml")
	if code != exitUsage {
		t.Fatalf("exit %d, want 2", code)
	}
	if n := strings.Count(errOut, "typo.toml:11:"); n != 2 {
		t.Errorf("stderr names typo.toml:11 %d times, want 2:\n%s", n, errOut)
	}
	for _, f := range []string{"drills/edi-partner.toml: ok", "drills/fanout-outage.toml: ok"} {
		if !strings.Contains(out, f) {
			t.Errorf("stdout lacks %q:\n%s", f, out)
		}
	}
}

func TestUsageErrorsExit2(t *testing.T) {
	tests := []struct {
		args []string
		want string // in stderr
	}{
		{[]string{"frobnicate"}, "unknown command"},              // no such command
		{[]string{"run"}, "name at least one drill"},             // no drill
		{[]string{"run", "--no-such-flag", "x.toml"}, "flag"},    // bad flag
		{[]string{"run", "no/such/drill.toml"}, "no such drill"}, // missing file
		{[]string{"compare", "only-one"}, "want two runs"},       // one run
		{[]string{"run", "drills/fanout-outage.toml", "--seed", "-1"}, "--seed"},
	}
	for _, tt := range tests {
		code, _, errOut := stormdrill(t, tt.args...)
		if code != exitUsage {
			t.Errorf("%v: exit %d, want 2", tt.args, code)
		}
		if !strings.Contains(errOut, tt.want) {
			t.Errorf("%v: stderr %q lacks %q", tt.args, errOut, tt.want)
		}
	}
}

func TestMalformedDrillIsRefusedWithFileLine(t *testing.T) {
	code, _, errOut := stormdrill(t, "validate", "cmd/stormdrill/testdata/typo.toml")
	if code != exitUsage {
		t.Fatalf("exit %d, want 2; stderr %s", code, errOut)
	}
	if !regexp.MustCompile(`typo\.toml:11: policy\.retry\.max_attemps: .*max_attempts`).MatchString(errOut) {
		t.Fatalf("want FILE:LINE: key: message with a suggestion, got %q", errOut)
	}
}

func TestValidateBundledDrills(t *testing.T) {
	files, _ := filepath.Glob("../../drills/*.toml")
	if len(files) < 8 {
		t.Fatalf("found %d bundled drills", len(files))
	}
	code, out, errOut := stormdrill(t, "validate", "drills/*.toml")
	if code != exitOK {
		t.Fatalf("validate drills/*.toml: exit %d\n%s%s", code, out, errOut)
	}
}

func TestFailingGateExits1WithOneJUnitFailurePerGate(t *testing.T) {
	dir := t.TempDir()
	code, out, errOut := stormdrill(t, "run", "cmd/stormdrill/testdata/gate-fails.toml", "--out", dir, "--quiet")
	if code != exitGateFail {
		t.Fatalf("exit %d, want 1\n%s%s", code, out, errOut)
	}
	data, err := os.ReadFile(filepath.Join(dir, "junit.xml"))
	if err != nil {
		t.Fatal(err)
	}
	var suites struct {
		Suites []struct {
			Tests    int `xml:"tests,attr"`
			Failures int `xml:"failures,attr"`
			Cases    []struct {
				Name     string     `xml:"name,attr"`
				Failures []struct{} `xml:"failure"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(data, &suites); err != nil {
		t.Fatalf("junit.xml: %v", err)
	}
	if len(suites.Suites) != 1 {
		t.Fatalf("%d suites", len(suites.Suites))
	}
	s := suites.Suites[0]
	failures := 0
	for _, c := range s.Cases {
		if len(c.Failures) > 1 {
			t.Errorf("case %s has %d failures", c.Name, len(c.Failures))
		}
		failures += len(c.Failures)
	}
	// lost == 0 holds; amplification < 1 and attempts < 10 fail; the
	// accounting identity (the fourth case) holds.
	if len(s.Cases) != 4 || failures != 2 || s.Failures != 2 {
		t.Fatalf("cases %d, failures %d (attr %d); want 4 cases, 2 failures", len(s.Cases), failures, s.Failures)
	}
	for _, f := range []string{"summary.json", "report.md", "report.html", "timeseries.csv", "junit.xml", "attempts.png", "attempts.svg"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("run did not write %s", f)
		}
	}
}

// TestBaselineToleranceFailsEveryOutput: a run whose gates all hold but
// whose --fail-on tolerance is exceeded against the baseline exits 1, and
// the terminal, report.md's headline, report.html, summary.json and
// junit.xml all say FAIL and name the tolerance.
func TestBaselineToleranceFailsEveryOutput(t *testing.T) {
	base, cand := t.TempDir(), t.TempDir()
	if code, out, e := stormdrill(t, "run", "drills/demo-outage-breaker.toml", "--out", base, "--quiet"); code != exitOK {
		t.Fatalf("base run: exit %d\n%s%s", code, out, e)
	}
	const tol = "amplification=+1%"
	// The impatient policy (no breaker, no backoff) passes its own gates
	// but makes more attempts.
	code, out, errOut := stormdrill(t, "run", "drills/demo-outage-no-backoff.toml", "--out", cand, "--baseline", base, "--fail-on", tol)
	if code != exitGateFail {
		t.Fatalf("exit %d, want 1\n%s%s", code, out, errOut)
	}
	first, _, _ := strings.Cut(out, "\n")
	if !strings.Contains(first, "FAIL") || !strings.Contains(first, tol) {
		t.Errorf("terminal verdict %q does not say FAIL naming %s", first, tol)
	}
	if strings.Contains(out, "PASS") {
		t.Errorf("terminal says PASS somewhere:\n%s", out)
	}
	md, _ := os.ReadFile(filepath.Join(cand, "report.md"))
	var headline string
	for _, line := range strings.Split(string(md), "\n") {
		if strings.HasPrefix(line, "**") {
			headline = line
			break
		}
	}
	if !strings.HasPrefix(headline, "**FAIL") || !strings.Contains(headline, tol) {
		t.Errorf("report.md headline %q does not say FAIL naming %s", headline, tol)
	}
	page, _ := os.ReadFile(filepath.Join(cand, "report.html"))
	if !regexp.MustCompile(`class="verdict fail">FAIL: [^<]*` + regexp.QuoteMeta(tol)).MatchString(html.UnescapeString(string(page))) {
		t.Errorf("report.html verdict does not say FAIL naming %s", tol)
	}
	s, err := reports.ReadSummary(cand)
	if err != nil {
		t.Fatal(err)
	}
	if s.Pass || len(s.Tolerances) != 1 || s.Tolerances[0].Expr != tol || s.Tolerances[0].Pass {
		t.Errorf("summary.json: pass %v, tolerances %+v; want pass false and %s failed", s.Pass, s.Tolerances, tol)
	}
	named := false
	for _, f := range s.Failures {
		named = named || strings.Contains(f, tol)
	}
	if !named {
		t.Errorf("summary.json failures %q do not name %s", s.Failures, tol)
	}
	data, _ := os.ReadFile(filepath.Join(cand, "junit.xml"))
	var doc struct {
		Cases []struct {
			Name     string     `xml:"name,attr"`
			Failures []struct{} `xml:"failure"`
		} `xml:"testsuite>testcase"`
	}
	if err := xml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, c := range doc.Cases {
		if c.Name == "tolerance "+tol {
			found = true
			if len(c.Failures) != 1 {
				t.Errorf("junit.xml case %q has %d failures, want 1", c.Name, len(c.Failures))
			}
		}
	}
	if !found {
		t.Errorf("junit.xml has no test case for the tolerance %s", tol)
	}
}

func TestCompareFailsOnTightTolerance(t *testing.T) {
	base, cand := t.TempDir(), t.TempDir()
	// The same outage with a breaker and with immediate retries: the
	// candidate makes more attempts per delivery.
	if code, out, e := stormdrill(t, "run", "drills/demo-outage-breaker.toml", "--out", base, "--quiet"); code > exitGateFail {
		t.Fatalf("base run: exit %d\n%s%s", code, out, e)
	}
	if code, out, e := stormdrill(t, "run", "drills/demo-outage-no-backoff.toml", "--out", cand, "--quiet"); code > exitGateFail {
		t.Fatalf("candidate run: exit %d\n%s%s", code, out, e)
	}
	code, out, errOut := stormdrill(t, "compare", base, cand)
	if code != exitOK || !strings.Contains(out, "amplification") || !strings.Contains(out, "| metric |") {
		t.Fatalf("compare without tolerances: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = stormdrill(t, "compare", base, cand, "--fail-on", "amplification=+1%")
	if code != exitGateFail {
		t.Fatalf("compare with a tight tolerance on the worse candidate: exit %d, want 1\n%s%s", code, out, errOut)
	}
}

func TestRunSeveralDrillsWritesIndex(t *testing.T) {
	dir := t.TempDir()
	code, out, errOut := stormdrill(t, "run", "drills/demo-healthy.toml", "drills/demo-bad-data.toml", "--out", dir, "--quiet")
	if code != exitOK {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	index, err := os.ReadFile(filepath.Join(dir, "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"demo-healthy", "demo-bad-data"} {
		if !strings.Contains(string(index), name+"/report.html") {
			t.Errorf("index.html does not link %s", name)
		}
		if _, err := os.Stat(filepath.Join(dir, name, "summary.json")); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	// One line per finished run, no progress bar, in quiet mode.
	if n := strings.Count(out, "PASS"); n != 2 {
		t.Errorf("want one PASS line per drill, got:\n%s", out)
	}
}

func TestPlanPrintsScheduleVerdictErlangAndDrain(t *testing.T) {
	code, out, errOut := stormdrill(t, "plan", "drills/fanout-outage.toml")
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	for _, want := range []string{"## Retry schedule", "**Window verdict:**", "Erlang C", "P(wait)", "## Outage drain", "acme"} {
		if !strings.Contains(out, want) {
			t.Errorf("plan output lacks %q", want)
		}
	}
	code, out, errOut = stormdrill(t, "plan", "drills/fanout-outage.toml", "--json")
	if code != exitOK || !strings.Contains(out, `"p_wait"`) || strings.Contains(out, "NaN") {
		t.Fatalf("plan --json: exit %d, output:\n%s%s", code, out, errOut)
	}
}

func TestPlanCheckStrict(t *testing.T) {
	code, out, errOut := stormdrill(t, "plan", "drills/demo-outage-breaker.toml", "--check", "--strict")
	if code != exitOK {
		t.Fatalf("plan --check --strict: exit %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{"| figure | analytic | simulated | ratio | verdict |", "| drain_time_s |", "within"} {
		if !strings.Contains(out, want) {
			t.Errorf("plan --check output lacks %q:\n%s", want, out)
		}
	}
	if code, _, errOut := stormdrill(t, "plan", "drills/demo-outage-breaker.toml", "--strict"); code != exitUsage || !strings.Contains(errOut, "--strict needs --check") {
		t.Errorf("--strict alone: exit %d, %s", code, errOut)
	}
	rows := []experiments.CheckRow{{Name: "drain_time_s", Analytic: 10, Simulated: 20, Off: true}, {Name: "amplification"}}
	var stderr strings.Builder
	if err := strictVerdict(true, rows, &stderr); err != errGateFailed || !strings.Contains(stderr.String(), "drain_time_s is off") {
		t.Errorf("strict verdict on an off figure: %v, %q", err, stderr.String())
	}
	if err := strictVerdict(false, rows, &stderr); err != nil {
		t.Errorf("without --strict: %v", err)
	}
}

// An external drill without [policy] is drilled with the system's own
// retry policy: plan says its figures are stormdrill's defaults', and
// --check refuses (exit 2) rather than compare two models of a policy the
// system does not have. One that declares the system's policy is planned
// and checked: the bundled River drills declare River's (its first two
// delays, all their outages reach) and external-dispatch stormdrill's.
func TestPlanExternalDrillWithoutPolicy(t *testing.T) {
	// The River drill less its declared policy: everything from the
	// comment that introduces it on.
	b, err := os.ReadFile("../../drills/external-river.toml")
	if err != nil {
		t.Fatal(err)
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	src, _, found := strings.Cut(string(b), "# River's retry policy as far as")
	if !found {
		t.Fatal("drills/external-river.toml: its policy's comment is gone; this test cuts the policy there")
	}
	bare := filepath.Join(t.TempDir(), "river-no-policy.toml")
	if err := os.WriteFile(bare, []byte(strings.Replace(src, `dir          = ".."`, `dir          = "`+root+`"`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := stormdrill(t, "plan", bare)
	if code != exitOK || !strings.Contains(errOut, "no [policy]") || !strings.Contains(out, "## Outage drain") {
		t.Errorf("plan: exit %d, stderr %q", code, errOut)
	}
	code, _, errOut = stormdrill(t, "plan", bare, "--check", "--strict")
	if code != exitUsage || !strings.Contains(errOut, "river-no-policy.toml: policy: ") || !strings.Contains(errOut, "--check has nothing to compare") {
		t.Errorf("plan --check --strict: exit %d, stderr %q; want exit 2 naming the file and policy", code, errOut)
	}
	for _, f := range []string{"drills/external-dispatch.toml", "drills/external-river.toml", "drills/compose/river.toml"} {
		if code, out, errOut := stormdrill(t, "plan", f, "--check", "--strict"); code != exitOK || errOut != "" || !strings.Contains(out, "| drain_time_s |") {
			t.Errorf("%s (declares its policy): exit %d, stderr %q", f, code, errOut)
		}
	}
}

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// TestGoldenReportFromFixedSeed runs a bundled drill with its fixed seed
// through the whole CLI and compares report.md and junit.xml with the golden
// files. After a deliberate change: go test ./cmd/stormdrill -run Golden -update
func TestGoldenReportFromFixedSeed(t *testing.T) {
	dir := t.TempDir()
	if code, out, errOut := stormdrill(t, "run", "drills/demo-outage-breaker.toml", "--out", dir, "--quiet"); code != exitOK {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	for _, name := range []string{"report.md", "junit.xml"} {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		golden := filepath.Join("testdata", "golden", "demo-outage-breaker."+name)
		if *update {
			if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(golden, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatalf("%v (run with -update to create it)", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from %s (run with -update after a deliberate change)\n--- got ---\n%s", name, golden, got)
		}
	}
}

func TestProgressText(t *testing.T) {
	cases := []struct {
		pr                   drills.Progress
		elapsed              time.Duration
		wantTime, wantCounts string
		wantETA              string
	}{
		// A third of the way after 2s of wall time: 4s left.
		{drills.Progress{DrillTime: 20 * time.Minute, Total: time.Hour, Created: 1234567, DLQ: 1500}, 2 * time.Second,
			"20m / 1h", "deliveries 1,234,567  DLQ 1,500", "ETA 4s"},
		// Past the source's end: the backlog drains, the ETA says so.
		{drills.Progress{DrillTime: 67*time.Minute + 23*time.Second, Total: time.Hour}, 3 * time.Second,
			"1h07m23s / 1h (draining)", "deliveries 0  DLQ 0", "ETA draining"},
		// Nothing yet: no division by zero.
		{drills.Progress{Total: time.Hour}, time.Second, "0s / 1h", "deliveries 0  DLQ 0", "ETA ?"},
	}
	for _, c := range cases {
		if got := timeText(c.pr); got != c.wantTime {
			t.Errorf("timeText = %q, want %q", got, c.wantTime)
		}
		if got := countsText(c.pr); got != c.wantCounts {
			t.Errorf("countsText = %q, want %q", got, c.wantCounts)
		}
		if got := etaText(c.pr, c.elapsed); got != c.wantETA {
			t.Errorf("etaText = %q, want %q", got, c.wantETA)
		}
	}
}

// TestProgressBarUpdatesWhileDrawing: the run updates the bar while mpb
// draws it from its own goroutine (run with -race); a non-interactive
// progress writes nothing at all.
func TestProgressBarUpdatesWhileDrawing(t *testing.T) {
	d := &drills.Drill{Name: "x"}
	var buf syncBuffer
	p := newProgress(&buf, true, d)
	p.started = time.Now().Add(-2 * progressBarDelay) // show the bar at once
	for i := range 200 {
		p.update(drills.Progress{DrillTime: time.Duration(i) * time.Second, Total: 200 * time.Second, Created: int64(i)})
		if i == 100 {
			// Half the updates come after the bar has drawn: they race
			// with its goroutine.
			testsuite.WaitFor(t, "the bar drawn", time.Minute, func() bool { return strings.Contains(buf.String(), "deliveries") })
		}
	}
	p.finish()
	if !strings.Contains(buf.String(), "deliveries") {
		t.Errorf("bar output lacks the counts: %q", buf.String())
	}
	var quiet syncBuffer
	q := newProgress(&quiet, false, d)
	q.started = time.Now().Add(-2 * progressBarDelay)
	q.update(drills.Progress{DrillTime: time.Second, Total: time.Minute})
	q.finish()
	if quiet.String() != "" {
		t.Errorf("non-interactive progress wrote %q", quiet.String())
	}
}

// syncBuffer is a bytes.Buffer safe for mpb's writer goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestRunWithBaselinePutsComparisonInReport(t *testing.T) {
	base, cand := t.TempDir(), t.TempDir()
	if code, out, e := stormdrill(t, "run", "drills/demo-outage-breaker.toml", "--out", base, "--quiet"); code != exitOK {
		t.Fatalf("base run: exit %d\n%s%s", code, out, e)
	}
	// The same drill as its own baseline: nothing regresses.
	same := t.TempDir()
	code, out, e := stormdrill(t, "run", "drills/demo-outage-breaker.toml", "--out", same, "--quiet", "--baseline", base, "--fail-on", "amplification=+1%")
	if code != exitOK {
		t.Fatalf("run against an identical baseline: exit %d\n%s%s", code, out, e)
	}
	// A worse policy against it (no breaker, no backoff: failing calls
	// retried at once): the tolerance fails the run and the report carries
	// the comparison.
	code, out, e = stormdrill(t, "run", "drills/demo-outage-no-backoff.toml", "--out", cand, "--quiet", "--baseline", base, "--fail-on", "amplification=+1%")
	if code != exitGateFail {
		t.Fatalf("run against the baseline with a tight tolerance: exit %d, want 1\n%s%s", code, out, e)
	}
	md, err := os.ReadFile(filepath.Join(cand, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "baseline") || !strings.Contains(string(md), "amplification=+1%") {
		t.Errorf("report.md lacks the baseline comparison:\n%s", md)
	}
}

// docsCITolerances are the --fail-on tolerances of the CI example in
// docs/reports.md, so that the test below checks what the docs tell users.
func docsCITolerances(t *testing.T) []string {
	t.Helper()
	readme, err := os.ReadFile("../../docs/reports.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(readme)
	i := strings.Index(text, "A CI gate against a stored baseline")
	if i < 0 {
		t.Fatal("docs/reports.md has no CI example")
	}
	block := text[i:]
	if j := strings.Index(block, "```sh"); j >= 0 {
		block = block[j:]
	}
	if j := strings.Index(block[5:], "```"); j >= 0 {
		block = block[:j+5]
	}
	var tols []string
	for _, m := range regexp.MustCompile(`--fail-on (\S+)`).FindAllStringSubmatch(block, -1) {
		tols = append(tols, m[1])
	}
	if len(tols) < 2 || !strings.Contains(block, "--seeds 10") {
		t.Fatalf("docs/reports.md's CI example has tolerances %q and no --seeds 10:\n%s", tols, block)
	}
	return tols
}

// flagshipVariant writes the flagship drill with each old → new replacement
// made (each must match once) and returns its path.
func flagshipVariant(t *testing.T, replace ...string) string {
	t.Helper()
	data, err := os.ReadFile("../../drills/fanout-outage.toml")
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	for i := 0; i+1 < len(replace); i += 2 {
		if strings.Count(text, replace[i]) != 1 {
			t.Fatalf("flagship drill: %q does not occur exactly once", replace[i])
		}
		text = strings.Replace(text, replace[i], replace[i+1], 1)
	}
	path := filepath.Join(t.TempDir(), "fanout-outage.toml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestSeedNoiseIsNotAFailure: the flagship with base seeds 42 and 7, ten
// seeds each, compares as not different under the example of docs/reports.md
// tolerances; the same drill with jitter = "none" is caught. max_attempts
// doubled changes nothing in the flagship itself (its breaker holds
// deliveries, so none reaches 8 attempts: the runs are identical), so it is
// checked on the flagship without its breaker, where the retry budget is
// what bounds the faulty subscriber's attempts.
func TestSeedNoiseIsNotAFailure(t *testing.T) {
	if testing.Short() || raceEnabled {
		// The plain pass runs it; under the race detector sixty flagship
		// hours take many minutes and find no race the shorter --seeds
		// tests do not.
		t.Skip("runs the flagship 60 times (skipped under -short and -race)")
	}
	tols := docsCITolerances(t)
	runSeeds := func(drill, seed string) string {
		dir := t.TempDir()
		path, _ := filepath.Abs(drill)
		code, out, errOut := stormdrill(t, "run", path, "--seeds", "10", "--seed", seed, "--out", dir, "--quiet")
		if code != exitOK {
			t.Fatalf("run %s --seed %s --seeds 10: exit %d\n%s%s", drill, seed, code, out, errOut)
		}
		return dir
	}
	compare := func(base, cand string) (int, string) {
		args := []string{"compare", base, cand}
		for _, tol := range tols {
			args = append(args, "--fail-on", tol)
		}
		code, out, errOut := stormdrill(t, args...)
		return code, out + errOut
	}
	flagship := "../../drills/fanout-outage.toml"
	base := runSeeds(flagship, "42")

	s, err := reports.ReadSummary(base)
	if err != nil {
		t.Fatal(err)
	}
	if s.Seeds == nil || len(s.Seeds.Runs) != 10 {
		t.Fatalf("summary.json of a --seeds 10 run has no statistics over 10 seeds: %+v", s.Seeds)
	}
	for _, r := range s.Seeds.Runs {
		if _, err := os.Stat(filepath.Join(base, "seeds", fmt.Sprint(r.Seed), "summary.json")); err != nil {
			t.Errorf("no per-seed summary for seed %d: %v", r.Seed, err)
		}
	}
	if f, ok := s.Seeds.Figure("healthy.latency.p99"); !ok || !(f.CILow < f.Mean && f.Mean < f.CIHigh) {
		t.Errorf("healthy.latency.p99 across seeds has no confidence interval: %+v", f)
	}

	if code, out := compare(base, runSeeds(flagship, "7")); code != exitOK {
		t.Errorf("seeds 42 and 7 compare as different (exit %d):\n%s", code, out)
	}
	noJitter := flagshipVariant(t, `jitter          = "full"`, `jitter          = "none"`)
	if code, out := compare(base, runSeeds(noJitter, "7")); code != exitGateFail || !strings.Contains(out, "Welch") {
		t.Errorf("jitter = \"none\" is not caught (exit %d):\n%s", code, out)
	}

	noBreaker := flagshipVariant(t, `trip      = "consecutive"`, `trip      = "none"`)
	doubled := flagshipVariant(t, `trip      = "consecutive"`, `trip      = "none"`, `max_attempts    = 8`, `max_attempts    = 16`)
	baseNB := runSeeds(noBreaker, "42")
	if code, out := compare(baseNB, runSeeds(doubled, "7")); code != exitGateFail {
		t.Errorf("max_attempts doubled is not caught (exit %d):\n%s", code, out)
	}
}

// TestFlagshipReportInBrowser runs the flagship drill through the CLI and
// opens its report.html in headless Chromium with the network blocked: no
// dead link, no request leaving the page, no console error, every chart
// drawn, and hovering a uPlot chart shows a value. The terminal headline
// leads with the faulty cohort's amplification and drain time.
func TestFlagshipReportInBrowser(t *testing.T) {
	chromium, err := browsercheck.Chromium()
	if err != nil {
		testsuite.NotRun(t, "Chromium", err.Error())
	}
	dir := t.TempDir()
	code, out, errOut := stormdrill(t, "run", "drills/fanout-outage.toml", "--out", dir)
	if code != exitOK {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	lines := strings.Split(out, "\n")
	if len(lines) < 2 || !strings.HasPrefix(strings.TrimSpace(lines[1]), "acme (faulty): amplification ") ||
		!strings.Contains(lines[1], "· drain time ") {
		t.Errorf("the headline does not lead with the faulty cohort's amplification and drain time:\n%s", out)
	}
	page, err := browsercheck.Visit(t.Context(), chromium, filepath.Join(dir, "report.html"), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range page.Problems {
		t.Errorf("page: %s", p)
	}
	for _, d := range page.DeadLinks {
		t.Errorf("dead link: %s", d)
	}
	if len(page.Charts) < 5 {
		t.Errorf("%d interactive charts, want at least 5", len(page.Charts))
	}
	for _, c := range page.Charts {
		if c.Painted < 1000 {
			t.Errorf("chart %s is not drawn (%d pixels painted)", c.ID, c.Painted)
		}
	}
	for _, p := range page.HoverProblems() {
		t.Error(p)
	}
	for _, leak := range leakscan.Find(page.Text) {
		t.Errorf("rendered text: %s", leak)
	}
	// The first lines say what the outage did.
	if !regexp.MustCompile(`acme unavailable 20m \(10m–30m\): [0-9,]+ retries, drained \S+ after it ended, [0-9,]+ dead letters?`).MatchString(page.Text) {
		t.Errorf("the page does not say what acme's outage did:\n%.600s", page.Text)
	}
}
