// Package reports is the result contract of a run: the summary written to
// summary.json and read back by compare, the metric namespace that gates,
// tolerances and reports name figures by, gates and their verdict, the
// comparison of two runs, the statistics across seeds, findings, and the
// text every figure is written as (FormatValue, "unknown"). The renderers
// that turn a run into Markdown, HTML, CSV, JUnit, terminal lines and plots
// are in reports/render; the instrument that measures a run is reports/tally.
package reports
