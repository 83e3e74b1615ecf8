package render

import (
	"fmt"
	"io"

	"github.com/stormdrill/stormdrill/reports"
)

// WriteStepSummary writes a run as a CI job summary shows it (GitHub
// Actions' $GITHUB_STEP_SUMMARY): the verdict as a heading, then the gates
// and tolerances and the pipeline totals as Markdown tables, from the same
// view as report.md. It names no directory: the runner's paths mean
// nothing on the run's page, where the report is the uploaded artifact.
func WriteStepSummary(w io.Writer, run *reports.Run) error {
	if run == nil || run.Summary == nil {
		return fmt.Errorf("step summary: no summary")
	}
	v := buildView(run, nil)
	m := &mdWriter{w: w}
	mark := "❌"
	if v.Pass {
		mark = "✅"
	}
	m.line(fmt.Sprintf("### %s stormdrill %s", mark, mdCell(run.Summary.Drill)))
	m.line("")
	m.line("**" + mdCell(v.Verdict) + "**" + " — " + mdCell(v.Meta))
	writeMarkdownGates(m, v)
	m.line("")
	m.line("| figure" + scopeSuffix(v) + " | value |")
	m.line("| --- | ---: |")
	for _, f := range v.Figures {
		m.row(mdCell(f.Label), mdCell(f.Value))
	}
	m.line("")
	return m.err
}
