package reports

// PlotRef is one plot written by WritePlots: its title and the base names of
// its PNG and SVG files in the run directory. It belongs with the Markdown
// writer; it lives here until markdown.go declares it.
type PlotRef struct{ Title, PNG, SVG string }
