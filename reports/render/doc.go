// Package render writes a run down for people and tools: the Markdown and
// HTML reports, the terminal summary, timeseries.csv, junit.xml, the plots
// and the index of a multi-drill run. It reads the result contract of
// package reports and decides nothing about it: a verdict, a figure's text
// and whether a figure is known all come from there. The Markdown, HTML,
// terminal and JUnit writers render one view of a run (buildView), and
// timeseries.csv, the charts and the plots one set of time-series columns
// (timeseriesColumns), so that they cannot say different things.
package render
