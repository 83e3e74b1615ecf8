package render

import (
	"fmt"
	"io"
	"strings"

	"github.com/stormdrill/stormdrill/reports"
)

// WriteComparisonMarkdown writes c as a Markdown section: which runs, the
// verdict, and one table row per metric.
func WriteComparisonMarkdown(w io.Writer, c *reports.Comparison) error {
	mw := &mdWriter{w: w}
	mw.line("## Comparison")
	mw.line("")
	var cv *comparisonView
	if c != nil {
		cv = buildComparisonView(c)
	}
	writeComparisonBody(mw, cv)
	return mw.err
}

// writeComparisonBody writes the comparison's verdict, how it decides and
// its changed rows; report.md and compare's Markdown both write it.
func writeComparisonBody(mw *mdWriter, c *comparisonView) {
	if c == nil {
		mw.line("No comparison.")
		return
	}
	mw.line(fmt.Sprintf("Base: %s · candidate: %s — **%s**", mdCode(c.Base), mdCode(c.Candidate), c.Verdict))
	if c.Method != "" {
		mw.line("")
		mw.line(c.Method)
	}
	mw.line("")
	if len(c.Rows) == 0 {
		mw.line(fmt.Sprintf("All %d figures are the same in both runs.", c.Same))
		return
	}
	if c.Seeds {
		mw.line("| metric | base mean | candidate mean | change | % change | 95% CI of change | p | verdict |")
		mw.line("| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
	} else {
		mw.line("| metric | base | candidate | change | % change | verdict |")
		mw.line("| --- | ---: | ---: | ---: | ---: | --- |")
	}
	for _, v := range c.Rows {
		if c.Seeds {
			mw.row(mdCode(v.Metric), v.Base, v.Candidate, v.Change, v.Percent, v.CI, v.P, mdCell(v.Verdict))
			continue
		}
		mw.row(mdCode(v.Metric), v.Base, v.Candidate, v.Change, v.Percent, mdCell(v.Verdict))
	}
	if c.Same > 0 {
		mw.line("")
		mw.line(fmt.Sprintf("%d more figures are the same in both runs and not shown.", c.Same))
	}
}

// comparisonVerdict names the exceeded tolerances, or says none was.
func comparisonVerdict(c *reports.Comparison) string {
	var failed []string
	for _, t := range c.Tolerances {
		if !t.Pass {
			failed = append(failed, t.Expr)
		}
	}
	switch {
	case len(failed) > 0:
		return "FAIL: tolerance " + strings.Join(failed, ", ") + " exceeded"
	case c.Failed:
		return "FAIL: a tolerance was exceeded"
	case len(c.Tolerances) > 0:
		return fmt.Sprintf("PASS: all %d tolerances hold", len(c.Tolerances))
	}
	return "PASS: no tolerance given"
}

// comparisonMethod says how a multi-seed comparison decides, in one line.
func comparisonMethod(c *reports.Comparison) string {
	side := func(what string, n int, other string) string {
		return fmt.Sprintf("The %s's figures are means over its %d seeds, the %s's those of its one run; "+
			"with one run on a side there is no test, so every change beyond a tolerance counts.", what, n, other)
	}
	switch {
	case c.CandidateMeanOf > 0:
		return side("candidate", c.CandidateMeanOf, "base")
	case c.BaseMeanOf > 0:
		return side("base", c.BaseMeanOf, "candidate")
	case c.BaseSeeds == 0:
		return ""
	}
	return fmt.Sprintf("Means over %d base and %d candidate seeds. Test: Welch's t-test on the per-seed values; "+
		"a tolerance fails only when the mean moved beyond it and the difference is significant (two-sided p < 0.05, "+
		"the 95%% confidence interval of the change excludes 0). \"noise\" marks a change that is not significant.",
		c.BaseSeeds, c.CandidateSeeds)
}

// shownRows leaves out the rows that did not change and carry no
// tolerance: a design review wants the differences, not forty equal pairs.
// same counts what was left out.
func shownRows(c *reports.Comparison) (rows []reports.CompareRow, same int) {
	for _, r := range c.Rows {
		if r.Tolerance == "" && r.Verdict() == "same" {
			same++
			continue
		}
		rows = append(rows, r)
	}
	return rows, same
}
