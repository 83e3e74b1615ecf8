package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/stormdrill/stormdrill/drills/sim"
	"github.com/stormdrill/stormdrill/experiments"
	"github.com/stormdrill/stormdrill/reports"
	"github.com/stormdrill/stormdrill/reports/render"
)

const compareExamples = `  stormdrill compare out/baseline out/fanout-outage
  stormdrill compare out/baseline out/fanout-outage --json
  stormdrill compare base/summary.json cand/summary.json --fail-on healthy.latency.p99=+10% --fail-on amplification=+0.2`

func cmdCompare(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("compare", "BASE CAND [flags]", compareExamples, stdout)
	var failOn multiFlag
	fs.Var(&failOn, "fail-on", "a tolerance such as healthy.latency.p99=+10% or amplification=+0.2 (repeatable); exceeding it exits 1")
	asJSON := fs.Bool("json", false, "print JSON instead of Markdown")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return usagef("stormdrill compare: want two runs, BASE and CAND (run directories or summary.json files)")
	}
	tols, err := reports.ParseTolerances(failOn)
	if err != nil {
		return usagef("stormdrill compare: --fail-on: %v", err)
	}
	base, err := reports.ReadSummary(pos[0])
	if err != nil {
		return usagef("stormdrill compare: %v", err)
	}
	cand, err := reports.ReadSummary(pos[1])
	if err != nil {
		return usagef("stormdrill compare: %v", err)
	}
	c := reports.Compare(base, cand, tols)
	c.Base, c.Candidate = pos[0], pos[1]
	write := render.WriteComparisonMarkdown
	if *asJSON {
		write = reports.WriteComparisonJSON
	}
	if err := write(stdout, c); err != nil {
		return runError{err}
	}
	if c.Failed {
		return errGateFailed
	}
	return nil
}

const planExamples = `  stormdrill plan drills/fanout-outage.toml
  stormdrill plan drills/fanout-outage.toml --json
  stormdrill plan drills/fanout-outage.toml --check     # also simulate and compare
  stormdrill plan drills/fanout-outage.toml --check --strict   # exit 1 when a figure is off`

func cmdPlan(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("plan", "DRILL.toml [flags]", planExamples, stdout)
	asJSON := fs.Bool("json", false, "print JSON instead of Markdown")
	check := fs.Bool("check", false, "run the simulation and put analytic and simulated figures side by side")
	strict := fs.Bool("strict", false, fmt.Sprintf("with --check: exit 1 when a figure is more than %g%% off the simulation", experiments.CheckTolerancePct))
	var limits multiFlag
	fs.Var(&limits, "limit", limitUsage)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("stormdrill plan: want one drill file")
	}
	if *strict && !*check {
		return usagef("stormdrill plan: --strict needs --check")
	}
	ov, err := limitOverrides("plan", limits, nil)
	if err != nil {
		return err
	}
	d, err := experiments.LoadDrill(pos[0], ov)
	if err != nil {
		return usageError{err}
	}
	if d.Mode == "external" && !d.PolicyDeclared() {
		// The system under drill retries by its own policy (River's
		// attempt⁴ seconds, say); the plan and the simulation would both
		// model stormdrill's defaults instead, so their agreement says
		// nothing about the system.
		const why = "mode = \"external\" and no [policy]: the system retries by its own policy, which neither the plan nor the simulation sees"
		if *check {
			return usagef("%s: policy: %s, so --check has nothing to compare; declare the system's policy under [policy] if stormdrill can express it", pos[0], why)
		}
		fmt.Fprintf(stderr, "stormdrill plan: %s: %s; the figures below are for stormdrill's default policy\n", pos[0], why)
	}
	in, err := experiments.PlanInputFor(d)
	if err != nil {
		return usageError{err}
	}
	p, err := experiments.MakePlan(in)
	if err != nil {
		return usagef("%s: %v", pos[0], err)
	}
	var rows []experiments.CheckRow
	if *check {
		run, err := sim.Run(d, sim.Options{})
		if err != nil {
			return runError{err}
		}
		s := run.Summary
		// Like with like only: the analytic queue wait is a p99 of a Poisson
		// stream, while the simulation's oldest ready age is the largest
		// age over the drill, outage backlogs included, so they are not
		// compared.
		sim := map[string]float64{}
		if s.Amplification != nil {
			sim[experiments.FigureAmplification] = *s.Amplification
		}
		if s.DrainTimeS != nil {
			sim[experiments.FigureDrainTime] = *s.DrainTimeS
		}
		for _, r := range p.CheckRows(sim) {
			if r.Name != experiments.FigureOldestReadyAge {
				rows = append(rows, r)
			}
		}
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if *check {
			if err := enc.Encode(struct {
				*experiments.Plan
				Check []experiments.CheckRow `json:"check"`
			}{p, rows}); err != nil {
				return runError{err}
			}
			return strictVerdict(*strict, rows, stderr)
		}
		return enc.Encode(p)
	}
	if err := p.WriteMarkdown(stdout); err != nil {
		return runError{err}
	}
	if *check {
		fmt.Fprintln(stdout, "\n## Analytic against simulated")
		fmt.Fprintf(stdout, "\nRatio is analytic ÷ simulated; a figure is off when it is more than %g%% of the simulated value away from it (times: and at least %gs).\n", experiments.CheckTolerancePct, experiments.CheckMinDiffS)
		fmt.Fprintln(stdout, "\n| figure | analytic | simulated | ratio | verdict | why |")
		fmt.Fprintln(stdout, "| --- | ---: | ---: | ---: | --- | --- |")
		for _, r := range rows {
			sim := fmt.Sprintf("%.4g %s", r.Simulated, r.Unit)
			if r.Missing {
				sim = "n/a"
			}
			ratio := "–"
			if r.Ratio != nil {
				ratio = fmt.Sprintf("%.2f", *r.Ratio)
			}
			verdict := "within"
			if r.Off {
				verdict = "**off**"
			}
			fmt.Fprintf(stdout, "| %s | %.4g %s | %s | %s | %s | %s |\n", r.Name, r.Analytic, r.Unit, sim, ratio, verdict, r.Why)
		}
		return strictVerdict(*strict, rows, stderr)
	}
	return nil
}

// strictVerdict fails plan --check --strict when a figure is off.
func strictVerdict(strict bool, rows []experiments.CheckRow, stderr io.Writer) error {
	if !strict {
		return nil
	}
	off := false
	for _, r := range rows {
		if r.Off {
			fmt.Fprintf(stderr, "stormdrill plan: %s is off: analytic %.4g, simulated %.4g (tolerance %g%%)\n", r.Name, r.Analytic, r.Simulated, experiments.CheckTolerancePct)
			off = true
		}
	}
	if off {
		return errGateFailed
	}
	return nil
}
