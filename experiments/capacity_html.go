package experiments

import (
	"bytes"
	"encoding/base64"
	"html/template"
	"math"
	"sort"
	"strings"
	"sync"

	"github.com/stormdrill/stormdrill/reports/render"
)

// capacityMetric is one figure of a probe, as the capacity report's table,
// charts and plot show it.
type capacityMetric struct {
	title, metric string
	get           func(p *Probe) float64
}

// capacityMetrics are the figures of every probe, in table order.
var capacityMetrics = []capacityMetric{
	{"amplification", "amplification", func(p *Probe) float64 { return p.Amplification }},
	{"healthy p99", "healthy.latency.p99", func(p *Probe) float64 { return p.HealthyP99S }},
	{"drain time", "drain_time", func(p *Probe) float64 { return p.DrainTimeS }},
	{"dead-lettered", "dead_lettered", func(p *Probe) float64 { return roundTenth(p.DeadLettered) }},
}

// capacityFormats is one formatter per capacity metric, each in one unit
// and precision for the whole column.
func (r *CapacityResult) capacityFormats() []func(float64) string {
	out := make([]func(float64) string, len(capacityMetrics))
	for i, m := range capacityMetrics {
		var stats []Stat
		for k := range r.Probes {
			v := m.get(&r.Probes[k])
			stats = append(stats, Stat{N: 1, Mean: v, Min: v, Max: v})
		}
		out[i] = columnFormat(m.metric, stats)
	}
	return out
}

// alwaysZero reports whether metric m is 0 on every probe that has it
// (and some probe has it).
func (r *CapacityResult) alwaysZero(m capacityMetric) bool {
	seen := false
	for k := range r.Probes {
		v := m.get(&r.Probes[k])
		if math.IsNaN(v) {
			continue
		}
		if v != 0 {
			return false
		}
		seen = true
	}
	return seen
}

// zeroLine names the metrics that are 0 on every probe; "" when none is.
func (r *CapacityResult) zeroLine() string {
	var zero []string
	for _, m := range capacityMetrics {
		if r.alwaysZero(m) {
			zero = append(zero, m.title)
		}
	}
	if len(zero) == 0 {
		return ""
	}
	return "0 on every probe, so not plotted: " + strings.Join(zero, ", ") + "."
}

// capacityCharts is one interactive chart per metric that is not always 0:
// each probe at its value, passing and failing probes as two series.
func capacityCharts(r *CapacityResult) []render.PageChart {
	probes := make([]*Probe, len(r.Probes))
	for i := range r.Probes {
		probes[i] = &r.Probes[i]
	}
	sort.SliceStable(probes, func(i, j int) bool { return probes[i].Value < probes[j].Value })
	xLabel := r.Key
	if !r.Integer {
		xLabel += " (/s)"
	}
	var charts []render.PageChart
	for _, m := range capacityMetrics {
		if r.alwaysZero(m) {
			continue
		}
		c := render.PageChart{ID: "chart-" + fileSafe(m.metric), Title: m.title + " against " + r.Key,
			XLabel: xLabel, YLabel: m.title + unitSuffix(m.metric), Scatter: true}
		pass := render.PageSeries{Label: "probe passes every gate"}
		fail := render.PageSeries{Label: "probe fails a gate"}
		for _, p := range probes {
			c.X = append(c.X, p.Value)
			v := m.get(p)
			if p.Pass {
				pass.Values, fail.Values = append(pass.Values, v), append(fail.Values, math.NaN())
			} else {
				pass.Values, fail.Values = append(pass.Values, math.NaN()), append(fail.Values, v)
			}
		}
		c.Series = []render.PageSeries{pass, fail}
		charts = append(charts, c)
	}
	return charts
}

// capacityHTML is the template of a capacity search's report.html, parsed on
// first use: parsed at start, it would sit on the heap of every command,
// most of which write no page.
var capacityHTML = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("capacity").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Capacity: {{.Drill}}, varying {{.Key}}</title>
<style>
body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1200px;padding:0 1em;color:#222}
.scroll{overflow-x:auto;max-width:100%}
table{border-collapse:collapse;font-size:.9em}th,td{border:1px solid #ccc;padding:.3em .6em;text-align:right;white-space:nowrap}
th{background:#f4f4f4}td.l{text-align:left;white-space:normal}
figure{margin:1.5em 0}figure img{max-width:100%;height:auto}
.chart{width:100%;min-height:300px;border:1px solid #ccc;background:#fff}
.note{color:#555}
{{if .Charts}}{{.Charts.UPlotCSS}}{{end}}
</style></head><body>
<h1>Capacity: {{.Drill}}, varying {{.Key}}</h1>
<p><strong>{{.Answer}}</strong></p>
<p>{{.How}}</p>
<div class="scroll"><table><thead><tr>{{range .Header}}<th>{{.}}</th>{{end}}</tr></thead><tbody>
{{range .Rows}}<tr>{{range $i, $c := .}}<td{{if eq $i $.Last}} class="l"{{end}}>{{$c}}</td>{{end}}</tr>
{{end}}</tbody></table></div>
{{if .Zero}}<p>{{.Zero}}</p>{{end}}
{{if .Charts}}<h2>Charts</h2>
<p class="note">Interactive charts: hover for values, drag to zoom (double-click resets), click a legend entry to hide or show its series.</p>
{{range .ChartList}}<figure><div class="chart" id="{{.ID}}" role="img" aria-label="{{.Title}}"></div></figure>
{{end}}<noscript><img src="{{.Plot}}" alt="key metrics against {{.Key}}"></noscript>
{{else}}<figure><img src="{{.Plot}}" alt="key metrics against {{.Key}}"></figure>{{end}}
<p>Every probe is in summary.json.</p>
` + render.ChartScriptsHTML + `</body></html>
`))
})

// writeCapacityHTML writes report.html: the answer, the probes' table and
// one interactive chart per metric, with the plot (svg) for readers
// without JavaScript.
func writeCapacityHTML(b *bytes.Buffer, r *CapacityResult, svg []byte) error {
	header, rows := r.capacityTable()
	data := struct {
		Drill, Key, Answer, How, Zero string
		Header                        []string
		Rows                          [][]string
		Last                          int
		Plot                          template.URL
		ChartList                     []render.PageChart
		Charts                        *render.ChartAssets
	}{Drill: r.Drill, Key: r.Key, Answer: r.AnswerText(), How: r.howText(), Zero: r.zeroLine(),
		Header: header, Rows: rows, Last: len(header) - 1,
		Plot: template.URL("data:image/svg+xml;base64," + base64.StdEncoding.EncodeToString(svg))} // our own gonum output
	if charts := capacityCharts(r); len(charts) > 0 {
		assets, err := render.PageChartAssets(charts)
		if err != nil {
			return err
		}
		data.ChartList, data.Charts = charts, assets
	}
	return capacityHTML().Execute(b, data)
}
