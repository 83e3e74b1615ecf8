package render

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"html/template"
	"io"
	"strings"
	"sync"

	"github.com/stormdrill/stormdrill/reports"
)

// maxInlinePlotBytes bounds one plot file embedded in report.html.
const maxInlinePlotBytes = 8 << 20

// htmlPlot is one plot as the page shows it: a data: URI image, or a note
// saying why it is missing.
type htmlPlot struct {
	Title string
	// Src is the whole src="data:…" attribute. It is built here from a
	// fixed MIME type and base64 text only, so it is safe to mark trusted;
	// as a plain URL html/template would write every "+" as "&#43;".
	Src  template.HTMLAttr // empty when the plot could not be read
	Note string
	// ChartID names the interactive uPlot chart that shows the same data;
	// the image is then the <noscript> fallback.
	ChartID string
}

// plotCharts maps a plot's file name to the interactive chart of the same
// series.
var plotCharts = map[string]string{
	"attempts":            "chart-attempts",
	"faulty_attempts":     "chart-faulty-attempts",
	"amplification":       "chart-amplification",
	"pending":             "chart-pending",
	"oldest_age":          "chart-oldest-age",
	"healthy_percentiles": "chart-healthy-latency",
	"dead_letters":        "chart-dead-letters",
	"breaker":             "chart-breaker",
}

type htmlData struct {
	*reportView
	HTMLPlots   []htmlPlot
	HasSummary  bool
	Definitions []htmlDefinition

	// The interactive charts: their data, the vendored uPlot and the
	// script that draws them, all inlined.
	ChartData    template.JS
	UPlotJS      template.JS
	UPlotCSS     template.CSS
	ChartScript  template.JS
	UPlotVersion string
}

// WriteHTML writes report.html: the content of report.md as one
// self-contained page. Plots are embedded as data: URI images (SVG when
// readFile gives it, else PNG) rather than inline <svg>, because several
// inline SVGs on one page can clash on element ids; an <img> also keeps the
// plot's own size and aspect ratio. readFile reads a file of the run
// directory by the name in PlotRef; it may be nil, and then plots are
// listed without images.
func WriteHTML(w io.Writer, r *reports.Run, plots []PlotRef, readFile func(name string) ([]byte, error)) error {
	v := buildView(r, plots)
	d := htmlData{reportView: v, HasSummary: r != nil && r.Summary != nil, Definitions: htmlGlossary()}
	charts := interactiveCharts(r)
	hasChart := map[string]bool{}
	for _, c := range charts {
		hasChart[c.ID] = true
	}
	shown := map[string]bool{}
	for _, p := range v.Plots {
		hp := embedPlot(p, readFile)
		name := strings.TrimSuffix(p.PNG, ".png")
		if id := plotCharts[name]; hasChart[id] {
			hp.ChartID = id
			shown[id] = true
		}
		d.HTMLPlots = append(d.HTMLPlots, hp)
	}
	// A chart without a plot file of its own still shows.
	for _, c := range charts {
		if !shown[c.ID] {
			d.HTMLPlots = append(d.HTMLPlots, htmlPlot{Title: c.Title, ChartID: c.ID})
		}
	}
	if len(charts) > 0 {
		data, err := chartsJSON(charts)
		if err != nil {
			return fmt.Errorf("report.html: charts: %w", err)
		}
		d.ChartData, d.UPlotJS, d.UPlotCSS, d.ChartScript = data, template.JS(uPlotJS), template.CSS(uPlotCSS), template.JS(chartScript)
		d.UPlotVersion = uPlotVersion
	}
	var buf bytes.Buffer
	if err := reportTemplate().Execute(&buf, d); err != nil {
		return fmt.Errorf("report.html: %w", err)
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// embedPlot reads the SVG (or failing that the PNG) of p and makes it a
// data: URI. The content is checked to be what its name says, so that a
// wrong file does not end up as a broken image.
func embedPlot(p PlotRef, readFile func(string) ([]byte, error)) htmlPlot {
	hp := htmlPlot{Title: p.Title}
	if readFile == nil {
		hp.Note = "plot files were not available to embed"
		return hp
	}
	var problems []string
	try := func(name, mime string, valid func([]byte) bool) bool {
		if name == "" {
			return false
		}
		data, err := readFile(name)
		switch {
		case err != nil:
			problems = append(problems, fmt.Sprintf("%s: %v", name, err))
		case len(data) == 0:
			problems = append(problems, name+": empty")
		case len(data) > maxInlinePlotBytes:
			problems = append(problems, fmt.Sprintf("%s: larger than %d bytes", name, maxInlinePlotBytes))
		case !valid(data):
			problems = append(problems, name+": not a "+mime+" file")
		default:
			hp.Src = template.HTMLAttr(`src="data:` + mime + `;base64,` + base64.StdEncoding.EncodeToString(data) + `"`)
			return true
		}
		return false
	}
	if try(p.SVG, "image/svg+xml", looksLikeSVG) || try(p.PNG, "image/png", looksLikePNG) {
		return hp
	}
	hp.Note = "plot not embedded"
	if len(problems) > 0 {
		hp.Note += ": " + reports.OneLine(problems[0])
	}
	return hp
}

func looksLikeSVG(b []byte) bool {
	head := b[:min(len(b), 4096)]
	return bytes.Contains(head, []byte("<svg"))
}

func looksLikePNG(b []byte) bool {
	return bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n"))
}

// reportTemplate is the template of report.html, parsed on first use:
// parsed at start, it would sit on the heap of every command, most of
// which write no page.
var reportTemplate = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("report").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}} — stormdrill report</title>
<style>
:root { --pass: #1a7f37; --fail: #cf222e; --line: #d0d7de; --muted: #57606a; --head: #f6f8fa; }
* { box-sizing: border-box; }
body { font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1f2328; background: #fff; margin: 0; }
main { max-width: 1100px; margin: 0 auto; padding: 1.5rem 1.25rem 3rem; }
h1 { font-size: 1.7rem; margin: 0 0 .25rem; }
h2 { font-size: 1.25rem; margin: 2rem 0 .6rem; padding-bottom: .25rem; border-bottom: 1px solid var(--line); }
h3 { font-size: 1.05rem; margin: 1.25rem 0 .5rem; }
p.desc { color: var(--muted); margin: 0 0 .75rem; }
.verdict { display: inline-block; font-weight: 700; padding: .35rem .8rem; border-radius: 6px; color: #fff; }
.verdict.pass { background: var(--pass); }
.verdict.fail { background: var(--fail); }
.meta { color: var(--muted); margin-left: .6rem; }
table { border-collapse: collapse; margin: .5rem 0; font-size: 14px; max-width: 100%; }
th, td { border: 1px solid var(--line); padding: .3rem .6rem; text-align: left; vertical-align: top; }
th { background: var(--head); font-weight: 600; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
tbody tr:nth-child(even) { background: #fbfcfd; }
td.ok { color: var(--pass); font-weight: 600; }
td.bad { color: var(--fail); font-weight: 700; }
code { font: 13px ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; background: var(--head); padding: .05rem .3rem; border-radius: 4px; }
a { color: #0969da; }
.scroll { overflow-x: auto; }
figure { margin: 1rem 0 1.5rem; }
figure img { display: block; width: 100%; max-width: 100%; height: auto; min-height: 200px; object-fit: contain; border: 1px solid var(--line); background: #fff; }
figcaption { position: absolute; left: -9999px; } /* the plot carries its own title */
figure { position: relative; }
h2 a { color: inherit; text-decoration: underline dotted; text-decoration-thickness: 1px; }
.tall { max-height: 24rem; overflow-y: auto; }
.tall thead th { position: sticky; top: 0; background: #fff; }
.note, .omitted { color: var(--muted); font-style: italic; }
.chart { width: 100%; min-height: 300px; border: 1px solid var(--line); background: #fff; }
.chart .u-title { font-size: 15px; }
.chart .u-legend { font-size: 13px; text-align: left; }
#failures, #outage-lines { margin: .5rem 0 0; padding-left: 1.25rem; }
#outage-lines li { font-weight: 600; }
li.bad { color: var(--fail); font-weight: 600; }
</style>
{{if .UPlotCSS}}<style>{{.UPlotCSS}}</style>{{end}}
</head>
<body>
<main>
<h1>{{.Title}}</h1>
{{with .Description}}<p class="desc">{{.}}</p>{{end}}
<p><span class="verdict {{if .Pass}}pass{{else}}fail{{end}}">{{.Verdict}}</span><span class="meta">· {{.Meta}}</span></p>
{{if .Findings}}<section id="findings">
<h2>Findings</h2>
<ul>
{{range .Findings}}<li{{if not .Expected}} class="bad"{{end}}>{{.Text}}{{if .Detail}}<pre>{{range .Detail}}{{.}}
{{end}}</pre>{{end}}</li>
{{end}}</ul>
</section>{{end}}
{{if .Failures}}<ul id="failures">
{{range .Failures}}<li class="bad">{{.}}</li>
{{end}}</ul>
{{if .FailuresOmitted}}<p class="omitted">… and {{.FailuresOmitted}} more failures not shown.</p>{{end}}{{end}}
{{if .OutageLines}}<ul id="outage-lines">
{{range .OutageLines}}<li>{{.}}</li>
{{end}}{{if .OutageLinesOmitted}}<li>… and {{.OutageLinesOmitted}} more outages (see Outages)</li>
{{end}}</ul>{{end}}
{{with .SeedNote}}<p id="seed-note">{{.}}</p>{{end}}
{{if .HasSummary}}
{{if .SeedGates}}{{template "gates" .}}{{end}}
{{if .Sides}}<section id="sides">
<h2>Faulty against healthy{{with .SeedScope}} ({{.}}){{end}}</h2>
<div class="scroll">
<table>
<thead><tr><th></th>{{range .Sides}}<th class="num">{{.Label}}</th>{{end}}</tr></thead>
<tbody>
<tr><td><a href="#delivery">subscribers</a></td>{{range .Sides}}<td class="num">{{.Subscribers}}</td>{{end}}</tr>
<tr><td><a href="#retry-amplification">retry amplification</a></td>{{range .Sides}}<td class="num">{{.Amplification}}</td>{{end}}</tr>
<tr><td><a href="#dead-lettered">dead letters by reason</a></td>{{range .Sides}}<td class="num">{{.DeadLetters}}</td>{{end}}</tr>
<tr><td><a href="#drain-time">drain time</a></td>{{range .Sides}}<td class="num">{{.Drain}}</td>{{end}}</tr>
<tr><td><a href="#oldest-ready-age">oldest age (max)</a></td>{{range .Sides}}<td class="num">{{.OldestAge}}</td>{{end}}</tr>
<tr><td><a href="#healthy-subscriber-latency">latency p99</a></td>{{range .Sides}}<td class="num">{{.P99}}</td>{{end}}</tr>
<tr><td><a href="#attempt">attempts</a></td>{{range .Sides}}<td class="num">{{.Attempts}}</td>{{end}}</tr>
<tr><td><a href="#status-codes">status codes</a></td>{{range .Sides}}<td class="num">{{.StatusCodes}}</td>{{end}}</tr>
</tbody>
</table>
</div>
{{if .SidesOmitted}}<p class="omitted">… and {{.SidesOmitted}} more faulty cohorts (see Cohorts).</p>{{end}}
</section>{{end}}
{{if not .SeedGates}}{{template "gates" .}}{{end}}
<section id="figures">
<h2>Pipeline totals{{with .SeedScope}} ({{.}}){{end}}</h2>
<table>
<thead><tr><th>figure</th><th class="num">value</th></tr></thead>
<tbody>
{{range .Figures}}<tr><td><a href="#{{.Anchor}}">{{.Label}}</a></td><td class="num">{{.Value}}</td></tr>
{{end}}</tbody>
</table>
</section>

{{if .Cohorts}}<section id="cohorts">
<h2>Cohorts</h2>
<div class="scroll">
<table>
<thead><tr><th>cohort</th><th class="num">subscribers</th><th>faulty</th><th class="num">deliveries</th><th class="num">delivered</th><th class="num">DLQ</th><th class="num">pending</th><th class="num">attempts</th><th class="num">amplification</th><th class="num">p99</th></tr></thead>
<tbody>
{{range .Cohorts}}<tr><td>{{.Name}}</td><td class="num">{{.Subscribers}}</td><td>{{.Faulty}}</td><td class="num">{{.Deliveries}}</td><td class="num">{{.Delivered}}</td><td class="num">{{.DLQ}}</td><td class="num">{{.Pending}}</td><td class="num">{{.Attempts}}</td><td class="num">{{.Amplification}}</td><td class="num">{{.P99}}</td></tr>
{{end}}</tbody>
</table>
</div>
{{if .CohortsOmitted}}<p class="omitted">… and {{.CohortsOmitted}} more cohorts not shown.</p>{{end}}
{{if $.CohortCodes}}<p><a href="#status-codes">Status codes</a> per cohort:</p>
<table id="status-codes-table">
<thead><tr><th>cohort</th><th>status codes</th></tr></thead>
<tbody>
{{range $.CohortCodes}}<tr><td>{{.Key}}</td><td>{{.Value}}</td></tr>
{{end}}</tbody>
</table>{{end}}
</section>{{end}}

<section id="dead-letters">
<h2><a href="#dead-lettered">Dead letters</a></h2>
{{if .DeadLetters}}<table>
<thead><tr><th>reason</th><th class="num">count</th><th class="num">share</th></tr></thead>
<tbody>
{{range .DeadLetters}}<tr><td><code>{{.Reason}}</code></td><td class="num">{{.Count}}</td><td class="num">{{.Share}}</td></tr>
{{end}}</tbody>
</table>
{{if .DeadLettersOmitted}}<p class="omitted">… and {{.DeadLettersOmitted}} more reasons not shown.</p>{{end}}
{{else}}<p class="note">No dead letters.</p>{{end}}
</section>

{{if .Outages}}<section id="outages">
<h2>Outages and <a href="#drain-time">drain time</a></h2>
<table>
<thead><tr><th>partner</th><th>kind</th><th class="num">start</th><th class="num">end</th><th class="num">drain time</th><th><a href="#retry-spread">retry spread</a></th></tr></thead>
<tbody>
{{range .Outages}}<tr><td>{{.Partner}}</td><td>{{.Kind}}</td><td class="num">{{.Start}}</td><td class="num">{{.End}}</td><td class="num">{{.Drain}}</td><td>{{.Spread}}</td></tr>
{{end}}</tbody>
</table>
{{if .OutagesOmitted}}<p class="omitted">… and {{.OutagesOmitted}} more outages not shown.</p>{{end}}
</section>{{end}}

{{if .Actions}}<section id="actions">
<h2>Operator actions</h2>
<table>
<thead><tr><th class="num">at</th><th>action</th><th>what it did</th></tr></thead>
<tbody>
{{range .Actions}}<tr><td class="num">{{.At}}</td><td><code>{{.Kind}}</code></td><td>{{.Detail}}</td></tr>
{{end}}</tbody>
</table>
{{if .ActionsOmitted}}<p class="omitted">… and {{.ActionsOmitted}} more actions not shown.</p>{{end}}
</section>{{end}}

{{if .Replays}}<section id="replays">
<h2><a href="#dlq-replay">DLQ replay</a></h2>
<table>
<thead><tr><th>action</th><th>selection</th><th class="num">replayed</th><th class="num">batches</th><th class="num">amplification</th><th class="num">drain time</th><th class="num">load before</th><th class="num">load during</th><th class="num">peak</th><th class="num">healthy p99 during</th><th>outcome</th></tr></thead>
<tbody>
{{range .Replays}}<tr><td>{{.Action}}</td><td>{{.Selection}}</td><td class="num">{{.Replayed}}</td><td class="num">{{.Batches}}</td><td class="num">{{.Amplification}}</td><td class="num">{{.Drain}}</td><td class="num">{{.LoadBefore}}</td><td class="num">{{.LoadDuring}}</td><td class="num">{{.LoadPeak}}</td><td class="num">{{.HealthyP99}}</td><td>{{.Outcome}}</td></tr>
{{end}}</tbody>
</table>
</section>{{end}}

{{if .Breaker}}<section id="breaker">
<h2><a href="#circuit-breaker">Breaker</a> transitions</h2>
<div class="tall"><table>
<thead><tr><th class="num">at</th><th>partner</th><th>from</th><th>to</th></tr></thead>
<tbody>
{{range .Breaker}}<tr><td class="num">{{.At}}</td><td>{{.Partner}}</td><td>{{.From}}</td><td>{{.To}}</td></tr>
{{end}}</tbody>
</table></div>
{{if .BreakerOmitted}}<p class="omitted">… and {{.BreakerOmitted}} more rows of transitions not shown.</p>{{end}}
</section>{{end}}

{{if .HTMLPlots}}<section id="plots">
<h2>Plots</h2>
{{if .ChartData}}<p class="note">Interactive charts: hover for values, drag to zoom (double-click resets), click a legend entry to hide or show its series. Grey bands: scripted outages; orange bands: manual outages; blue bands: DLQ replays, until the replayed deliveries drained; purple dashed lines: dispatcher restarts; red dashed line: the SLO.</p>{{end}}
{{range .HTMLPlots}}<figure>
<figcaption>{{.Title}}</figcaption>
{{if .ChartID}}<div class="chart" id="{{.ChartID}}" role="img" aria-label="{{.Title}}"></div>
{{if .Src}}<noscript><img {{.Src}} alt="{{.Title}}"></noscript>{{end}}
{{else if .Src}}<img {{.Src}} alt="{{.Title}}">{{else}}<p class="note">{{.Note}}</p>{{end}}
</figure>
{{end}}{{if .PlotsOmitted}}<p class="omitted">… and {{.PlotsOmitted}} more plots not shown.</p>{{end}}
</section>{{end}}

{{if .Policy}}<section id="policy">
<h2>Policy</h2>
<table>
<thead><tr><th>setting</th><th>value</th></tr></thead>
<tbody>
{{range .Policy}}<tr><td><code>{{.Key}}</code></td><td>{{.Value}}</td></tr>
{{end}}</tbody>
</table>
{{if .PolicyOmitted}}<p class="omitted">… and {{.PolicyOmitted}} more settings not shown.</p>{{end}}
</section>{{end}}

{{with .Baseline}}<section id="baseline">
<h2>Compared with the baseline</h2>
<p>Base: <code>{{.Base}}</code> · candidate: <code>{{.Candidate}}</code> — <strong>{{.Verdict}}</strong></p>
{{with .Method}}<p class="note">{{.}}</p>{{end}}
<div class="scroll">
<table>
<thead><tr><th>metric</th><th class="num">base{{if .Seeds}} mean{{end}}</th><th class="num">candidate{{if .Seeds}} mean{{end}}</th><th class="num">change</th><th class="num">% change</th>{{if .Seeds}}<th class="num">95% CI of change</th><th class="num">p</th>{{end}}<th>verdict</th></tr></thead>
<tbody>
{{$seeds := .Seeds}}{{range .Rows}}<tr><td><code>{{.Metric}}</code></td><td class="num">{{.Base}}</td><td class="num">{{.Candidate}}</td><td class="num">{{.Change}}</td><td class="num">{{.Percent}}</td>{{if $seeds}}<td class="num">{{.CI}}</td><td class="num">{{.P}}</td>{{end}}<td{{if .Exceeded}} class="bad"{{end}}>{{.Verdict}}</td></tr>
{{else}}<tr><td colspan="8" class="note">All figures are the same in both runs.</td></tr>
{{end}}</tbody>
</table>
</div>
{{if .Same}}<p class="omitted">{{.Same}} more figures are the same in both runs and not shown.</p>{{end}}
</section>{{end}}

{{if .External}}<section id="external">
<h2>Seen from the partners (external run)</h2>
<table id="external-table">
<thead><tr><th>figure</th><th>value</th></tr></thead>
<tbody>
{{range .External}}<tr><td>{{index . 0}}</td><td>{{index . 1}}</td></tr>
{{end}}</tbody>
</table>
</section>{{end}}

{{if .SeedCount}}<section id="across-seeds">
<h2>Across {{.SeedCount}} <a href="#seeds">seeds</a></h2>
<p>Seeds {{.SeedList}}. The rest of this report is the first seed; per-seed summaries are in <code>seeds/</code>. 95% CI: confidence interval of the mean, Student's t with n−1 degrees of freedom.</p>
<div class="scroll tall">
<table>
<thead><tr><th>metric</th><th class="num">mean</th><th class="num">95% CI</th><th class="num">min – max</th><th class="num">seeds</th></tr></thead>
<tbody>
{{range .SeedFigures}}<tr><td><code>{{.Metric}}</code></td><td class="num">{{.Mean}}</td><td class="num">{{.CI}}</td><td class="num">{{.Range}}</td><td class="num">{{.N}}</td></tr>
{{end}}</tbody>
</table>
</div>
</section>{{end}}

{{if or .Lateness .Alerts .Restarts}}<section id="live">
<h2>{{.RunHeading}}</h2>
{{with .Lateness}}<p><a href="#lateness">Arrival lateness</a> p50 / p90 / p99 / p99.9 / max: {{.}}</p>{{end}}
{{if .Restarts}}<h3>{{.RestartsHeading}}</h3>
<table>
<thead><tr><th class="num">at</th><th class="num">down for</th><th>kind</th><th class="num">in flight</th></tr></thead>
<tbody>
{{range .Restarts}}<tr><td class="num">{{.At}}</td><td class="num">{{.Down}}</td><td>{{.Kind}}</td><td class="num">{{.InFlight}}</td></tr>
{{end}}</tbody>
</table>
{{if .RestartsOmitted}}<p class="omitted">… and {{.RestartsOmitted}} more restarts not shown.</p>{{end}}{{end}}
{{if .Alerts}}<h3>DLQ alerts</h3>
<table>
<thead><tr><th class="num">at</th><th>partner</th><th>reason</th><th class="num">count</th></tr></thead>
<tbody>
{{range .Alerts}}<tr><td class="num">{{.At}}</td><td>{{.Partner}}</td><td><code>{{.Reason}}</code></td><td class="num">{{.Count}}</td></tr>
{{end}}</tbody>
</table>
{{if .AlertsOmitted}}<p class="omitted">… and {{.AlertsOmitted}} more alerts not shown.</p>{{end}}{{end}}
</section>{{end}}

<section id="definitions">
<h2>Definitions</h2>
<p class="note">What the harness measures; the links above point here.</p>
{{range .Definitions}}<h3 id="{{.Anchor}}">{{.Term}}</h3>
{{range .Paragraphs}}<p>{{.}}</p>
{{end}}{{end}}</section>
{{end}}
</main>
{{if .ChartData}}<script type="application/json" id="chart-data">{{.ChartData}}</script>
<script>/* uPlot {{.UPlotVersion}}, MIT licence, Leon Sorokin; vendored */
{{.UPlotJS}}</script>
<script>{{.ChartScript}}</script>{{end}}
</body>
</html>
{{define "gates"}}<section>
<h2>Gates</h2>
<div class="scroll">
<table id="gates">
{{if .SeedGates}}<thead><tr><th>gate</th><th>held on</th><th class="num">min</th><th class="num">mean</th><th class="num">max</th><th>verdict</th></tr></thead>
{{else}}<thead><tr><th>gate</th><th class="num">measured</th><th>verdict</th></tr></thead>
{{end}}<tbody>
{{range .Gates}}<tr><td><code>{{.Expr}}</code></td>{{if $.SeedGates}}<td>{{.HeldOn}}</td><td class="num">{{.Min}}</td><td class="num">{{.Mean}}</td><td class="num">{{.Max}}</td>{{else}}<td class="num">{{.Measured}}</td>{{end}}{{if .Pass}}<td class="ok">✓ pass</td>{{else}}<td class="bad">✗ FAIL</td>{{end}}</tr>
{{else}}<tr><td colspan="6" class="note">No gates.</td></tr>
{{end}}</tbody>
</table>
</div>
{{if .GatesOmitted}}<p class="omitted">… and {{.GatesOmitted}} more gates not shown.</p>{{end}}
</section>

{{if .Tolerances}}<section id="tolerances">
<h2>Tolerances against the baseline</h2>
<div class="scroll">
<table>
<thead><tr><th>tolerance</th><th class="num">base</th><th class="num">candidate</th><th class="num">change</th><th>test</th><th>verdict</th></tr></thead>
<tbody>
{{range .Tolerances}}<tr><td><code>{{.Expr}}</code></td><td class="num">{{.Base}}</td><td class="num">{{.Candidate}}</td><td class="num">{{.Change}}</td><td>{{if .Test}}{{.Test}}{{else}}—{{end}}</td>{{if .Pass}}<td class="ok">✓ pass</td>{{else}}<td class="bad">✗ FAIL</td>{{end}}</tr>
{{end}}</tbody>
</table>
</div>
</section>{{end}}{{end}}
`))
})
