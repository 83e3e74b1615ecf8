// Package reports records what a run measured and writes it down: the
// summary and its gates, plots, Markdown, HTML, JSON, CSV and JUnit, and the
// comparison of two runs.
package reports
