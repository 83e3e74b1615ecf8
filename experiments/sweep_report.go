package experiments

import (
	"bytes"
	"cmp"
	"encoding/base64"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"html/template"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/stormdrill/stormdrill/reports"
	"github.com/stormdrill/stormdrill/reports/render"
)

// Plot geometry: 8in × 4.5in (PNG at the reports package's 100 dpi).
const (
	plotWidth  = 8 * vg.Inch
	plotHeight = 4.5 * vg.Inch
	// maxPlotLines bounds the lines of one sweep plot; more combinations of
	// the other axes are left to the table.
	maxPlotLines = 12
)

// palette is Okabe–Ito, as the run reports use.
var palette = []color.NRGBA{
	{R: 0x00, G: 0x72, B: 0xB2, A: 0xFF},
	{R: 0xE6, G: 0x9F, B: 0x00, A: 0xFF},
	{R: 0x00, G: 0x9E, B: 0x73, A: 0xFF},
	{R: 0xD5, G: 0x5E, B: 0x00, A: 0xFF},
	{R: 0xCC, G: 0x79, B: 0xA7, A: 0xFF},
	{R: 0x56, G: 0xB4, B: 0xE9, A: 0xFF},
	{R: 0xF0, G: 0xE4, B: 0x42, A: 0xFF},
	{R: 0x00, G: 0x00, B: 0x00, A: 0xFF},
}

// WriteSweep writes the sweep's files into dir: report.md, report.html,
// runs.csv, summary.json and one plot per metric (NAME.png, NAME.svg). The
// same result gives byte-identical files.
func WriteSweep(dir string, r *SweepResult) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	plots, err := sweepPlots(r)
	if err != nil {
		return err
	}
	var svgs [][]byte
	for _, p := range plots {
		for _, f := range []string{"png", "svg"} {
			data, err := renderPlot(p.draw, f)
			if err != nil {
				return fmt.Errorf("plot %s: %w", p.name, err)
			}
			if err := os.WriteFile(filepath.Join(dir, p.name+"."+f), data, 0o644); err != nil {
				return err
			}
			if f == "svg" {
				svgs = append(svgs, data)
			}
		}
	}
	files := []struct {
		name  string
		write func(*bytes.Buffer) error
	}{
		{"report.md", func(b *bytes.Buffer) error { return writeSweepMarkdown(b, r, plots) }},
		{"report.html", func(b *bytes.Buffer) error { return writeSweepHTML(b, r, plots, svgs) }},
		{"runs.csv", func(b *bytes.Buffer) error { return writeRunsCSV(b, r) }},
		{"summary.json", func(b *bytes.Buffer) error { return writeSweepJSON(b, r) }},
	}
	for _, f := range files {
		var b bytes.Buffer
		if err := f.write(&b); err != nil {
			return fmt.Errorf("%s: %w", f.name, err)
		}
		if err := os.WriteFile(filepath.Join(dir, f.name), b.Bytes(), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// FormatValue writes a metric value in its unit, as a run's report does
// (reports.FormatValue): durations "850ms", "12.3s", "4m46s", fractions as
// percentages, counts with thousands separators ("1,377").
func FormatValue(metric string, v float64) string {
	return reports.FormatValue(metricKind(metric), v)
}

// columnFormat writes every value of one table column in one unit and one
// precision, chosen from the largest value in the column: a duration
// column reads all in ms, all in s or all in min, never "286.19s" above
// "10.8min", and a mean and its ± carry the same decimals ("598.3 ± 0.0",
// never "598.3 ± 0.009742").
func columnFormat(metric string, stats []Stat) func(float64) string {
	largest, whole := 0.0, true
	for _, st := range stats {
		for _, v := range []float64{st.Mean, st.Min, st.Max, st.CIHalf} {
			if !math.IsNaN(v) {
				largest = math.Max(largest, math.Abs(v))
				whole = whole && v == math.Trunc(v)
			}
		}
	}
	div, unit, decimals := 1.0, "", decimalsFor(largest)
	switch metricKind(metric) {
	case reports.Duration:
		div, unit, decimals = 1, "s", 2
		switch {
		case largest > 0 && largest < 1:
			div, unit, decimals = 0.001, "ms", 1
		case largest >= 600:
			div, unit, decimals = 60, "min", 1
		}
	case reports.Fraction:
		div, unit, decimals = 0.01, "%", 2
	case reports.Count:
		decimals = 1
		if whole {
			decimals = 0
		}
	}
	return func(v float64) string {
		if math.IsNaN(v) {
			return "n/a"
		}
		return strconv.FormatFloat(v/div, 'f', decimals, 64) + unit
	}
}

// decimalsFor gives about four significant digits to the largest value of
// a column: 1234.5, 123.45, 12.345, 1.2345 → 1, 2, 3, 3 decimals.
func decimalsFor(largest float64) int {
	switch {
	case largest >= 1000:
		return 0
	case largest >= 100:
		return 1
	case largest >= 10:
		return 2
	}
	return 3
}

// statParts is a table cell in two parts: "mean ± CI half-width" and
// "[min – max]" (empty for one seed), in the column's format.
func statParts(format func(float64) string, st Stat) (mean, span string) {
	if st.N == 0 {
		return "n/a", ""
	}
	if st.N == 1 {
		return format(st.Mean), ""
	}
	return format(st.Mean) + " ± " + format(st.CIHalf), "[" + format(st.Min) + " – " + format(st.Max) + "]"
}

// statCell is a table cell on one line: mean ± CI [min – max].
func statCell(format func(float64) string, st Stat) string {
	mean, span := statParts(format, st)
	return strings.TrimSpace(mean + " " + span)
}

// alwaysZero reports whether metric mi is 0 on every seed of every cell
// that has it (and some cell has it): a plot of it says nothing.
func (r *SweepResult) alwaysZero(mi int) bool {
	seen := false
	for _, c := range r.Cells {
		if mi >= len(c.Stats) || c.Stats[mi].N == 0 {
			continue
		}
		st := c.Stats[mi]
		if st.Min != 0 || st.Max != 0 {
			return false
		}
		seen = true
	}
	return seen
}

// zeroLine names the metrics that are 0 in every run, in one line; ""
// when there are none.
func (r *SweepResult) zeroLine() string {
	var zero []string
	for mi, m := range r.Experiment.Metrics {
		if r.alwaysZero(mi) {
			zero = append(zero, m)
		}
	}
	if len(zero) == 0 {
		return ""
	}
	return "Always 0 in every run, so not plotted: " + strings.Join(zero, ", ") + "."
}

// columnFormats is one formatter per metric column of the table.
func (r *SweepResult) columnFormats() []func(float64) string {
	out := make([]func(float64) string, len(r.Experiment.Metrics))
	for i, m := range r.Experiment.Metrics {
		stats := make([]Stat, 0, len(r.Cells))
		for _, c := range r.Cells {
			if i < len(c.Stats) {
				stats = append(stats, c.Stats[i])
			}
		}
		out[i] = columnFormat(m, stats)
	}
	return out
}

func (r *SweepResult) tableHeader() []string {
	var h []string
	for _, a := range r.Experiment.Axes {
		h = append(h, a.Key)
	}
	h = append(h, "gates passed")
	return append(h, r.Experiment.Metrics...)
}

func (r *SweepResult) tableRow(c *CellResult, formats []func(float64) string) []string {
	row := append([]string{}, c.Labels...)
	pass := fmt.Sprintf("%d/%d", c.Passed, r.Experiment.Seeds)
	if c.Failed > 0 {
		pass += fmt.Sprintf(" (%d failed)", c.Failed)
	}
	row = append(row, pass)
	for i := range r.Experiment.Metrics {
		row = append(row, statCell(formats[i], c.Stats[i]))
	}
	return row
}

func mdEscape(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

func writeSweepMarkdown(b *bytes.Buffer, r *SweepResult, plots []sweepPlot) error {
	e := r.Experiment
	fmt.Fprintf(b, "# Experiment: %s\n\n", e.Name)
	if e.Description != "" {
		fmt.Fprintf(b, "%s\n\n", e.Description)
	}
	fmt.Fprintf(b, "%d cells × %d seeds = %d runs. Each cell: mean ± half-width of the 95%% confidence interval of the mean (Student t, n−1 degrees of freedom) [min – max] across seeds.\n\n",
		len(r.Cells), e.Seeds, len(r.Runs))
	h := r.tableHeader()
	b.WriteString("| " + strings.Join(h, " | ") + " |\n|")
	for range h {
		b.WriteString(" --- |")
	}
	b.WriteString("\n")
	formats := r.columnFormats()
	for i := range r.Cells {
		row := r.tableRow(&r.Cells[i], formats)
		for k := range row {
			row[k] = mdEscape(row[k])
		}
		b.WriteString("| " + strings.Join(row, " | ") + " |\n")
	}
	if errs := r.runErrors(5); len(errs) > 0 {
		b.WriteString("\n## Runs that failed\n\n")
		for _, s := range errs {
			b.WriteString("- " + s + "\n")
		}
	}
	if z := r.zeroLine(); z != "" {
		b.WriteString("\n" + z + "\n")
	}
	if len(plots) > 0 {
		b.WriteString("\n## Plots\n\n")
		for _, p := range plots {
			fmt.Fprintf(b, "![%s](%s.png)\n\n", p.title, p.name)
		}
	}
	b.WriteString("Every run is in runs.csv; the statistics are in summary.json.\n")
	return nil
}

// runErrors lists the first few failed runs.
func (r *SweepResult) runErrors(limit int) []string {
	var out []string
	for _, run := range r.Runs {
		if run.Err == "" {
			continue
		}
		if len(out) == limit {
			out = append(out, "…")
			break
		}
		first, _, _ := strings.Cut(run.Err, "\n")
		out = append(out, fmt.Sprintf("cell %s, seed %d: %s", strings.Join(r.Cells[run.Cell].Labels, ", "), run.Seed, first))
	}
	return out
}

// sweepHTML is the template of a sweep's report.html, parsed on
// first use: parsed at start, it would sit on the heap of every command,
// most of which write no page.
var sweepHTML = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("sweep").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Experiment: {{.Name}}</title>
<style>
body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1200px;padding:0 1em;color:#222}
.scroll{overflow-x:auto;max-width:100%}
table{border-collapse:collapse;font-size:.9em}th,td{border:1px solid #ccc;padding:.3em .6em;text-align:right;vertical-align:top}
th{background:#f4f4f4}td.l{text-align:left}td span{white-space:nowrap}td .span{display:block;font-size:.85em;color:#555}
figure{margin:1.5em 0}figure img{max-width:100%;height:auto}
.chart{width:100%;min-height:300px;border:1px solid #ccc;background:#fff}
.note{color:#555}
{{if .Charts}}{{.Charts.UPlotCSS}}{{end}}
</style></head><body>
<h1>Experiment: {{.Name}}</h1>
{{if .Description}}<p>{{.Description}}</p>{{end}}
<p>{{.Intro}}</p>
<div class="scroll"><table><thead><tr>{{range .Header}}<th>{{.}}</th>{{end}}</tr></thead><tbody>
{{range .Rows}}<tr>{{range .}}<td{{if .Left}} class="l"{{end}}><span>{{.Main}}</span>{{if .Span}}<span class="span">{{.Span}}</span>{{end}}</td>{{end}}</tr>
{{end}}</tbody></table></div>
{{if .Errors}}<h2>Runs that failed</h2><ul>{{range .Errors}}<li>{{.}}</li>{{end}}</ul>{{end}}
{{if .Zero}}<p>{{.Zero}}</p>{{end}}
{{if .Plots}}<h2>Plots</h2>
{{if .Charts}}<p class="note">Interactive charts: hover for values (mean ± half-width of the 95% interval), drag to zoom (double-click resets), click a legend entry to hide or show its series.</p>{{end}}
{{range .Plots}}<figure>{{if $.Charts}}<div class="chart" id="{{.ID}}" role="img" aria-label="{{.Title}}"></div>
<noscript><img src="{{.Src}}" alt="{{.Title}}"></noscript>{{else}}<img src="{{.Src}}" alt="{{.Title}}">{{end}}</figure>
{{end}}{{end}}<p>Every run is in runs.csv; the statistics are in summary.json.</p>
` + render.ChartScriptsHTML + `</body></html>
`))
})

// sweepCell is one table cell of the HTML report: the mean and its ±,
// and the range across seeds on a line of its own.
type sweepCell struct {
	Main, Span string
	Left       bool
}

// sweepFigure is one plot of the HTML report: an interactive chart, with
// the SVG for readers without JavaScript.
type sweepFigure struct {
	ID, Title string
	Src       template.URL
}

func writeSweepHTML(b *bytes.Buffer, r *SweepResult, plots []sweepPlot, svgs [][]byte) error {
	e := r.Experiment
	data := struct {
		Name, Description, Intro, Zero string
		Header                         []string
		Rows                           [][]sweepCell
		Errors                         []string
		Plots                          []sweepFigure
		Charts                         *render.ChartAssets
	}{
		Name: e.Name, Description: e.Description,
		Intro: fmt.Sprintf("%d cells × %d seeds = %d runs. Each cell: mean ± half-width of the 95%% confidence interval of the mean (Student t), and below it [min – max] across seeds.",
			len(r.Cells), e.Seeds, len(r.Runs)),
		Header: r.tableHeader(), Errors: r.runErrors(5), Zero: r.zeroLine(),
	}
	formats := r.columnFormats()
	for i := range r.Cells {
		data.Rows = append(data.Rows, r.htmlRow(&r.Cells[i], formats))
	}
	charts := sweepCharts(r)
	for i, p := range plots {
		f := sweepFigure{ID: "chart-" + p.name, Title: p.title,
			Src: template.URL("data:image/svg+xml;base64," + base64.StdEncoding.EncodeToString(svgs[i]))} // our own gonum output
		data.Plots = append(data.Plots, f)
	}
	if len(charts) > 0 {
		assets, err := render.PageChartAssets(charts)
		if err != nil {
			return err
		}
		data.Charts = assets
	}
	return sweepHTML().Execute(b, data)
}

// htmlRow is tableRow with each statistic in its two parts.
func (r *SweepResult) htmlRow(c *CellResult, formats []func(float64) string) []sweepCell {
	var row []sweepCell
	for _, l := range c.Labels {
		row = append(row, sweepCell{Main: l, Left: true})
	}
	pass := fmt.Sprintf("%d/%d", c.Passed, r.Experiment.Seeds)
	if c.Failed > 0 {
		pass += fmt.Sprintf(" (%d failed)", c.Failed)
	}
	row = append(row, sweepCell{Main: pass})
	for i := range r.Experiment.Metrics {
		mean, span := statParts(formats[i], c.Stats[i])
		row = append(row, sweepCell{Main: mean, Span: span})
	}
	return row
}

func csvNumber(v float64) string {
	if math.IsNaN(v) {
		return ""
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

func writeRunsCSV(b *bytes.Buffer, r *SweepResult) error {
	w := csv.NewWriter(b)
	var h []string
	for _, a := range r.Experiment.Axes {
		h = append(h, a.Key)
	}
	h = append(h, "seed", "pass", "error")
	h = append(h, r.MetricNames...)
	if err := w.Write(h); err != nil {
		return err
	}
	for _, run := range r.Runs {
		row := append([]string{}, r.Cells[run.Cell].Labels...)
		first, _, _ := strings.Cut(run.Err, "\n")
		row = append(row, strconv.FormatUint(run.Seed, 10), strconv.FormatBool(run.Pass), first)
		for _, v := range run.Values {
			row = append(row, csvNumber(v))
		}
		if err := w.Write(row); err != nil {
			return err
		}
	}
	w.Flush()
	return w.Error()
}

// jsonStat is a Stat with null for what does not apply.
type jsonStat struct {
	N      int      `json:"n"`
	Mean   *float64 `json:"mean"`
	CILow  *float64 `json:"ci_low"`
	CIHigh *float64 `json:"ci_high"`
	Min    *float64 `json:"min"`
	Max    *float64 `json:"max"`
}

func nullable(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

func writeSweepJSON(b *bytes.Buffer, r *SweepResult) error {
	e := r.Experiment
	type jsonCell struct {
		Labels    []string            `json:"labels"`
		Drill     string              `json:"drill"`
		Overrides map[string]string   `json:"overrides"`
		Passed    int                 `json:"seeds_passed"`
		Failed    int                 `json:"runs_failed"`
		Stats     map[string]jsonStat `json:"stats"`
	}
	type jsonAxis struct {
		Key    string   `json:"key"`
		Labels []string `json:"labels"`
	}
	out := struct {
		Experiment  string     `json:"experiment"`
		Description string     `json:"description,omitempty"`
		Seeds       int        `json:"seeds"`
		Metrics     []string   `json:"metrics"`
		Axes        []jsonAxis `json:"axes"`
		Confidence  string     `json:"confidence"`
		Cells       []jsonCell `json:"cells"`
	}{Experiment: e.Name, Description: e.Description, Seeds: e.Seeds, Metrics: e.Metrics,
		Confidence: "95% interval of the mean across seeds, Student t with n-1 degrees of freedom"}
	for _, a := range e.Axes {
		ja := jsonAxis{Key: a.Key}
		for _, v := range a.Values {
			ja.Labels = append(ja.Labels, v.Label)
		}
		out.Axes = append(out.Axes, ja)
	}
	for _, c := range r.Cells {
		jc := jsonCell{Labels: c.Labels, Drill: filepath.ToSlash(c.Drill), Overrides: c.Overrides, Passed: c.Passed, Failed: c.Failed, Stats: map[string]jsonStat{}}
		for i, m := range e.Metrics {
			st := c.Stats[i]
			jc.Stats[m] = jsonStat{N: st.N, Mean: nullable(st.Mean), CILow: nullable(st.Mean - st.CIHalf), CIHigh: nullable(st.Mean + st.CIHalf), Min: nullable(st.Min), Max: nullable(st.Max)}
		}
		out.Cells = append(out.Cells, jc)
	}
	enc := json.NewEncoder(b)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// sweepPlot is one plot of a sweep.
type sweepPlot struct {
	name, title string
	draw        func(draw.Canvas) error
}

// sweepSeries is one line of a sweep plot (one bar of each group when the
// first axis is categories): the cells that share their values on the
// other axes, by their index on the first axis.
type sweepSeries struct {
	label string
	cells []int // index into Cells by first-axis value; -1 for none
}

// series groups the cells by their values on the other axes, up to
// maxPlotLines; the legend names the parameter ("policy.retry.jitter = full").
func (r *SweepResult) series() []sweepSeries {
	e := r.Experiment
	var out []sweepSeries
	byKey := map[string]int{}
	for i, c := range r.Cells {
		var parts []string
		for a, label := range c.Labels[1:] {
			if a+1 < len(e.Axes) {
				parts = append(parts, e.Axes[a+1].Key+" = "+label)
			}
		}
		k := strings.Join(parts, ", ")
		si, ok := byKey[k]
		if !ok {
			if len(out) == maxPlotLines {
				continue
			}
			cells := make([]int, len(e.Axes[0].Values))
			for j := range cells {
				cells[j] = -1
			}
			si = len(out)
			byKey[k] = si
			out = append(out, sweepSeries{label: k, cells: cells})
		}
		if v := c.Values[0]; v < len(out[si].cells) {
			out[si].cells[v] = i
		}
	}
	return out
}

// numericFirstAxis reports whether the first axis is numbers (drawn as
// lines along x) rather than categories (grouped bars).
func (r *SweepResult) numericFirstAxis() bool {
	first := r.Experiment.Axes[0]
	numeric := len(first.Values) > 1
	for _, v := range first.Values {
		numeric = numeric && v.Numeric
	}
	return numeric
}

// meanAt is series s's mean of metric mi and its ± at first-axis value j;
// NaN when the cell has no value.
func (r *SweepResult) meanAt(s sweepSeries, mi, j int) (mean, half float64) {
	ci := s.cells[j]
	if ci < 0 || r.Cells[ci].Stats[mi].N == 0 {
		return math.NaN(), math.NaN()
	}
	st := r.Cells[ci].Stats[mi]
	return st.Mean, st.CIHalf
}

// sweepCharts is one interactive chart per metric that is not always 0:
// lines through the swept values, or grouped bars for categories.
func sweepCharts(r *SweepResult) []render.PageChart {
	e := r.Experiment
	first := e.Axes[0]
	numeric := r.numericFirstAxis()
	series := r.series()
	var charts []render.PageChart
	for mi, m := range e.Metrics {
		if r.alwaysZero(mi) {
			continue
		}
		c := render.PageChart{ID: "chart-plot_" + fileSafe(m), Title: m + " by " + first.Key,
			XLabel: first.Key, YLabel: m + unitSuffix(m), Points: numeric}
		for _, v := range first.Values {
			if numeric {
				c.X = append(c.X, v.X)
			} else {
				c.XNames = append(c.XNames, v.Label)
			}
		}
		for _, s := range series {
			ps := render.PageSeries{Label: cmp.Or(s.label, m)}
			for j := range first.Values {
				mean, half := r.meanAt(s, mi, j)
				ps.Values, ps.Err = append(ps.Values, mean), append(ps.Err, half)
			}
			c.Series = append(c.Series, ps)
		}
		charts = append(charts, c)
	}
	return charts
}

// sweepPlots makes one plot per metric that is not always 0: the first
// axis along x, one line per combination of the other axes (grouped bars
// when the first axis is categories), error bars from the interval.
func sweepPlots(r *SweepResult) ([]sweepPlot, error) {
	e := r.Experiment
	first := e.Axes[0]
	numeric := r.numericFirstAxis()
	series := r.series()
	var out []sweepPlot
	for mi, m := range e.Metrics {
		if r.alwaysZero(mi) {
			continue
		}
		p := plot.New()
		render.UseSansFont(p)
		p.Title.Text = m + " by " + first.Key
		p.X.Label.Text = first.Key
		p.Y.Label.Text = m + unitSuffix(m)
		p.Y.Tick.Marker = readableTicks{}
		p.Add(plotter.NewGrid())
		var err error
		if numeric {
			err = r.drawSweepLines(p, series, mi)
		} else {
			err = r.drawSweepBars(p, series, mi)
		}
		if err != nil {
			return nil, err
		}
		r.markNoValue(p, mi, numeric)
		// Lines in these sweeps mostly rise to the right: the top-left corner
		// is the emptiest.
		p.Legend.Top, p.Legend.Left = true, true
		out = append(out, sweepPlot{name: "plot_" + fileSafe(m), title: p.Title.Text, draw: func(c draw.Canvas) error { p.Draw(c); return nil }})
	}
	return out, nil
}

// drawSweepLines draws one line per series through the swept values, with
// ticks at those values as the experiment wrote them.
func (r *SweepResult) drawSweepLines(p *plot.Plot, series []sweepSeries, mi int) error {
	first := r.Experiment.Axes[0]
	var ticks plot.ConstantTicks
	for _, v := range first.Values {
		ticks = append(ticks, plot.Tick{Value: v.X, Label: v.Label})
	}
	p.X.Tick.Marker = ticks
	for li, s := range series {
		var pts plotter.XYs
		var errs plotter.YErrors
		for j, v := range first.Values {
			mean, half := r.meanAt(s, mi, j)
			if math.IsNaN(mean) {
				continue
			}
			pts = append(pts, plotter.XY{X: v.X, Y: mean})
			errs = append(errs, struct{ Low, High float64 }{half, half})
		}
		if len(pts) == 0 {
			continue
		}
		col := palette[li%len(palette)]
		l, sc, err := plotter.NewLinePoints(pts)
		if err != nil {
			return err
		}
		l.Color, sc.Color = col, col
		l.Width = vg.Points(1.5)
		eb := &plotter.YErrorBars{XYs: pts, YErrors: errs, LineStyle: draw.LineStyle{Color: col, Width: vg.Points(1)}, CapWidth: vg.Points(6)}
		p.Add(l, sc, eb)
		if s.label != "" {
			p.Legend.Add(s.label, l, sc)
		}
	}
	// A margin either side, so that the outer ticks' labels and error bars
	// show whole.
	lo, hi := first.Values[0].X, first.Values[0].X
	for _, v := range first.Values {
		lo, hi = math.Min(lo, v.X), math.Max(hi, v.X)
	}
	pad := (hi - lo) / 20
	if pad == 0 {
		pad = math.Max(math.Abs(lo)/20, 1)
	}
	p.X.Min, p.X.Max = math.Min(p.X.Min, lo-pad), math.Max(p.X.Max, hi+pad)
	return nil
}

// drawSweepBars draws the categories of the first axis as groups of bars,
// one bar per series, with the interval as error bars: categories have no
// order to join with lines.
func (r *SweepResult) drawSweepBars(p *plot.Plot, series []sweepSeries, mi int) error {
	first := r.Experiment.Axes[0]
	var names []string
	for _, v := range first.Values {
		names = append(names, v.Label)
	}
	p.NominalX(names...)
	groupWidth := vg.Points(float64(plotWidth.Points()) * 0.6 / float64(max(1, len(names))))
	barWidth := groupWidth / vg.Length(max(1, len(series)))
	for k, s := range series {
		values := make(plotter.Values, len(first.Values))
		var pts plotter.XYs
		var errs plotter.YErrors
		for j := range first.Values {
			mean, half := r.meanAt(s, mi, j)
			if math.IsNaN(mean) {
				continue // no bar; the no-value mark says why
			}
			values[j] = mean
			pts = append(pts, plotter.XY{X: float64(j), Y: mean})
			errs = append(errs, struct{ Low, High float64 }{half, half})
		}
		bars, err := plotter.NewBarChart(values, barWidth)
		if err != nil {
			return err
		}
		col := palette[k%len(palette)]
		bars.Color, bars.LineStyle.Width = col, 0
		bars.Offset = -groupWidth/2 + barWidth*vg.Length(k) + barWidth/2
		p.Add(bars)
		if len(pts) > 0 {
			eb := &plotter.YErrorBars{XYs: pts, YErrors: errs, LineStyle: draw.LineStyle{Color: color.Black, Width: vg.Points(1)}, CapWidth: barWidth / 3}
			p.Add(&offsetErrorBars{YErrorBars: eb, dx: bars.Offset})
		}
		if s.label != "" {
			p.Legend.Add(s.label, bars)
		}
	}
	return nil
}

// offsetErrorBars draws error bars shifted by dx along x, so that each
// sits on its bar within the group.
type offsetErrorBars struct {
	*plotter.YErrorBars
	dx vg.Length
}

// Plot implements plot.Plotter.
func (o *offsetErrorBars) Plot(c draw.Canvas, p *plot.Plot) {
	c.Push()
	defer c.Pop()
	c.Translate(vg.Point{X: o.dx})
	o.YErrorBars.Plot(c, p)
}

// markNoValue marks the cells where some seeds have no value of metric mi
// (an outage that never drained): marked, not silently dropped.
func (r *SweepResult) markNoValue(p *plot.Plot, mi int, numeric bool) {
	e := r.Experiment
	marks := &naMarks{}
	for _, c := range r.Cells {
		st := c.Stats[mi]
		if st.N >= e.Seeds && !math.IsNaN(st.Mean) {
			continue
		}
		x := float64(c.Values[0])
		if numeric {
			x = e.Axes[0].Values[c.Values[0]].X
		}
		marks.xs = append(marks.xs, x)
	}
	if len(marks.xs) == 0 {
		return
	}
	p.Add(marks)
	what := "no value on some seeds"
	if e.Metrics[mi] == "drain_time" {
		what = "not drained on some seeds"
	}
	p.Legend.Add(what, marks)
}

// naMarks marks, along the top edge of a plot, the x values of cells that
// have no value on some seeds. It has no data range, so it never stretches
// the axes.
type naMarks struct{ xs []float64 }

var naMarkStyle = draw.GlyphStyle{Color: color.NRGBA{R: 0xCC, A: 0xFF}, Radius: vg.Points(4), Shape: draw.CrossGlyph{}}

// Plot implements plot.Plotter.
func (m *naMarks) Plot(c draw.Canvas, p *plot.Plot) {
	trX, _ := p.Transforms(&c)
	for _, x := range m.xs {
		px := trX(x)
		if px >= c.Min.X && px <= c.Max.X {
			c.DrawGlyph(naMarkStyle, vg.Point{X: px, Y: c.Max.Y - naMarkStyle.Radius - vg.Points(2)})
		}
	}
}

// Thumbnail implements plot.Thumbnailer for the legend.
func (m *naMarks) Thumbnail(c *draw.Canvas) { c.DrawGlyph(naMarkStyle, c.Center()) }

func unitSuffix(metric string) string {
	switch metricKind(metric) {
	case reports.Duration:
		return " (s)"
	case reports.Fraction:
		return " (fraction)"
	}
	return ""
}

func fileSafe(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, s)
}

// renderPlot draws into an in-memory PNG or SVG. gonum panics on some
// degenerate input; that becomes an error.
func renderPlot(drawFn func(draw.Canvas) error, format string) ([]byte, error) {
	return renderPlotSize(drawFn, format, plotWidth, plotHeight)
}

func renderPlotSize(drawFn func(draw.Canvas) error, format string, width, height vg.Length) ([]byte, error) {
	return render.RenderCanvas(drawFn, format, width, height)
}
