package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"golang.org/x/term"

	"github.com/stormdrill/stormdrill/drills"
	"github.com/stormdrill/stormdrill/experiments"
	"github.com/stormdrill/stormdrill/reports/render"
)

// Scale-out beyond one machine: run --seeds, capacity and sweep take the
// same --shard I/N (I counts from 0, as a Kubernetes Indexed Job's
// JOB_COMPLETION_INDEX), each shard writes DIR/shard.json, and merge puts
// the shards together into the files the whole run writes.

const shardUsage = "run only share I of N (I counts from 0) and write DIR/shard.json for `stormdrill merge`"

// parseShardFlag reads --shard; empty is the whole run.
func parseShardFlag(cmd, v string) (experiments.Shard, error) {
	if v == "" {
		return experiments.Shard{}, nil
	}
	s, err := experiments.ParseShard(v)
	if err != nil {
		return s, usagef("stormdrill %s: --shard %v", cmd, err)
	}
	return s, nil
}

// shardDir is where a shard writes: --out, or out/NAME-shard-I-of-N.
func shardDir(out, name string, s experiments.Shard) string {
	if out != "" {
		return out
	}
	return filepath.Join("out", fmt.Sprintf("%s-shard-%d-of-%d", name, s.Index, s.Count))
}

// runSeedsShard is run --seeds N --shard I/N: one simulated drill's share
// of the seeds.
func runSeedsShard(d *drills.Drill, seeds int, s experiments.Shard, out string, quiet bool, stdout, stderr io.Writer) error {
	dir := shardDir(out, d.Name, s)
	if err := checkOutDir("run", dir); err != nil {
		return err
	}
	bar := newCountBar(stderr, !quiet && term.IsTerminal(int(os.Stderr.Fd())), d.Name+" shard "+s.String(), "seeds")
	err := experiments.RunSeedsShard(d, seeds, s, dir, bar.update)
	bar.finish()
	if err != nil {
		return runError{err}
	}
	fmt.Fprintf(stdout, "%s: seeds shard %s; runs: %s\n", d.Name, s, filepath.Join(dir, experiments.ShardFile))
	return nil
}

// mergeShards is merge for the shards of run --seeds and of capacity;
// kind is what the first shard holds.
func mergeShards(kind, file string, dirs []string, out string, stdout io.Writer) error {
	if kind == experiments.ShardKindCapacity {
		res, err := experiments.MergeCapacityShards(file, dirs)
		if err != nil {
			if _, ok := drills.AsErrors(err); ok {
				return usageError{err}
			}
			return usagef("stormdrill merge: %v", err)
		}
		return writeCapacityReport(res, outDirFor(out, res.Drill+"-capacity"), false, stdout)
	}
	d, err := drills.Load(file, nil)
	if err != nil {
		return usageError{err}
	}
	run, err := experiments.MergeSeedShards(d, dirs)
	if run == nil {
		return usagef("stormdrill merge: %v", err)
	}
	dir := outDirFor(out, d.Name)
	if werr := render.WriteRunFiles(dir, run); werr != nil {
		return runError{fmt.Errorf("%s: writing the report: %w", d.Name, werr)}
	}
	if err != nil {
		// As run --seeds: a seed broke the accounting identity.
		return runError{fmt.Errorf("%s: %v (report in %s)", d.Name, err, dir)}
	}
	_ = render.WriteTerminalSummary(stdout, run)
	if !run.Summary.Pass {
		return errGateFailed
	}
	return nil
}
