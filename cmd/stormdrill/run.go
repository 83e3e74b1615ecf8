package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/term"

	"github.com/stormdrill/stormdrill/drills"
	"github.com/stormdrill/stormdrill/drills/sim"
	"github.com/stormdrill/stormdrill/fakepartner"
	"github.com/stormdrill/stormdrill/reports"
	"github.com/stormdrill/stormdrill/reports/render"
)

const runExamples = `  stormdrill run drills/fanout-outage.toml
  stormdrill run drills/fanout-outage.toml --out out/seed-7 --seed 7
  stormdrill run 'drills/demo-*.toml' --quiet        # several drills; out/index.html links them
  stormdrill run drills/fanout-outage.toml --seeds 10 --out out/base     # mean and 95% CI of every figure
  stormdrill run drills/fanout-outage.toml --seeds 10 --shard 0/3 --out shards/0   # on machines 0, 1, 2; then merge
  stormdrill run drills/fanout-outage.toml --baseline out/baseline --fail-on healthy.latency.p99=+10%
  stormdrill run drills/live-restart.toml --store 'postgres://u:pw@127.0.0.1:5432/db'  # live, on PostgreSQL`

// runFlags is run's command line.
type runFlags struct {
	outDir, baseline, store, metricsAddr, summaryMD string
	shard                                           string // --shard I/N of --seeds
	dispatcherMetrics                               string
	seed                                            *uint64 // nil: the drill's
	seeds                                           int
	quiet, asJSON                                   bool
	failOn, limits                                  multiFlag
}

// runPlan is what run does, known before the first drill starts: every
// drill loaded, every output directory checked.
type runPlan struct {
	files  []string
	loaded []*drills.Drill
	dirs   []string
	base   *reports.Summary
	tols   []reports.Tolerance
}

func cmdRun(args []string, stdout, stderr io.Writer) error {
	rf, files, err := parseRunFlags(args, stdout)
	if err != nil {
		return err
	}
	p, err := planRun(rf, files, stderr)
	if err != nil {
		return err
	}
	if shard, err := parseShardFlag("run", rf.shard); err != nil || shard.Count > 1 {
		if err != nil {
			return err
		}
		if len(p.loaded) != 1 || rf.seeds < 2 || rf.baseline != "" || rf.asJSON {
			return usagef("stormdrill run: --shard: for one drill with --seeds N, without --baseline or --json (merge writes the report)")
		}
		return runSeedsShard(p.loaded[0], rf.seeds, shard, rf.outDir, rf.quiet, stdout, stderr)
	}
	if rf.dispatcherMetrics != "" {
		if len(p.loaded) != 1 || p.loaded[0].Mode != "live" || p.loaded[0].Dispatcher.Processes > 1 {
			return usagef("stormdrill run: --dispatcher-metrics: for one live drill (mode = \"live\") with one dispatcher process")
		}
		liveDispatcherMetrics = rf.dispatcherMetrics
		defer func() { liveDispatcherMetrics = "" }()
	}
	if rf.metricsAddr != "" {
		if len(p.loaded) != 1 || p.loaded[0].Mode != "live" {
			return usagef("stormdrill run: --metrics: for one live drill (mode = \"live\")")
		}
		liveMetrics = prometheus.NewRegistry()
		defer func() { liveMetrics = nil }()
		ms, err := serveMetrics("run", rf.metricsAddr, stderr, liveMetrics)
		if err != nil {
			return err
		}
		defer ms.Close()
	}
	return p.run(rf, stdout, stderr)
}

// parseRunFlags parses run's command line and checks what it can alone.
func parseRunFlags(args []string, stdout io.Writer) (*runFlags, []string, error) {
	rf := &runFlags{}
	fs := newFlags("run", "DRILL.toml... [flags]", runExamples, stdout)
	fs.StringVarP(&rf.outDir, "out", "o", "", "output directory (default out/<drill name>; with several drills, the parent of their directories, default out)")
	seed := fs.Uint64P("seed", "s", 0, "override the drill's seed")
	fs.BoolVarP(&rf.quiet, "quiet", "q", false, "no progress bar; one line per finished run")
	fs.BoolVar(&rf.asJSON, "json", false, "print summary.json on stdout (an array of them for several drills); progress and log lines go to stderr")
	fs.IntVar(&rf.seeds, "seeds", 1, "run each drill with this many seeds (seed, seed+1, …) in parallel and report the mean and 95% CI of every figure (simulation only)")
	fs.StringVar(&rf.baseline, "baseline", "", "compare against this run directory (or summary.json) and put the comparison in the report")
	fs.StringVar(&rf.store, "store", "", "live drills: the durable queue, sqlite:PATH or postgres://USER:PASS@127.0.0.1:PORT/DB (empty); overrides the drill's store")
	fs.StringVar(&rf.metricsAddr, "metrics", "", "one live drill: serve Prometheus metrics of its partner server on this loopback address while it runs, e.g. 127.0.0.1:9465")
	fs.StringVar(&rf.shard, "shard", "", "with --seeds N: simulate only seeds I, I+N, … (I counts from 0) and write DIR/shard.json for `stormdrill merge`")
	fs.StringVar(&rf.dispatcherMetrics, "dispatcher-metrics", "", "one live drill with one dispatcher process: the dispatcher serves its Prometheus metrics on this loopback address while it runs, e.g. 127.0.0.1:9464")
	fs.StringVar(&rf.summaryMD, "summary-md", os.Getenv("GITHUB_STEP_SUMMARY"), "append each run's terminal summary as Markdown to this file (default $GITHUB_STEP_SUMMARY when set, so a GitHub Actions job shows it)")
	fs.Var(&rf.failOn, "fail-on", "with --baseline: a tolerance such as healthy.latency.p99=+10% (repeatable); exceeding it fails the run")
	fs.Var(&rf.limits, "limit", limitUsage)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return nil, nil, err
	}
	if fs.Changed("seed") {
		rf.seed = seed
	}
	files, err := drillFiles("run", pos)
	if err != nil {
		return nil, nil, err
	}
	if err := checkFailOn("run", rf.failOn, rf.baseline); err != nil {
		return nil, nil, err
	}
	if rf.seeds < 1 || rf.seeds > reports.MaxSeeds {
		return nil, nil, usagef("stormdrill run: --seeds %d: want 1 to %d", rf.seeds, reports.MaxSeeds)
	}
	if len(rf.failOn) > 0 && rf.baseline == "" {
		return nil, nil, usagef("stormdrill run: --fail-on needs --baseline DIR to compare against")
	}
	if rf.dispatcherMetrics != "" {
		if _, err := fakepartner.CheckListen(rf.dispatcherMetrics, ""); err != nil {
			return nil, nil, usagef("stormdrill run: --dispatcher-metrics: %v", err)
		}
	}
	if rf.store != "" {
		if scheme, rest, _ := strings.Cut(rf.store, ":"); scheme != "sqlite" && scheme != "postgres" && scheme != "postgresql" || rest == "" {
			return nil, nil, usagef("stormdrill run: --store: want sqlite:PATH or postgres://USER:PASS@127.0.0.1:PORT/DB")
		}
	}
	return rf, files, nil
}

// planRun loads every drill and the baseline and checks every output
// directory: a typo in the third drill should not cost the time of
// running the first two.
func planRun(rf *runFlags, files []string, stderr io.Writer) (*runPlan, error) {
	p := &runPlan{files: files}
	ov, err := limitOverrides("run", rf.limits, nil)
	if err != nil {
		return nil, err
	}
	if p.tols, err = reports.ParseTolerances(rf.failOn); err != nil {
		return nil, usagef("stormdrill run: --fail-on: %v", err)
	}
	if rf.baseline != "" {
		if p.base, err = reports.ReadSummary(rf.baseline); err != nil {
			return nil, usagef("stormdrill run: --baseline: %v", err)
		}
	}
	if p.loaded, err = loadDrills(files, ov); err != nil {
		return nil, err
	}
	if err := checkDistinctNames(files, p.loaded); err != nil {
		return nil, err
	}
	for i, d := range p.loaded {
		if rf.seed != nil {
			d.Seed = *rf.seed
		}
		if rf.store != "" && d.Mode == "live" {
			d.Store = rf.store
		}
		if rf.seeds > 1 && d.Mode != "sim" {
			return nil, usagef("stormdrill run: %s: --seeds runs simulations only; %s is mode = %q", files[i], d.Name, d.Mode)
		}
		warnPlan(stderr, files[i], d)
	}
	multi := len(p.loaded) > 1
	p.dirs = make([]string, len(p.loaded))
	for i, d := range p.loaded {
		if multi {
			p.dirs[i] = filepath.Join(outDirFor(rf.outDir, ""), d.Name)
		} else {
			p.dirs[i] = outDirFor(rf.outDir, d.Name)
		}
		// A report that cannot be written is known before the run.
		if err := checkOutDir("run", p.dirs[i]); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// run runs the drills one after the other and writes their reports, the
// index of several and, with --json, their summaries on stdout.
func (p *runPlan) run(rf *runFlags, stdout, stderr io.Writer) error {
	interactive := !rf.quiet && term.IsTerminal(int(os.Stderr.Fd()))
	multi := len(p.loaded) > 1
	lines := stdout // the terminal summary or one line per run
	if rf.asJSON {
		lines = stderr
	}
	var index []render.IndexEntry
	var summaries []*reports.Summary
	worst := exitOK
	for i, d := range p.loaded {
		code, run, err := runOne(d, p.files[i], p.dirs[i], rf.seeds, rf.baseline, p.base, p.tols, interactive, lines, stderr, !multi && !rf.quiet && !rf.asJSON)
		if err != nil {
			return err
		}
		worst = max(worst, code)
		if run == nil {
			continue
		}
		if rf.summaryMD != "" {
			if err := appendSummaryMD(rf.summaryMD, run); err != nil {
				return runError{fmt.Errorf("--summary-md: %w", err)}
			}
		}
		index = append(index, render.IndexEntry{Name: d.Name, Dir: p.dirs[i], Pass: run.Summary.Pass && code == exitOK, Verdict: verdictLine(run.Summary)})
		summaries = append(summaries, run.Summary)
	}
	if multi {
		if err := writeRunIndex(rf.outDir, index, lines); err != nil {
			return err
		}
	}
	if rf.asJSON {
		if err := writeSummariesJSON(stdout, summaries, multi); err != nil {
			return runError{err}
		}
	}
	switch worst {
	case exitGateFail:
		return errGateFailed
	case exitRunFail:
		return runError{errors.New("at least one run failed")}
	}
	return nil
}

// writeRunIndex writes the index.html that links several drills' reports.
func writeRunIndex(outDir string, index []render.IndexEntry, w io.Writer) error {
	parent := outDir
	if parent == "" {
		parent = "out"
	}
	for i := range index {
		index[i].Dir = d2rel(parent, index[i].Dir)
	}
	f, err := os.Create(filepath.Join(parent, "index.html"))
	if err != nil {
		return runError{err}
	}
	werr := render.WriteIndex(f, index)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return runError{werr}
	}
	fmt.Fprintf(w, "index: %s\n", filepath.Join(parent, "index.html"))
	return nil
}

// writeSummariesJSON writes run --json's one document: the summary.json
// of the drill, or for several drills the array of theirs.
func writeSummariesJSON(w io.Writer, summaries []*reports.Summary, multi bool) error {
	if !multi && len(summaries) == 1 {
		return reports.WriteSummaryJSON(w, summaries[0])
	}
	var b bytes.Buffer
	b.WriteString("[")
	for i, s := range summaries {
		if i > 0 {
			b.WriteString(",")
		}
		if err := reports.WriteSummaryJSON(&b, s); err != nil {
			return err
		}
	}
	b.WriteString("]\n")
	var out bytes.Buffer
	if err := json.Indent(&out, b.Bytes(), "", "  "); err != nil {
		return err
	}
	_, err := w.Write(out.Bytes())
	return err
}

func d2rel(parent, dir string) string {
	if r, err := filepath.Rel(parent, dir); err == nil {
		return r
	}
	return dir
}

// runOne runs one drill, writes its files and prints its summary.
func runOne(d *drills.Drill, file, dir string, seeds int, baseName string, base *reports.Summary, tols []reports.Tolerance, interactive bool, stdout, stderr io.Writer, full bool) (int, *reports.Run, error) {
	started := time.Now()
	var run *reports.Run
	var err error
	switch {
	case seeds > 1:
		bar := newCountBar(stderr, interactive, d.Name, "seeds")
		run, err = runSeeds(d, seeds, bar.update)
		bar.finish()
	case d.Mode == "live":
		bar := newProgress(stderr, interactive, d)
		run, err = runLive(d, dir, bar.update)
		bar.finish()
	case d.Mode == "external":
		bar := newProgress(stderr, interactive, d)
		run, err = runExternal(d, file, dir, bar.update)
		bar.finish()
	default:
		bar := newProgress(stderr, interactive, d)
		run, err = sim.Run(d, sim.Options{Progress: bar.update})
		bar.finish()
	}
	if err != nil && run == nil {
		return exitRunFail, nil, runError{fmt.Errorf("%s: %w", d.Name, err)}
	}
	if base != nil {
		run.Baseline = reports.Compare(base, run.Summary, tols)
		run.Baseline.Base = baseName
		// The tolerances join the gates in the one verdict every file shows.
		reports.ApplyComparison(run.Summary, run.Baseline)
	}
	code := exitOK
	if !run.Summary.Pass {
		code = exitGateFail
	}
	if werr := render.WriteRunFiles(dir, run); werr != nil {
		return exitRunFail, run, runError{fmt.Errorf("%s: writing the report: %w", d.Name, werr)}
	}
	if err != nil {
		// The run finished but broke the accounting identity: the files are
		// written so the failure can be studied, and the status is 3.
		fmt.Fprintf(stderr, "stormdrill: %s: %v (report in %s; reproduce with --seed %d)\n", d.Name, err, dir, d.Seed)
		return exitRunFail, run, nil
	}
	if full {
		_ = render.WriteTerminalSummary(stdout, run)
		if code != exitOK && d.Mode == "sim" {
			// A simulated run is a pure function of the drill and its seed.
			fmt.Fprintf(stdout, "  reproduce: stormdrill run %s --seed %d\n", file, d.Seed)
		}
	} else {
		fmt.Fprintf(stdout, "%-28s %s  (%s, %s)\n", d.Name, verdictLine(run.Summary), dir, time.Since(started).Round(time.Millisecond))
	}
	return code, run, nil
}

// verdictLine is the one-line verdict of a run in a list of runs: the same
// verdict as the report's headline.
func verdictLine(s *reports.Summary) string {
	return reports.VerdictText(s)
}

// runSeeds runs d with seeds d.Seed, d.Seed+1, … in parallel, at most
// GOMAXPROCS at a time, and combines them: the first seed's run carrying
// every seed's summary and the statistics across them.
func runSeeds(d *drills.Drill, n int, progress func(done, total int)) (*reports.Run, error) {
	runs := make([]*reports.Run, n)
	errs := make([]error, n)
	var mu sync.Mutex
	done := 0
	progress(0, n)
	sem := make(chan struct{}, max(1, runtime.GOMAXPROCS(0)))
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			dd := *d
			dd.Seed = d.Seed + uint64(i)
			runs[i], errs[i] = sim.Run(&dd, sim.Options{})
			mu.Lock()
			done++
			progress(done, n)
			mu.Unlock()
		}()
	}
	wg.Wait()
	var firstErr error
	for i, err := range errs {
		if err == nil {
			continue
		}
		if runs[i] == nil {
			return nil, fmt.Errorf("seed %d: %w", d.Seed+uint64(i), err)
		}
		if firstErr == nil {
			firstErr = fmt.Errorf("seed %d: %w", d.Seed+uint64(i), err)
		}
	}
	return reports.CombineSeeds(runs), firstErr
}

// multiFlag is a repeatable flag: each use adds one value, taken whole
// (a TOML value or a tolerance may hold a comma).
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, " ") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }
func (m *multiFlag) Type() string       { return "strings" }

// drillFiles expands the drill arguments of a command; there must be at
// least one.
func drillFiles(cmd string, args []string) ([]string, error) {
	files, err := expandGlobs(args)
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, usagef("stormdrill %s: name at least one drill file (see --help)", cmd)
	}
	return files, nil
}

// expandGlobs expands shell-style patterns that the shell left alone.
func expandGlobs(args []string) ([]string, error) {
	var out []string
	for _, a := range args {
		matches, err := filepath.Glob(a)
		if err != nil {
			return nil, usagef("bad pattern %q: %v", a, err)
		}
		if len(matches) == 0 {
			if drills.ResolvesToBundled(a) {
				out = append(out, a) // drills.Load reads it from the binary
				continue
			}
			if _, err := os.Stat(a); err != nil {
				if b, ok := drills.BundledName(strings.TrimSuffix(a, ".toml")); ok && a == b.File {
					return nil, usagef("%s: no such drill file; the bundled drill is named without .toml: %s", a, b.Name)
				}
				return nil, usagef("%s: no such drill file, nor a bundled drill (stormdrill drills lists them)", a)
			}
			matches = []string{a}
		}
		out = append(out, matches...)
	}
	return out, nil
}

// appendSummaryMD appends the run's verdict, gates and totals as Markdown
// tables to a file, as GitHub Actions' job summary ($GITHUB_STEP_SUMMARY)
// expects: appended, one section per run.
func appendSummaryMD(path string, run *reports.Run) error {
	var b strings.Builder
	if err := render.WriteStepSummary(&b, run); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	_, werr := io.WriteString(f, b.String())
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	return werr
}
