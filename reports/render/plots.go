package render

import (
	"bytes"
	"errors"
	"fmt"
	"image/color"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"github.com/stormdrill/stormdrill/reports"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Plot size and PNG resolution: 8in × 4in at 100 dpi is an 800 × 400 image,
// legible in a pull request and a few tens of kilobytes.
const (
	plotWidth  = 8 * vg.Inch
	plotHeight = 4 * vg.Inch
	plotPNGDPI = 100
)

// Colours (Okabe–Ito, distinguishable with the common colour-vision
// deficiencies), used in this order for series without a fixed colour.
var plotPalette = []color.NRGBA{
	{R: 0x00, G: 0x72, B: 0xB2, A: 0xFF}, // blue
	{R: 0xE6, G: 0x9F, B: 0x00, A: 0xFF}, // orange
	{R: 0x00, G: 0x9E, B: 0x73, A: 0xFF}, // bluish green
	{R: 0xD5, G: 0x5E, B: 0x00, A: 0xFF}, // vermillion
	{R: 0xCC, G: 0x79, B: 0xA7, A: 0xFF}, // reddish purple
	{R: 0x56, G: 0xB4, B: 0xE9, A: 0xFF}, // sky blue
	{R: 0xF0, G: 0xE4, B: 0x42, A: 0xFF}, // yellow
	{R: 0x00, G: 0x00, B: 0x00, A: 0xFF}, // black
}

var (
	outageColor       = color.NRGBA{R: 0x80, G: 0x80, B: 0x80, A: 0x40} // translucent grey
	manualOutageColor = color.NRGBA{R: 0xD5, G: 0x5E, B: 0x00, A: 0x30} // translucent vermillion
	replayColor       = color.NRGBA{R: 0x00, G: 0x72, B: 0xB2, A: 0x28} // translucent blue
	sloColor          = color.NRGBA{R: 0xC0, G: 0x00, B: 0x00, A: 0xFF}
)

func paletteColor(i int) color.Color { return plotPalette[i%len(plotPalette)] }

// withAlpha is c with its opacity replaced by a (0–255).
func withAlpha(c color.NRGBA, a uint8) color.NRGBA {
	c.A = a
	return c
}

// WritePlots writes the run's plots into dir, each as NAME.png and NAME.svg
// (NAME one of attempts, amplification, pending, oldest_age,
// healthy_latency, ordinals, dead_letters, breaker, in that order), and
// returns one PlotRef per plot written, in that order. A plot the run has no
// data for is left out; attempts and pending are always written. Series are
// downsampled to at most MaxPlotPoints points each, keeping their peaks.
// The same run gives byte-identical files.
func WritePlots(dir string, run *reports.Run) ([]PlotRef, error) {
	files, err := writePlotFiles(dir, run)
	if err != nil {
		return nil, err
	}
	refs := make([]PlotRef, len(files))
	for i, f := range files {
		refs[i] = PlotRef{Title: f.title, PNG: f.png, SVG: f.svg}
	}
	return refs, nil
}

// namedPlot is one finished plot and the base name of its files.
type namedPlot struct {
	name  string // file base name without extension
	title string
	plot  *plot.Plot
}

// plotFile is one plot written to disk: its title and the base names of its
// PNG and SVG files.
type plotFile struct {
	title, png, svg string
}

// writePlotFiles builds every plot the run has data for and writes each as
// PNG and SVG into dir, in a fixed order.
func writePlotFiles(dir string, run *reports.Run) ([]plotFile, error) {
	plots, err := buildPlots(run)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("plots: %w", err)
	}
	// Each plot is drawn on a core of its own, at most GOMAXPROCS at a
	// time: drawing is most of the time a run spends writing its reports.
	// A plot's two formats are drawn one after the other (drawing changes
	// the plot while it runs); the files are written in order afterwards.
	type rendered struct {
		data [2][]byte // png, svg
		err  error
	}
	out := make([]rendered, len(plots))
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for i := range plots {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			for k, format := range [2]string{"png", "svg"} {
				data, err := renderPlot(plots[i].plot, format)
				if err != nil {
					out[i].err = fmt.Errorf("plots: %s.%s: %w", plots[i].name, format, err)
					return
				}
				out[i].data[k] = data
			}
		}()
	}
	wg.Wait()
	files := make([]plotFile, 0, len(plots))
	for i, np := range plots {
		if out[i].err != nil {
			return nil, out[i].err
		}
		f := plotFile{title: np.title, png: np.name + ".png", svg: np.name + ".svg"}
		for k, file := range [2]string{f.png, f.svg} {
			if err := os.WriteFile(filepath.Join(dir, file), out[i].data[k], 0o644); err != nil {
				return nil, fmt.Errorf("plots: %w", err)
			}
		}
		files = append(files, f)
	}
	return files, nil
}

// buildPlots makes the plots in their report order, leaving out those the
// run has no data for (attempts and pending are always drawn).
func buildPlots(run *reports.Run) ([]namedPlot, error) {
	if run == nil {
		return nil, errors.New("plots: no run")
	}
	in := plotInput{summary: run.Summary, ts: run.Timeseries, run: run}
	if in.summary == nil {
		in.summary = &reports.Summary{}
	}
	if in.ts == nil {
		in.ts = &reports.Timeseries{}
	}
	span := in.summary.DrillTimeS
	if n := len(in.ts.Samples); n > 0 {
		span = math.Max(span, in.ts.Samples[n-1].T)
	}
	in.time = chooseTimeAxis(span)
	in.series = timeseriesColumns(in.ts)

	builders := []struct {
		name, title string
		build       func(plotInput, string) (*plot.Plot, error)
	}{
		{"attempts", "Attempts per second", attemptsPlot},
		{"faulty_attempts", "Attempts per second to the faulty partners", faultyAttemptsPlot},
		{"amplification", "Retry amplification", amplificationPlot},
		{"pending", "Pending deliveries", pendingPlot},
		{"oldest_age", "Oldest message age", oldestAgePlot},
		{"healthy_latency", "Healthy-subscriber latency", healthyLatencyPlot},
		{"healthy_percentiles", "Healthy-subscriber latency per interval", healthyPercentilesPlot},
		{"ordinals", "Attempts by ordinal", ordinalsPlot},
		{"dead_letters", "Dead letters by reason", deadLettersPlot},
		{"breaker", "Circuit breaker state", breakerPlot},
	}
	var plots []namedPlot
	for _, b := range builders {
		p, err := b.build(in, b.title)
		if err != nil {
			return nil, fmt.Errorf("plots: %s: %w", b.name, err)
		}
		if p == nil {
			continue // no data for it
		}
		plots = append(plots, namedPlot{name: b.name, title: p.Title.Text, plot: p})
	}
	return plots, nil
}

// plotInput is what every plot builder reads.
type plotInput struct {
	run     *reports.Run
	summary *reports.Summary
	ts      *reports.Timeseries
	series  []seriesColumn // ts as the report's columns
	time    timeAxis
}

// renderPlot draws p into an in-memory PNG or SVG document, legend on the
// right.
func renderPlot(p *plot.Plot, format string) ([]byte, error) {
	return RenderCanvas(func(c draw.Canvas) error {
		drawWithLegendRight(p, c)
		return nil
	}, format, plotWidth, plotHeight)
}

// RenderCanvas runs drawFn on an in-memory PNG (white background, 100 dpi)
// or SVG canvas of the given size and returns the document; every plot of
// the project is written through it. gonum panics on some degenerate input
// (a log axis reaching 0); that becomes an error here rather than a crashed
// run.
func RenderCanvas(drawFn func(draw.Canvas) error, format string, width, height vg.Length) (data []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("drawing %s: %v", format, r)
		}
	}()
	var c vg.CanvasWriterTo
	switch format {
	case "png":
		img := vgimg.NewWith(
			vgimg.UseWH(width, height),
			vgimg.UseDPI(plotPNGDPI),
			vgimg.UseBackgroundColor(color.White),
		)
		if err := drawFn(draw.New(img)); err != nil {
			return nil, err
		}
		// Fastest deflate: a plot is mostly flat colour, which every
		// level compresses alike, and encoding at the default level was
		// half the time of writing a run's reports.
		var buf bytes.Buffer
		enc := png.Encoder{CompressionLevel: png.BestSpeed}
		if err := enc.Encode(&buf, img.Image()); err != nil {
			return nil, err
		}
		return buf.Bytes(), nil
	case "svg":
		// Fonts are not embedded: that would add hundreds of kilobytes to
		// every file and to the HTML report that inlines them.
		c = vgsvg.New(width, height)
	default:
		return nil, fmt.Errorf("unknown plot format %q", format)
	}
	if err := drawFn(draw.New(c)); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return nil, err
	}
	if format == "svg" {
		// The SVG names the font without a fallback; a viewer without
		// Liberation Sans would pick its default, often a serif. Arial
		// has the same metrics, so the measured layout still fits.
		return bytes.ReplaceAll(buf.Bytes(), []byte("font-family:"+svgFontName+";"), []byte("font-family:"+svgFontFallbacks+";")), nil
	}
	return buf.Bytes(), nil
}

// svgFontName is how vgsvg names the plots' font; svgFontFallbacks is the
// CSS font list written instead.
const (
	svgFontName      = plotTypeface + " " + plotFontVariant
	svgFontFallbacks = "'" + svgFontName + "',Arimo,Arial,Helvetica,sans-serif"
)

// legendGap separates the data area from a legend drawn to its right.
const legendGap = 8 * vg.Millimeter / 2

// drawWithLegendRight draws p with its legend in a column to the right of
// the axes instead of inside them, where it would hide data. p is left as
// it was.
func drawWithLegendRight(p *plot.Plot, c draw.Canvas) {
	legend := p.Legend
	p.Legend = plot.NewLegend() // no entries: Draw draws no legend
	defer func() { p.Legend = legend }()

	r := legend.Rectangle(c)
	width := r.Max.X - r.Min.X
	if width <= 0 {
		p.Draw(c)
		return
	}
	p.Draw(draw.Crop(c, 0, -(width + 2*legendGap), 0, 0))

	// Top-aligned with the data area, which starts below the title.
	var titleHeight vg.Length
	if p.Title.Text != "" {
		titleHeight = p.Title.TextStyle.Rectangle(p.Title.Text).Size().Y + p.Title.Padding
	}
	legend.Top, legend.Left = true, true
	legend.Draw(draw.Crop(c, c.Max.X-c.Min.X-width-legendGap, 0, 0, -titleHeight))
}

// newPlot is a plot with a title, axis labels (units included by the
// caller) and a light grid; its legend goes to the right of the axes.
func newPlot(title, xLabel, yLabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = xLabel
	p.Y.Label.Text = yLabel
	p.Legend.Padding = vg.Points(2)
	UseSansFont(p)
	p.X.Tick.Marker = niceTicks{}
	p.Y.Tick.Marker = niceTicks{}
	p.Add(plotter.NewGrid())
	return p
}

// UseSansFont sets every text of p (title, legend, axis labels, ticks) in
// the plots' sans-serif font, like the HTML reports around them: gonum's
// default is a serif. gonum registers the Liberation collection, Sans
// variant included, by default.
func UseSansFont(p *plot.Plot) {
	for _, f := range []*font.Font{
		&p.Title.TextStyle.Font, &p.Legend.TextStyle.Font,
		&p.X.Label.TextStyle.Font, &p.Y.Label.TextStyle.Font,
		&p.X.Tick.Label.Font, &p.Y.Tick.Label.Font,
	} {
		f.Typeface, f.Variant = plotTypeface, plotFontVariant
	}
}

// The plots' font: Liberation Sans, which gonum embeds.
const (
	plotTypeface    = "Liberation"
	plotFontVariant = "Sans"
)

// niceTicks labels a linear axis at 1, 2 or 5 × a power of ten, about five
// labels in all, written without needless decimals and with thousands
// separators ("1,500", "0.25"), and puts four unlabelled ticks between.
type niceTicks struct{}

// niceTickCount is about how many labelled ticks an axis gets.
const niceTickCount = 5

// Ticks implements plot.Ticker.
func (niceTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(hi > lo) || math.IsInf(lo, 0) || math.IsInf(hi, 0) {
		return nil
	}
	raw := (hi - lo) / niceTickCount
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	// The 1, 2, 5 or 10 × mag nearest to raw on a log scale.
	step := mag
	for _, m := range []float64{2, 5, 10} {
		if math.Abs(math.Log(m*mag/raw)) < math.Abs(math.Log(step/raw)) {
			step = m * mag
		}
	}
	decimals := max(0, -int(math.Floor(math.Log10(step)+1e-9)))
	minor := step / 5
	var ticks []plot.Tick
	for k := math.Ceil(lo / minor); k*minor <= hi*(1+1e-12)+1e-12 && len(ticks) < 200; k++ {
		v := k * minor
		t := plot.Tick{Value: v}
		if r := math.Round(v / step); math.Abs(v/step-r) < 1e-6 {
			t.Value = r * step
			t.Label = tickLabel(t.Value, decimals)
		}
		ticks = append(ticks, t)
	}
	return ticks
}

// tickLabel writes v with the given decimals and thousands separators.
func tickLabel(v float64, decimals int) string {
	if decimals == 0 && math.Abs(v) < 1e15 {
		return reports.GroupDigits(int64(math.Round(v)))
	}
	return strconv.FormatFloat(v, 'f', decimals, 64)
}

// newTimePlot is a plot whose x axis is drill time in in.time's unit, with
// the scripted outage windows shaded behind the data, manual outages shaded
// in another colour and dispatcher restarts marked.
func newTimePlot(in plotInput, title, yLabel string) *plot.Plot {
	p := newPlot(title, in.time.label, yLabel)
	var scripted, manual []reports.Outage
	for _, o := range in.summary.Outages {
		if o.Manual {
			manual = append(manual, o)
		} else {
			scripted = append(scripted, o)
		}
	}
	addOutageShading(p, scripted, in.time.divS)
	if s := newOutageShading(manual, in.time.divS); s != nil {
		s.color = manualOutageColor
		p.Add(s)
		p.Legend.Add("manual outage", s)
	}
	if ws := replayWindows(in.summary); len(ws) > 0 {
		s := &outageShading{color: replayColor}
		for _, w := range ws {
			s.windows = append(s.windows, [2]float64{w[0] / in.time.divS, w[1] / in.time.divS})
		}
		p.Add(s)
		p.Legend.Add("DLQ replay", s)
	}
	if len(in.summary.Restarts) > 0 {
		var first *restartMarks
		for _, r := range in.summary.Restarts {
			m := &restartMarks{x: plotFinite(r.AtS) / in.time.divS}
			p.Add(m)
			if first == nil {
				first = m
			}
		}
		p.Legend.Add("dispatcher restart", first)
	}
	return p
}

// restartMarks is a vertical dashed line at a dispatcher restart. Like the
// outage shading it has no data range: it never stretches the axes.
type restartMarks struct{ x float64 }

var restartStyle = draw.LineStyle{
	Color: color.NRGBA{R: 0x7B, G: 0x32, B: 0x94, A: 0xFF}, Width: vg.Points(1.5),
	Dashes: []vg.Length{vg.Points(4), vg.Points(3)},
}

// Plot implements plot.Plotter.
func (m *restartMarks) Plot(c draw.Canvas, p *plot.Plot) {
	trX, _ := p.Transforms(&c)
	x := trX(m.x)
	if x < c.Min.X || x > c.Max.X {
		return
	}
	c.StrokeLine2(restartStyle, x, c.Min.Y, x, c.Max.Y)
}

// Thumbnail implements plot.Thumbnailer for the legend.
func (m *restartMarks) Thumbnail(c *draw.Canvas) {
	x := (c.Min.X + c.Max.X) / 2
	c.StrokeLine2(restartStyle, x, c.Min.Y, x, c.Max.Y)
}

// finishTimeAxes starts both axes at 0 (times, rates, depths and ages are
// never negative) and lets the time axis reach the end of the drill.
func finishTimeAxes(p *plot.Plot, in plotInput) {
	p.X.Min = math.Min(p.X.Min, 0)
	if end := plotFinite(in.summary.DrillTimeS) / in.time.divS; end > p.X.Max {
		p.X.Max = end
	}
	p.Y.Min = math.Min(p.Y.Min, 0)
	// No data (or one flat point): a unit range rather than gonum's ±1
	// around 0, which would show negative time and rates.
	if !(p.X.Max > p.X.Min) {
		p.X.Max = p.X.Min + 1
	}
	if !(p.Y.Max > p.Y.Min) {
		p.Y.Max = p.Y.Min + 1
	}
	// Headroom, so a peak or the SLO line does not run along the frame.
	p.Y.Max += (p.Y.Max - p.Y.Min) / 20
}

// outageShading is a plotter that shades time windows (x units) over the
// whole height of the plot. It has no data range, so it neither stretches
// nor shrinks the axes: windows outside the data are clipped.
type outageShading struct {
	windows [][2]float64
	color   color.Color
}

// addOutageShading shades the scripted outage windows (seconds) on a plot
// whose x axis is time in units of xDivS seconds, and adds one legend entry
// when there is any.
func addOutageShading(p *plot.Plot, outages []reports.Outage, xDivS float64) {
	if s := newOutageShading(outages, xDivS); s != nil {
		p.Add(s)
		p.Legend.Add("scripted outage", s)
	}
}

// newOutageShading is the shading for the non-empty outage windows, in
// units of xDivS seconds, or nil when there is none.
func newOutageShading(outages []reports.Outage, xDivS float64) *outageShading {
	s := &outageShading{color: outageColor}
	for _, o := range outages {
		start, end := plotFinite(o.StartS), plotFinite(o.EndS)
		if end <= start {
			continue
		}
		s.windows = append(s.windows, [2]float64{start / xDivS, end / xDivS})
	}
	if len(s.windows) == 0 {
		return nil
	}
	return s
}

// Plot implements plot.Plotter.
func (s *outageShading) Plot(c draw.Canvas, p *plot.Plot) {
	trX, _ := p.Transforms(&c)
	for _, w := range s.windows {
		x0 := max(trX(w[0]), c.Min.X)
		x1 := min(trX(w[1]), c.Max.X)
		if x1 <= x0 {
			continue
		}
		c.FillPolygon(s.color, []vg.Point{
			{X: x0, Y: c.Min.Y}, {X: x0, Y: c.Max.Y},
			{X: x1, Y: c.Max.Y}, {X: x1, Y: c.Min.Y},
		})
	}
}

// Thumbnail implements plot.Thumbnailer for the legend.
func (s *outageShading) Thumbnail(c *draw.Canvas) {
	c.FillPolygon(s.color, []vg.Point{
		{X: c.Min.X, Y: c.Min.Y}, {X: c.Min.X, Y: c.Max.Y},
		{X: c.Max.X, Y: c.Max.Y}, {X: c.Max.X, Y: c.Min.Y},
	})
}

// refLine is a reference line across the whole plot: horizontal at y =
// value, or vertical at x = value. Its data range covers the value on its
// own axis only, so the line is always in view.
type refLine struct {
	vertical bool
	value    float64
	style    draw.LineStyle
}

func newSLOLine(vertical bool, value float64) *refLine {
	return &refLine{vertical: vertical, value: value, style: draw.LineStyle{
		Color: sloColor, Width: vg.Points(1.5), Dashes: []vg.Length{vg.Points(6), vg.Points(3)},
	}}
}

// Plot implements plot.Plotter.
func (l *refLine) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	if l.vertical {
		x := trX(l.value)
		c.StrokeLines(l.style, c.ClipLinesX([]vg.Point{{X: x, Y: c.Min.Y}, {X: x, Y: c.Max.Y}})...)
		return
	}
	y := trY(l.value)
	c.StrokeLines(l.style, c.ClipLinesY([]vg.Point{{X: c.Min.X, Y: y}, {X: c.Max.X, Y: y}})...)
}

// DataRange implements plot.DataRanger.
func (l *refLine) DataRange() (xmin, xmax, ymin, ymax float64) {
	inf := math.Inf(1)
	if l.vertical {
		return l.value, l.value, inf, -inf
	}
	return inf, -inf, l.value, l.value
}

// Thumbnail implements plot.Thumbnailer for the legend.
func (l *refLine) Thumbnail(c *draw.Canvas) {
	y := c.Center().Y
	c.StrokeLine2(l.style, c.Min.X, y, c.Max.X, y)
}

// addLine adds a line in the given colour and a legend entry for it.
func addLine(p *plot.Plot, label string, xys plotter.XYs, col color.Color) (*plotter.Line, error) {
	l, err := plotter.NewLine(xys)
	if err != nil {
		return nil, err
	}
	l.LineStyle.Color = col
	l.LineStyle.Width = vg.Points(1.25)
	p.Add(l)
	p.Legend.Add(label, l)
	return l, nil
}

// addBand adds a filled polygon between bottom and top (same x values) and
// a legend entry for it.
func addBand(p *plot.Plot, label string, bottom, top plotter.XYs, fill color.Color) error {
	if len(top) == 0 {
		return nil
	}
	poly, err := plotter.NewPolygon(bandPolygon(bottom, top))
	if err != nil {
		return err
	}
	poly.Color = fill
	poly.LineStyle.Width = 0
	p.Add(poly)
	p.Legend.Add(label, poly)
	return nil
}

func attemptsPlot(in plotInput, title string) (*plot.Plot, error) {
	p := newTimePlot(in, title, "attempts/s")
	first, top, successes := attemptsSeries(in.ts.Samples, in.time.divS, MaxPlotPoints)
	if len(first) > 0 {
		if err := addBand(p, "first attempts", zeroLike(first), first, withAlpha(plotPalette[0], 0xC0)); err != nil {
			return nil, err
		}
		if err := addBand(p, "retries (stacked)", first, top, withAlpha(plotPalette[1], 0xC0)); err != nil {
			return nil, err
		}
		if _, err := addLine(p, "successes", successes, plotPalette[2]); err != nil {
			return nil, err
		}
	}
	finishTimeAxes(p, in)
	return p, nil
}

// faultyAttemptsPlot draws each faulty cohort's first attempts and retries
// per second on a panel of their own: beside the healthy cohorts' hundreds
// per second, a faulty partner's retries would lie flat on the axis. Nil
// when no faulty cohort has its columns.
func faultyAttemptsPlot(in plotInput, title string) (*plot.Plot, error) {
	labels, colors, dashed, cols := faultyAttemptColumns(in.summary, in.series)
	if !anyNonZeroCols(cols) {
		return nil, nil
	}
	p := newTimePlot(in, title, "attempts/s")
	series := columnSeries(in.ts.Samples, in.time.divS, MaxPlotPoints, cols)
	for k, xys := range series {
		l, err := addLine(p, labels[k], xys, colors[k])
		if err != nil {
			return nil, err
		}
		if dashed[k] {
			l.LineStyle.Dashes = []vg.Length{vg.Points(4), vg.Points(2)}
		}
	}
	finishTimeAxes(p, in)
	return p, nil
}

func amplificationPlot(in plotInput, title string) (*plot.Plot, error) {
	labels, colors, cols := cohortColumns(in.summary, in.series, cohortAmplificationColumn)
	if len(cols) > 0 {
		// Faulty against healthy: the pipeline figure is dominated by the
		// healthy cohorts and hides the outage.
		labels = append(labels, "pipeline, per interval")
		colors = append(colors, color.Gray{Y: 0x80})
		pipe := make([]float64, len(in.ts.Samples))
		for i := range in.ts.Samples {
			pipe[i] = in.ts.Samples[i].Amplification
		}
		cols = append(cols, pipe)
		if !anyNonZeroCols(finiteCols(cols)) {
			return nil, nil
		}
		series := columnSeriesGaps(in.ts.Samples, in.time.divS, MaxPlotPoints, cols)
		p := newTimePlot(in, title+" by cohort", "amplification (attempts ÷ first attempts)")
		for i, xys := range series {
			if len(xys) == 0 {
				continue // a cohort that never made a first attempt
			}
			l, err := addLine(p, labels[i], xys, colors[i])
			if err != nil {
				return nil, err
			}
			if i < len(series)-1 && strings.HasSuffix(labels[i], "(faulty)") {
				l.LineStyle.Width = vg.Points(2)
			}
		}
		finishTimeAxes(p, in)
		return p, nil
	}
	s := sampleSeries(in.ts.Samples, in.time.divS, MaxPlotPoints,
		func(s *reports.Sample) float64 { return s.Amplification },
		func(s *reports.Sample) float64 { return s.RunningAmplification },
	)
	if !anyNonZero(s...) {
		return nil, nil
	}
	p := newTimePlot(in, title, "amplification (attempts ÷ first attempts)")
	if _, err := addLine(p, "per interval", s[0], withAlpha(plotPalette[1], 0xB0)); err != nil {
		return nil, err
	}
	running, err := addLine(p, "running overall", s[1], plotPalette[0])
	if err != nil {
		return nil, err
	}
	running.LineStyle.Width = vg.Points(2)
	finishTimeAxes(p, in)
	return p, nil
}

func pendingPlot(in plotInput, title string) (*plot.Plot, error) {
	p := newTimePlot(in, title, "deliveries")
	if len(in.ts.Samples) > 0 {
		s := sampleSeries(in.ts.Samples, in.time.divS, MaxPlotPoints,
			func(s *reports.Sample) float64 { return s.Ready },
			func(s *reports.Sample) float64 { return s.Delayed },
			func(s *reports.Sample) float64 { return s.InFlight },
		)
		for i, label := range []string{"ready", "delayed", "in flight"} {
			if _, err := addLine(p, label, s[i], paletteColor(i)); err != nil {
				return nil, err
			}
		}
	}
	finishTimeAxes(p, in)
	return p, nil
}

func oldestAgePlot(in plotInput, title string) (*plot.Plot, error) {
	if len(in.ts.Samples) == 0 {
		return nil, nil
	}
	labels, colors, cols := cohortColumns(in.summary, in.series, cohortOldestAgeColumn)
	if len(cols) > 0 {
		title += " by cohort"
	} else {
		labels = []string{"oldest ready", "oldest delayed"}
		colors = []color.Color{plotPalette[0], plotPalette[1]}
		ready := make([]float64, len(in.ts.Samples))
		delayed := make([]float64, len(in.ts.Samples))
		for i := range in.ts.Samples {
			ready[i] = in.ts.Samples[i].OldestReadyAgeS
			delayed[i] = in.ts.Samples[i].OldestDelayedAgeS
		}
		cols = [][]float64{ready, delayed}
	}
	dataMax := 0.0
	for _, c := range cols {
		for _, v := range c {
			dataMax = math.Max(dataMax, plotFinite(v))
		}
	}
	maxAge := dataMax
	if slo := plotFinite(in.summary.SLOS); slo <= sloReach*dataMax {
		maxAge = math.Max(maxAge, slo)
	}
	unit := chooseDurationAxis(maxAge)
	scaled := make([][]float64, len(cols))
	for k, c := range cols {
		scaled[k] = make([]float64, len(c))
		for i, v := range c {
			scaled[k][i] = plotFinite(v) / unit.divS
		}
	}
	series := columnSeries(in.ts.Samples, in.time.divS, MaxPlotPoints, scaled)
	p := newTimePlot(in, title, "age ("+unit.unit+")")
	for i, xys := range series {
		if _, err := addLine(p, labels[i], xys, colors[i]); err != nil {
			return nil, err
		}
	}
	addSLO(p, false, plotFinite(in.summary.SLOS), dataMax, unit.divS)
	finishTimeAxes(p, in)
	return p, nil
}

func ordinalsPlot(in plotInput, title string) (*plot.Plot, error) {
	labels, heights := ordinalBars(in.summary.Attempts.ByOrdinal)
	if len(heights) == 0 {
		return nil, nil
	}
	// Counts span decades (a million first attempts, a handful of 5th
	// ones): a log axis shows every bar, and each bar carries its count.
	p := newPlot(title, "attempt ordinal (1 = first attempt)", "attempts (log scale)")
	width := min(vg.Points(30), max(vg.Points(3), plotWidth*0.6/vg.Length(len(heights))))
	bars := newCountBars(heights, width, plotPalette[0], p.Y.Tick.Label)
	p.Add(bars)
	p.Legend.Add("attempts", bars)
	p.NominalX(labels...)
	// Half a slot either side, so the outer bars and their labels show whole.
	p.X.Min, p.X.Max = -0.5, float64(len(heights))-0.5
	_, _, lo, hi := bars.DataRange()
	if !(lo > 0) {
		lo, hi = 1, 10 // every bar is 0: an empty decade
	}
	// Half a decade under the smallest bar, so a bar of exactly a power of
	// ten still shows; a decade of room above the tallest for its label.
	p.Y.Min = math.Pow(10, math.Floor(math.Log10(lo))) / 2
	p.Y.Max = math.Pow(10, math.Ceil(math.Log10(hi*3)))
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = countDecadeTicks{}
	return p, nil
}

// countBars is a bar chart for a log-scaled y axis: each bar rises from the
// bottom of the plot (a log axis has no 0), and carries its count above it.
// Bars of height 0 are not drawn.
type countBars struct {
	heights []float64
	width   vg.Length
	color   color.Color
	label   text.Style
}

func newCountBars(heights []float64, width vg.Length, col color.Color, label text.Style) *countBars {
	label.XAlign, label.YAlign = draw.XCenter, draw.YBottom
	return &countBars{heights: heights, width: width, color: col, label: label}
}

// Plot implements plot.Plotter.
func (b *countBars) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	for i, h := range b.heights {
		if !(h > 0) {
			continue
		}
		x, top := trX(float64(i)), min(trY(h), c.Max.Y)
		c.FillPolygon(b.color, c.ClipPolygonXY([]vg.Point{
			{X: x - b.width/2, Y: c.Min.Y}, {X: x - b.width/2, Y: top},
			{X: x + b.width/2, Y: top}, {X: x + b.width/2, Y: c.Min.Y},
		}))
		c.FillText(b.label, vg.Point{X: x, Y: top + vg.Points(2)}, reports.GroupDigits(int64(math.Round(h))))
	}
}

// DataRange implements plot.DataRanger: y covers the positive heights only.
func (b *countBars) DataRange() (xmin, xmax, ymin, ymax float64) {
	ymin, ymax = math.Inf(1), math.Inf(-1)
	for _, h := range b.heights {
		if h > 0 {
			ymin, ymax = math.Min(ymin, h), math.Max(ymax, h)
		}
	}
	return 0, float64(max(len(b.heights)-1, 0)), ymin, ymax
}

// Thumbnail implements plot.Thumbnailer for the legend.
func (b *countBars) Thumbnail(c *draw.Canvas) {
	c.FillPolygon(b.color, []vg.Point{
		{X: c.Min.X, Y: c.Min.Y}, {X: c.Min.X, Y: c.Max.Y},
		{X: c.Max.X, Y: c.Max.Y}, {X: c.Max.X, Y: c.Min.Y},
	})
}

// countDecadeTicks is decadeTicks with counts written compactly: 1, 10,
// 100, 1k, 10k, 100k, 1M.
type countDecadeTicks struct{}

// Ticks implements plot.Ticker.
func (countDecadeTicks) Ticks(lo, hi float64) []plot.Tick {
	ticks := decadeTicks{}.Ticks(lo, hi)
	for i := range ticks {
		if ticks[i].Label != "" {
			ticks[i].Label = compactCount(ticks[i].Value)
		}
	}
	return ticks
}

// compactCount writes a power-of-ten count as 1, 10, 100, 1k … 100M, 1G;
// fractions (an axis that starts below 1) as they are.
func compactCount(v float64) string {
	for _, u := range []struct {
		div    float64
		suffix string
	}{{1e9, "G"}, {1e6, "M"}, {1e3, "k"}} {
		if v >= u.div {
			return strconv.FormatFloat(v/u.div, 'g', -1, 64) + u.suffix
		}
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

func deadLettersPlot(in plotInput, title string) (*plot.Plot, error) {
	reasons, series := deadLetterSeries(in.ts.Samples, in.series, in.time.divS, MaxPlotPoints)
	if len(series) == 0 {
		return nil, nil
	}
	p := newTimePlot(in, title, "dead letters (cumulative)")
	for i, reason := range reasons {
		if _, err := addLine(p, reason, series[i], paletteColor(i)); err != nil {
			return nil, err
		}
	}
	finishTimeAxes(p, in)
	return p, nil
}

// breakerOffset separates the lines of partners whose breakers are in the
// same state, which would otherwise hide one another.
const breakerOffset = 0.04

func breakerPlot(in plotInput, title string) (*plot.Plot, error) {
	if len(in.ts.Samples) == 0 {
		return nil, nil
	}
	partners, series := breakerSeries(in.ts.Samples, in.series, in.time.divS, MaxPlotPoints)
	if len(series) == 0 {
		return nil, nil
	}
	if n := len(in.ts.BreakerPartners); n > len(partners) {
		title = fmt.Sprintf("%s (first %d of %d partners)", title, len(partners), n)
	}
	p := newTimePlot(in, title, "breaker state")
	for i, partner := range partners {
		shift := (float64(i) - float64(len(partners)-1)/2) * breakerOffset
		xys := make(plotter.XYs, len(series[i]))
		for k, pt := range series[i] {
			xys[k] = plotter.XY{X: pt.X, Y: pt.Y + shift}
		}
		l, err := addLine(p, partner, xys, paletteColor(i))
		if err != nil {
			return nil, err
		}
		l.StepStyle = plotter.PostStep
		l.LineStyle.Width = vg.Points(1.5)
	}
	finishTimeAxes(p, in)
	p.Y.Min, p.Y.Max = -0.3, 2.3
	p.Y.Tick.Marker = plot.ConstantTicks{
		{Value: 0, Label: "closed"}, {Value: 1, Label: "half-open"}, {Value: 2, Label: "open"},
	}
	return p, nil
}

// anyNonZero reports whether any point of any series has y ≠ 0.
func anyNonZero(series ...plotter.XYs) bool {
	for _, xys := range series {
		for _, pt := range xys {
			if pt.Y != 0 {
				return true
			}
		}
	}
	return false
}

// legendSeconds renders a duration given in seconds compactly for a legend:
// "30m", "90s", "250ms".
func legendSeconds(s float64) string {
	switch {
	case s >= 3600 && math.Mod(s, 3600) == 0:
		return strconv.FormatFloat(s/3600, 'g', -1, 64) + "h"
	case s >= 60 && math.Mod(s, 60) == 0:
		return strconv.FormatFloat(s/60, 'g', -1, 64) + "m"
	case s >= 1:
		return strconv.FormatFloat(s, 'g', 4, 64) + "s"
	default:
		return strconv.FormatFloat(s*1000, 'g', 4, 64) + "ms"
	}
}
