package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/stormdrill/stormdrill/drills"
	"github.com/stormdrill/stormdrill/drills/external"
)

const verifyExamples = `  # the release checklist against the River-based sender in cmd/
  stormdrill verify drills/verify/river.toml
  # against stormdrill's own dispatcher, run as an external system
  stormdrill verify drills/verify/dispatch.toml --out out/verify-dispatch`

func cmdVerify(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("verify", "DRILL.toml [--out DIR] [flags]", verifyExamples, stdout)
	out := fs.StringP("out", "o", "", "output directory (default out/verify-<drill name>); junit.xml and system.log go there")
	timeout := fs.Duration("timeout", external.DefaultVerifyTimeout, "how long each phase may wait for the system")
	perCase := fs.Int("deliveries", external.DefaultVerifyPerCase, "deliveries per scenario")
	quiet := fs.BoolP("quiet", "q", false, "no progress lines on stderr (one as each scenario starts and ends)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("stormdrill verify: name exactly one drill file with a [system] table (see --help)")
	}
	if *timeout <= 0 || *perCase < 1 || *perCase > external.MaxVerifyPerCase {
		return usagef("stormdrill verify: --timeout must be positive and --deliveries between 1 and %d", external.MaxVerifyPerCase)
	}
	d, err := drills.Load(pos[0], nil)
	if err != nil {
		return usageError{err}
	}
	if !d.IsExternal() {
		return usagef("stormdrill verify: %s: mode is %q; verify drives a system described by mode = \"external\" and [system]", pos[0], d.Mode)
	}
	if err := external.CheckPartnerServer(d); err != nil {
		return usageError{fmt.Errorf("%s: %w", pos[0], err)}
	}
	dir := *out
	if dir == "" {
		dir = filepath.Join("out", "verify-"+d.Name)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return runError{err}
	}
	logf, err := os.Create(filepath.Join(dir, "system.log"))
	if err != nil {
		return runError{err}
	}
	defer logf.Close()
	started := time.Now()
	var progress func(external.ScenarioProgress)
	if !*quiet {
		progress = verifyProgress(stderr, d.Name)
	}
	vs, err := external.Verify(d, dir, external.VerifyOptions{
		Options: external.Options{DrillDir: filepath.Dir(pos[0]), Log: logf, Env: externalEnv()},
		Timeout: *timeout, PerCase: *perCase, OnScenario: progress,
	})
	if err != nil {
		return runError{fmt.Errorf("verify %s: %w (system log: %s)", d.Name, err, filepath.Join(dir, "system.log"))}
	}
	failed, skipped := 0, 0
	for _, v := range vs {
		switch {
		case v.Skipped:
			skipped++
		case !v.Pass:
			failed++
		}
	}
	fmt.Fprintf(stdout, "verify %s: %d scenarios, %d passed, %d failed, %d skipped (%s)\n", d.Name, len(vs), len(vs)-failed-skipped, failed, skipped, time.Since(started).Round(100*time.Millisecond))
	for _, v := range vs {
		mark := "✓"
		switch {
		case v.Skipped:
			mark = "-"
		case !v.Pass:
			mark = "✗"
		}
		fmt.Fprintf(stdout, "  %s %-33s %s\n", mark, v.Scenario, v.Evidence)
	}
	jpath := filepath.Join(dir, "junit.xml")
	f, err := os.Create(jpath)
	if err != nil {
		return runError{err}
	}
	werr := external.WriteJUnit(f, d.Name, vs)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return runError{werr}
	}
	fmt.Fprintf(stdout, "  junit: %s\n", jpath)
	if failed > 0 {
		return errGateFailed
	}
	return nil
}

// verifyProgress writes one line as each scenario starts and one as it
// ends, with the time since the checklist began: the checklist takes
// minutes, and its scenarios run at once.
func verifyProgress(w io.Writer, drill string) func(external.ScenarioProgress) {
	return func(p external.ScenarioProgress) {
		at := p.At.Round(100 * time.Millisecond)
		if !p.Ended {
			fmt.Fprintf(w, "verify %s: %7s  started  %s\n", drill, at, p.Scenario)
			return
		}
		fmt.Fprintf(w, "verify %s: %7s  ended    %s after %s (%s)\n", drill, at, p.Scenario, p.Took.Round(100*time.Millisecond), p.Note)
	}
}
