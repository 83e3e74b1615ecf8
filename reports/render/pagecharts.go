package render

import (
	"fmt"
	"html/template"
	"math"
)

// PageChart is one interactive chart of a page other than report.html: the
// sweep and capacity reports draw theirs with the run report's uPlot and
// script, so that all of them read and behave alike.
type PageChart struct {
	ID, Title, XLabel, YLabel string
	// X is where each value sits; for categories leave it nil and name
	// them in XNames: the series are then drawn as grouped bars.
	X      []float64
	XNames []string
	Series []PageSeries
	// Points marks each value (lines through a few measured x values);
	// Scatter marks them without lines.
	Points, Scatter bool
}

// PageSeries is one series of a PageChart.
type PageSeries struct {
	Label string
	// Values has one value per X (per category); NaN is no value.
	Values []float64
	// Err is each value's ± half-width, or nil.
	Err []float64
}

// ChartScriptsHTML is the html/template text a page ends its body with
// to draw its charts from the ChartAssets in its field Charts (nothing
// when that is nil): the data, the vendored uPlot and the script.
const ChartScriptsHTML = `{{with .Charts}}<script type="application/json" id="chart-data">{{.Data}}</script>
<script>/* uPlot {{.Version}}, MIT licence, Leon Sorokin; vendored */
{{.UPlotJS}}</script>
<script>{{.Script}}</script>{{end}}
`

// ChartAssets is what a page inlines to draw its charts: the data, the
// vendored uPlot and the script (see ChartScriptsHTML).
type ChartAssets struct {
	Data     template.JS
	UPlotJS  template.JS
	UPlotCSS template.CSS
	Script   template.JS
	Version  string
}

// maxPageSeries bounds the series of one page chart.
const maxPageSeries = 12

// PageChartAssets turns charts into what a page inlines; an error names the
// chart whose series do not match its x values.
func PageChartAssets(charts []PageChart) (*ChartAssets, error) {
	specs := make([]chartSpec, 0, len(charts))
	for _, c := range charts {
		spec, err := pageChartSpec(c)
		if err != nil {
			return nil, err
		}
		specs = append(specs, spec)
	}
	data, err := chartsJSON(specs)
	if err != nil {
		return nil, err
	}
	return &ChartAssets{Data: data, UPlotJS: template.JS(uPlotJS), UPlotCSS: template.CSS(uPlotCSS),
		Script: template.JS(chartScript), Version: uPlotVersion}, nil
}

// pageChartSpec is c as the chart script reads it. Grouped bars need no
// plugin: series k of K sits at x = i − 0.4 + (k + ½)·0.8/K within
// category i, and has no value at the other series' x.
func pageChartSpec(c PageChart) (chartSpec, error) {
	spec := chartSpec{ID: c.ID, Title: c.Title, XLabel: c.XLabel, YLabel: c.YLabel, Points: c.Points, Scatter: c.Scatter,
		Outages: [][2]float64{}, Manual: [][2]float64{}, Replays: [][2]float64{}, Restarts: []float64{}}
	series := c.Series[:min(len(c.Series), maxPageSeries)]
	n := len(c.X)
	if c.X == nil {
		n = len(c.XNames)
	}
	for _, s := range series {
		if len(s.Values) != n || (s.Err != nil && len(s.Err) != n) {
			return spec, fmt.Errorf("chart %s: series %q has %d values for %d x values", c.ID, s.Label, len(s.Values), n)
		}
	}
	colors := paletteN(len(series))
	if c.X != nil {
		spec.X = append([]float64{}, c.X...)
		for k, s := range series {
			spec.Series = append(spec.Series, chartSeries{Label: s.Label, Color: cssColor(colors[k]),
				Values: chartValues(s.Values), Err: chartValues(s.Err)})
		}
		return spec, nil
	}
	spec.XNames, spec.Bars = c.XNames, true
	groups := len(series)
	for i := range n {
		for k := range groups {
			spec.X = append(spec.X, float64(i)-0.4+(float64(k)+0.5)*0.8/float64(groups))
		}
	}
	for k, s := range series {
		values := make([]float64, n*groups)
		var errs []float64
		if s.Err != nil {
			errs = make([]float64, n*groups)
		}
		for i := range values {
			values[i] = math.NaN()
			if errs != nil {
				errs[i] = math.NaN()
			}
		}
		for i := range n {
			values[i*groups+k] = s.Values[i]
			if errs != nil {
				errs[i*groups+k] = s.Err[i]
			}
		}
		spec.Series = append(spec.Series, chartSeries{Label: s.Label, Color: cssColor(colors[k]),
			Values: chartValues(values), Err: chartValues(errs)})
	}
	return spec, nil
}

func chartValues(vs []float64) []chartValue {
	if vs == nil {
		return nil
	}
	out := make([]chartValue, len(vs))
	for i, v := range vs {
		out[i] = chartValue(v)
	}
	return out
}
