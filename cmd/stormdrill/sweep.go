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
  stormdrill sweep experiments/breaker.toml --out out/breaker-seed-sweep --quiet`

func cmdSweep(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("sweep", "EXPERIMENT.toml [flags]", sweepExamples, stdout)
	outDir := fs.String("out", "", "output directory (default out/<experiment name>)")
	quiet := fs.Bool("quiet", false, "no progress bar")
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
	dir := *outDir
	if dir == "" {
		dir = filepath.Join("out", e.Name)
	}
	bar := newCountBar(stderr, !*quiet && term.IsTerminal(int(os.Stderr.Fd())), e.Name, "runs")
	res, err := experiments.RunSweep(e, experiments.SweepOptions{Progress: bar.update})
	bar.finish()
	if err != nil {
		if _, ok := drills.AsErrors(err); ok {
			return usageError{err}
		}
		return runError{err}
	}
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
