package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
	"golang.org/x/term"

	"github.com/stormdrill/stormdrill/drills"
	"github.com/stormdrill/stormdrill/experiments"
)

const capacityExamples = `  stormdrill capacity drills/fanout-outage.toml                      # largest source.rate that passes
  stormdrill capacity drills/fanout-outage.toml --seeds 10 --min 1 --max 8     # a tighter CI
  stormdrill capacity drills/fanout-outage.toml --vary dispatcher.workers   # smallest pool that passes
  stormdrill capacity drills/fanout-outage.toml --set dispatcher.workers=32 --out out/cap-32
  stormdrill capacity drills/fanout-outage.toml --seeds 6 --shard 0/3 --out shards/0   # on machines 0, 1, 2; then merge`

func cmdCapacity(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("capacity", "DRILL.toml [flags]", capacityExamples, stdout)
	vary := fs.String("vary", "source.rate", "the drill key to search: source.rate (largest passing) or an integer key such as dispatcher.workers (smallest passing)")
	minV := fs.String("min", "", "lower bound of the search (a rate like 2/s, or an integer)")
	maxV := fs.String("max", "", "upper bound of the search")
	seeds := fs.Int("seeds", experiments.DefaultCapacitySeeds, "seeds: the drill's seed, seed+1, …; the search runs once per seed and the answer, the least per-seed boundary, comes with the 95% CI of the per-seed boundaries")
	maxProbes := fs.Int("max-probes", experiments.DefaultMaxProbes, "bound on the number of probes")
	precision := fs.Float64("precision", experiments.DefaultRatePrecision, "rates: stop when the bracket is within this fraction")
	outDir := fs.StringP("out", "o", "", "output directory (default out/<drill name>-capacity)")
	quiet := fs.BoolP("quiet", "q", false, "no progress bar")
	asJSON := fs.Bool("json", false, "print the result as JSON (the report's summary.json) instead of Markdown")
	shardFlag := fs.String("shard", "", "with --seeds N: search only seeds I, I+N, … (I counts from 0) and write DIR/shard.json for `stormdrill merge`")
	var sets, limits multiFlag
	fs.Var(&sets, "set", "override a drill key for every probe, KEY=VALUE as TOML (repeatable)")
	fs.Var(&limits, "limit", limitUsage)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("stormdrill capacity: want one drill file (see --help)")
	}
	if *seeds < 1 || *seeds > experiments.MaxSeeds {
		return usagef("stormdrill capacity: --seeds: want 1 to %d", experiments.MaxSeeds)
	}
	if *maxProbes < 1 || *maxProbes > 1000 {
		return usagef("stormdrill capacity: --max-probes: want 1 to 1000")
	}
	if !(*precision > 0 && *precision < 1) {
		return usagef("stormdrill capacity: --precision: want a fraction in (0, 1)")
	}
	opt := experiments.CapacityOptions{Key: *vary, Seeds: *seeds, MaxProbes: *maxProbes, Precision: *precision, Overrides: map[string]string{}}
	for _, s := range sets {
		k, v, ok := strings.Cut(s, "=")
		if !ok || k == "" {
			return usagef("stormdrill capacity: --set %q: want KEY=VALUE", s)
		}
		opt.Overrides[k] = v
	}
	if _, err := limitOverrides("capacity", limits, opt.Overrides); err != nil {
		return err
	}
	if opt.Min, err = boundValue("--min", *minV, *vary); err != nil {
		return err
	}
	if opt.Max, err = boundValue("--max", *maxV, *vary); err != nil {
		return err
	}
	shard, err := parseShardFlag("capacity", *shardFlag)
	if err != nil {
		return err
	}
	d, err := experiments.LoadDrill(pos[0], opt.Overrides)
	if err != nil {
		return usageError{err}
	}
	if shard.Count > 1 {
		return capacityShard(pos[0], d.Name, opt, shard, *outDir, *quiet, stdout, stderr)
	}
	dir := *outDir
	if dir == "" {
		dir = filepath.Join("out", d.Name+"-capacity")
	}
	if err := checkOutDir("capacity", dir); err != nil {
		return err
	}
	bar := newCountBar(stderr, !*quiet && term.IsTerminal(int(os.Stderr.Fd())), d.Name+" capacity", "probes")
	opt.Progress = bar.update
	res, err := experiments.Capacity(pos[0], opt)
	bar.finish()
	if err != nil {
		if _, ok := drills.AsErrors(err); ok {
			return usageError{err}
		}
		return usagef("stormdrill capacity: %v", err)
	}
	return writeCapacityReport(res, dir, *asJSON, stdout)
}

// writeCapacityReport writes a finished search's report into dir and
// prints it (Markdown, or summary.json with asJSON); exit 1 when no value
// passes.
func writeCapacityReport(res *experiments.CapacityResult, dir string, asJSON bool, stdout io.Writer) error {
	if err := experiments.WriteCapacity(dir, res); err != nil {
		return runError{fmt.Errorf("writing the report: %w", err)}
	}
	if asJSON {
		js, err := os.ReadFile(filepath.Join(dir, "summary.json"))
		if err != nil {
			return runError{err}
		}
		if _, err := stdout.Write(js); err != nil {
			return runError{err}
		}
	} else {
		if err := experiments.WriteCapacityMarkdown(stdout, res); err != nil {
			return runError{err}
		}
		fmt.Fprintf(stdout, "\nreport: %s\n", filepath.Join(dir, "report.md"))
	}
	if !res.Found {
		return errGateFailed
	}
	return nil
}

// capacityShard is capacity --seeds N --shard I/N.
func capacityShard(file, name string, opt experiments.CapacityOptions, s experiments.Shard, out string, quiet bool, stdout, stderr io.Writer) error {
	dir := shardDir(out, name+"-capacity", s)
	if err := checkOutDir("capacity", dir); err != nil {
		return err
	}
	bar := newCountBar(stderr, !quiet && term.IsTerminal(int(os.Stderr.Fd())), name+" capacity shard "+s.String(), "probes")
	opt.Progress = bar.update
	err := experiments.CapacityShard(file, opt, s, dir)
	bar.finish()
	if err != nil {
		if _, ok := drills.AsErrors(err); ok {
			return usageError{err}
		}
		return usagef("stormdrill capacity: %v", err)
	}
	fmt.Fprintf(stdout, "%s: capacity shard %s; searches: %s\n", name, s, filepath.Join(dir, experiments.ShardFile))
	return nil
}

// boundValue reads --min or --max: a rate ("2/s") or a plain number. A
// rate is held to the drill's range of rates, so that no probe asks for an
// arrival gap that overflows.
func boundValue(flagName, s, key string) (float64, error) {
	if s == "" {
		return 0, nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || !(v > 0) {
		if v, err = drills.ParseRate(s); err != nil || !(v > 0) {
			return 0, usagef("stormdrill capacity: %s %q: want a positive number or a rate like 2/s", flagName, clipArg(s))
		}
	}
	if key == "source.rate" && (v < drills.MinRatePerSecond || v > drills.MaxRatePerSecond) {
		return 0, usagef("stormdrill capacity: %s %s: a rate must be between %g/s and %g/s", flagName, clipArg(s), drills.MinRatePerSecond, float64(drills.MaxRatePerSecond))
	}
	if v > 1e12 {
		return 0, usagef("stormdrill capacity: %s %s: at most 1e12", flagName, clipArg(s))
	}
	return v, nil
}

// countBar is a progress bar over a count of things (probes, runs), drawn
// on stderr only when it is a terminal and --quiet is not given.
type countBar struct {
	mu    sync.Mutex
	w     io.Writer
	on    bool
	name  string
	unit  string
	p     *mpb.Progress
	bar   *mpb.Bar
	total int64
}

func newCountBar(w io.Writer, interactive bool, name, unit string) *countBar {
	return &countBar{w: w, on: interactive, name: name, unit: unit}
}

func (b *countBar) update(done, total int) {
	if !b.on {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.bar == nil {
		b.p = mpb.New(mpb.WithOutput(b.w), mpb.WithWidth(40))
		b.total = int64(max(total, 1))
		b.bar = b.p.New(b.total, mpb.BarStyle(),
			mpb.PrependDecorators(decor.Name(b.name+" ", decor.WCSyncSpaceR), decor.CountersNoUnit("%d / %d "+b.unit, decor.WCSyncSpace)),
			mpb.AppendDecorators(decor.Elapsed(decor.ET_STYLE_GO, decor.WCSyncSpace)),
		)
	}
	if int64(total) != b.total {
		b.total = int64(total)
		b.bar.SetTotal(b.total, false)
	}
	b.bar.SetCurrent(int64(min(done, total)))
}

func (b *countBar) finish() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.bar == nil {
		return
	}
	b.bar.SetTotal(-1, true)
	b.p.Wait()
}
