package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"golang.org/x/term"

	"github.com/stormdrill/stormdrill/drills"
	"github.com/stormdrill/stormdrill/experiments"
)

const sweepExamples = `  stormdrill sweep experiments/jitter.toml
  stormdrill sweep experiments/breaker.toml --out out/breaker-seed-sweep --quiet
  # one sweep on three machines, then one report:
  stormdrill sweep experiments/jitter.toml --shard 0/3 --out shards/0   # on machine 0, 1, 2
  stormdrill merge experiments/jitter.toml shards/0 shards/1 shards/2 --out out/jitter`

func cmdSweep(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("sweep", "EXPERIMENT.toml [flags]", sweepExamples, stdout)
	outDir := fs.StringP("out", "o", "", "output directory (default out/<experiment name>)")
	quiet := fs.BoolP("quiet", "q", false, "no progress bar")
	shardFlag := fs.String("shard", "", "run only share I of N of the cells × seeds (I counts from 0) and write DIR/shard.json for merge")
	asJSON := fs.Bool("json", false, "print the report's summary.json (with --shard, the shard.json) on stdout; the line saying where the report is goes to stderr")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("stormdrill sweep: want one experiment file (see --help)")
	}
	e, err := experiments.LoadExperiment(pos[0])
	if err != nil {
		if _, ok := drills.AsErrors(err); ok {
			return usageError{err}
		}
		return usagef("stormdrill sweep: %v", err)
	}
	var shard experiments.Shard
	if *shardFlag != "" {
		if shard, err = experiments.ParseShard(*shardFlag); err != nil {
			return usagef("stormdrill sweep: --shard %v", err)
		}
	}
	dir := *outDir
	if dir == "" {
		dir = filepath.Join("out", e.Name)
		if shard.Count > 1 {
			dir = filepath.Join("out", fmt.Sprintf("%s-shard-%d-of-%d", e.Name, shard.Index, shard.Count))
		}
	}
	bar := newCountBar(stderr, !*quiet && term.IsTerminal(int(os.Stderr.Fd())), e.Name, "runs")
	res, err := experiments.RunSweep(e, experiments.SweepOptions{Progress: bar.update, Shard: shard})
	bar.finish()
	if err != nil {
		if _, ok := drills.AsErrors(err); ok {
			return usageError{err}
		}
		return runError{err}
	}
	lines := stdout
	if *asJSON {
		lines = stderr
	}
	if shard.Count > 1 {
		if err := experiments.WriteShard(dir, res); err != nil {
			return runError{fmt.Errorf("writing the shard: %w", err)}
		}
		fmt.Fprintf(lines, "%s: shard %s; runs: %s\n", e.Name, shard, filepath.Join(dir, experiments.ShardFile))
		return copyJSONOut(*asJSON, filepath.Join(dir, experiments.ShardFile), stdout)
	}
	err = writeSweepReport(e, res, dir, lines)
	if cerr := copyJSONOut(*asJSON, filepath.Join(dir, "summary.json"), stdout); err == nil {
		err = cerr
	}
	return err
}

// copyJSONOut copies a JSON file a command wrote to stdout, for --json.
func copyJSONOut(asJSON bool, path string, stdout io.Writer) error {
	if !asJSON {
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		return runError{err}
	}
	defer f.Close()
	if _, err := io.Copy(stdout, f); err != nil {
		return runError{err}
	}
	return nil
}

// writeSweepReport writes a whole sweep's report and says where it is.
func writeSweepReport(e *experiments.Experiment, res *experiments.SweepResult, dir string, stdout io.Writer) error {
	if err := experiments.WriteSweep(dir, res); err != nil {
		return runError{fmt.Errorf("writing the report: %w", err)}
	}
	failed := 0
	for _, c := range res.Cells {
		failed += c.Failed
	}
	fmt.Fprintf(stdout, "%s: %d cells × %d seeds; report: %s\n", e.Name, len(res.Cells), e.Seeds, filepath.Join(dir, "report.md"))
	if failed > 0 {
		return runError{fmt.Errorf("%d runs did not complete (see %s)", failed, filepath.Join(dir, "report.md"))}
	}
	return nil
}

const mergeExamples = `  stormdrill merge experiments/jitter.toml shards/0 shards/1 shards/2 --out out/jitter
  stormdrill merge experiments/jitter.toml shards/* --out out/jitter
  stormdrill merge drills/fanout-outage.toml shards/* --out out/base   # run --seeds or capacity shards: the drill file`

// cmdMerge puts the shards of one sweep, capacity search or multi-seed
// run together: the files it writes are byte for byte those of the whole
// run.
func cmdMerge(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("merge", "EXPERIMENT.toml|DRILL.toml SHARD_DIR... [--out DIR]", mergeExamples, stdout)
	outDir := fs.StringP("out", "o", "", "output directory (default out/<experiment name>)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) < 2 {
		return usagef("stormdrill merge: want the experiment (or drill) file and at least one shard directory (see --help)")
	}
	dirs, err := expandGlobs(pos[1:])
	if err != nil {
		return err
	}
	kind, err := experiments.ReadShardKind(dirs[0])
	if err != nil {
		return usagef("stormdrill merge: %v", err)
	}
	if kind != experiments.ShardKindSweep {
		return mergeShards(kind, pos[0], dirs, *outDir, stdout)
	}
	e, err := experiments.LoadExperiment(pos[0])
	if err != nil {
		if _, ok := drills.AsErrors(err); ok {
			return usageError{err}
		}
		return usagef("stormdrill merge: %v", err)
	}
	res, err := experiments.MergeShards(e, dirs)
	if err != nil {
		return usagef("stormdrill merge: %v", err)
	}
	dir := *outDir
	if dir == "" {
		dir = filepath.Join("out", e.Name)
	}
	return writeSweepReport(e, res, dir, stdout)
}
