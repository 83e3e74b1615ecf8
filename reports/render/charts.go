package render

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"image/color"
	"math"

	"github.com/stormdrill/stormdrill/reports"
)

// The vendored uPlot (see assets/uplot/README.md): report.html inlines it,
// so the page draws its charts without the network.
const uPlotVersion = "1.6.32"

var (
	//go:embed assets/uplot/uPlot.iife.min.js
	uPlotJS string
	//go:embed assets/uplot/uPlot.min.css
	uPlotCSS string
)

// chartSpec is one interactive time-series chart of report.html, as the
// page's script reads it.
type chartSpec struct {
	ID     string        `json:"id"`
	Title  string        `json:"title"`
	XLabel string        `json:"xLabel"`
	YLabel string        `json:"yLabel"`
	X      []float64     `json:"x"`
	Series []chartSeries `json:"series"`
	// Step draws the lines as steps (breaker state).
	Step bool `json:"step,omitempty"`
	// Outages, Manual and Replays are shaded windows, Restarts vertical
	// marks, all in x units.
	Outages  [][2]float64 `json:"outages"`
	Manual   [][2]float64 `json:"manual"`
	Replays  [][2]float64 `json:"replays"`
	Restarts []float64    `json:"restarts"`
	// YRef is a horizontal reference line (the SLO), in y units.
	YRef      *float64 `json:"yRef,omitempty"`
	YRefLabel string   `json:"yRefLabel,omitempty"`
	// YNames labels integer y values (breaker: closed, half-open, open).
	YNames []string `json:"yNames,omitempty"`
	// XNames labels categories at x = 0, 1, …; Bars draws the series as
	// bars (grouped: each series' x sits beside the category's), Points
	// marks each value.
	XNames  []string `json:"xNames,omitempty"`
	Bars    bool     `json:"bars,omitempty"`
	Points  bool     `json:"points,omitempty"`
	Scatter bool     `json:"scatter,omitempty"`
}

type chartSeries struct {
	Label  string       `json:"label"`
	Color  string       `json:"color"`
	Values []chartValue `json:"values"`
	Width  float64      `json:"width,omitempty"`
	// Err is the ± half-width of each value, shown beside it on hover.
	Err []chartValue `json:"err,omitempty"`
}

// chartValue is a y value; NaN ("no value in this interval") is written
// as null, which uPlot draws as a gap.
type chartValue float64

// MarshalJSON implements json.Marshaler.
func (v chartValue) MarshalJSON() ([]byte, error) {
	f := float64(v)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return []byte("null"), nil
	}
	return json.Marshal(reports.RoundFloat(f))
}

// interactiveCharts builds the time-series charts of report.html from the
// same series as the PNG/SVG plots. Each chart's series share one x array,
// downsampled to at most MaxPlotPoints points keeping every series' peaks.
func interactiveCharts(run *reports.Run) []chartSpec {
	if run == nil || run.Timeseries == nil || len(run.Timeseries.Samples) == 0 {
		return nil
	}
	s := run.Summary
	if s == nil {
		s = &reports.Summary{}
	}
	ts := run.Timeseries
	series := timeseriesColumns(ts)
	span := math.Max(s.DrillTimeS, ts.Samples[len(ts.Samples)-1].T)
	axis := chooseTimeAxis(span)
	marks := timeMarks(s, axis.divS)
	var charts []chartSpec
	add := func(id, title, yLabel string, labels []string, colors []color.Color, cols [][]float64) *chartSpec {
		if len(cols) == 0 {
			return nil
		}
		// One x array for all series; NaN stays NaN (a gap).
		finite := make([][]float64, len(cols))
		n := len(ts.Samples)
		for k, vs := range cols {
			finite[k] = make([]float64, len(vs))
			for i, v := range vs {
				finite[k][i] = plotFinite(v)
			}
			n = min(n, len(vs))
		}
		idx := downsampleIndices(n, finite, MaxPlotPoints)
		c := chartSpec{ID: id, Title: title, XLabel: axis.label, YLabel: yLabel,
			Outages: marks.outages, Manual: marks.manual, Replays: marks.replays, Restarts: marks.restarts}
		c.X = make([]float64, len(idx))
		for j, i := range idx {
			c.X[j] = reports.RoundFloat(plotFinite(ts.Samples[i].T) / axis.divS)
		}
		for k, vs := range cols {
			out := make([]chartValue, len(idx))
			for j, i := range idx {
				out[j] = chartValue(vs[i])
			}
			c.Series = append(c.Series, chartSeries{Label: labels[k], Color: cssColor(colors[k]), Values: out})
		}
		charts = append(charts, c)
		return &charts[len(charts)-1]
	}
	// col reads one column; NaN and infinities become 0 except where a
	// column means "no value here" (cohortColumns keeps those NaN).
	col := func(f func(*reports.Sample) float64) []float64 {
		vs := make([]float64, len(ts.Samples))
		for i := range ts.Samples {
			vs[i] = plotFinite(f(&ts.Samples[i]))
		}
		return vs
	}

	add("chart-attempts", "Attempts per second", "attempts/s",
		[]string{"first attempts/s", "retries/s", "successes/s"},
		[]color.Color{plotPalette[0], plotPalette[1], plotPalette[2]},
		[][]float64{
			col(func(s *reports.Sample) float64 { return s.FirstAttemptsPerS }),
			col(func(s *reports.Sample) float64 { return s.RetriesPerS }),
			col(func(s *reports.Sample) float64 { return s.SuccessesPerS }),
		})

	if labels, colors, _, cols := faultyAttemptColumns(s, series); anyNonZeroCols(cols) {
		add("chart-faulty-attempts", "Attempts per second to the faulty partners", "attempts/s", labels, colors, cols)
	}

	labels, colors, cols := cohortColumns(s, series, cohortAmplificationColumn)
	ampTitle := "Retry amplification"
	if len(cols) > 0 {
		ampTitle += " by cohort"
	}
	labels = append(labels, "pipeline, per interval")
	colors = append(colors, color.Gray{Y: 0x80})
	cols = append(cols, col(func(s *reports.Sample) float64 { return s.Amplification }))
	if anyNonZeroCols(finiteCols(cols)) {
		add("chart-amplification", ampTitle, "attempts ÷ first attempts", labels, colors, cols)
	}

	add("chart-pending", "Pending deliveries", "deliveries",
		[]string{"ready", "delayed", "in flight"},
		[]color.Color{plotPalette[0], plotPalette[1], plotPalette[2]},
		[][]float64{
			col(func(s *reports.Sample) float64 { return s.Ready }),
			col(func(s *reports.Sample) float64 { return s.Delayed }),
			col(func(s *reports.Sample) float64 { return s.InFlight }),
		})

	labels, colors, cols = cohortColumns(s, series, cohortOldestAgeColumn)
	if len(cols) == 0 {
		labels = []string{"oldest ready", "oldest delayed"}
		colors = []color.Color{plotPalette[0], plotPalette[1]}
		cols = [][]float64{
			col(func(s *reports.Sample) float64 { return s.OldestReadyAgeS }),
			col(func(s *reports.Sample) float64 { return s.OldestDelayedAgeS }),
		}
	}
	unit := scaleAgeColumns(cols, s.SLOS)
	ageTitle := "Oldest message age"
	if labels[0] != "oldest ready" {
		ageTitle += " by cohort"
	}
	if c := add("chart-oldest-age", ageTitle, "age ("+unit.unit+")", labels, colors, cols); c != nil && s.SLOS > 0 {
		ref := reports.RoundFloat(s.SLOS / unit.divS)
		c.YRef, c.YRefLabel = &ref, "SLO "+legendSeconds(s.SLOS)
	}

	p50 := col(func(s *reports.Sample) float64 { return s.HealthyLatencyP50S })
	p99 := col(func(s *reports.Sample) float64 { return s.HealthyLatencyP99S })
	if anyNonZeroCols([][]float64{p50, p99}) {
		c := add("chart-healthy-latency", "Healthy-subscriber latency per interval", "latency (s)",
			[]string{"p50", "p99"}, []color.Color{plotPalette[0], plotPalette[3]}, [][]float64{p50, p99})
		if c != nil && s.SLOS > 0 {
			ref := reports.RoundFloat(s.SLOS)
			c.YRef, c.YRefLabel = &ref, "SLO "+legendSeconds(s.SLOS)
		}
	}

	dlqLabels, dlqCols := deadLetterColumns(series)
	add("chart-dead-letters", "Dead letters by reason (cumulative)", "dead letters", dlqLabels, paletteN(len(dlqCols)), dlqCols)

	brLabels, brCols := breakerColumns(series)
	if c := add("chart-breaker", "Circuit breaker state", "state", brLabels, paletteN(len(brCols)), brCols); c != nil {
		c.Step = true
		c.YNames = []string{"closed", "half-open", "open"}
	}
	return charts
}

// deadLetterColumns is the running count of dead letters for each reason
// that has any: cumulative counts read better than per-interval ones,
// which at a 1 s interval are a comb of 0s and 1s. Reasons keep the
// Timeseries order.
func deadLetterColumns(series []seriesColumn) (labels []string, cols [][]float64) {
	for _, c := range columnsOf(series, deadLetterColumn) {
		running := make([]float64, len(c.Counts))
		var sum float64
		for i, n := range c.Counts {
			sum += math.Max(0, plotFinite(n))
			running[i] = sum
		}
		if sum > 0 {
			labels = append(labels, c.Of)
			cols = append(cols, running)
		}
	}
	return labels, cols
}

// breakerColumns is each partner's breaker state, up to maxBreakerLines;
// a sample without one reads closed.
func breakerColumns(series []seriesColumn) (labels []string, cols [][]float64) {
	for p, c := range columnsOf(series, breakerColumn) {
		if p >= maxBreakerLines {
			break
		}
		states := make([]float64, len(c.Values))
		for i, v := range c.Values {
			states[i] = plotFinite(v)
		}
		labels = append(labels, c.Of)
		cols = append(cols, states)
	}
	return labels, cols
}

// scaleAgeColumns divides the age columns by the duration unit that fits
// their largest value (and the SLO, when it is within reach), and returns
// that unit.
func scaleAgeColumns(cols [][]float64, sloS float64) durationAxis {
	maxAge := 0.0
	for _, c := range cols {
		for _, v := range c {
			maxAge = math.Max(maxAge, plotFinite(v))
		}
	}
	if slo := plotFinite(sloS); slo <= sloReach*maxAge {
		maxAge = math.Max(maxAge, slo)
	}
	unit := chooseDurationAxis(maxAge)
	for _, c := range cols {
		for i := range c {
			c[i] /= unit.divS
		}
	}
	return unit
}

// cohortColumns is one column of the kind per Timeseries.Cohorts entry
// (a copy: the caller may scale it), faulty cohorts first and labelled
// so; nil when no sample carries that kind of cohort column. NaN stays:
// "no value in this interval" is a gap, not 0.
func cohortColumns(s *reports.Summary, series []seriesColumn, kind columnKind) (labels []string, colors []color.Color, cols [][]float64) {
	faulty := map[string]bool{}
	for _, c := range s.Cohorts {
		faulty[c.Name] = c.Faulty
	}
	cohorts := columnsOf(series, kind)
	if len(cohorts) == 0 || !cohorts[0].Sampled {
		return nil, nil, nil
	}
	n := 0
	for pass := range 2 {
		for _, c := range cohorts {
			if faulty[c.Of] != (pass == 0) {
				continue
			}
			label := c.Of
			if faulty[label] {
				label += " (faulty)"
			}
			labels = append(labels, label)
			colors = append(colors, paletteColor(n))
			cols = append(cols, append([]float64(nil), c.Values...))
			n++
		}
	}
	return labels, colors, cols
}

// maxFaultyAttemptCohorts bounds the faulty cohorts drawn on the faulty
// partners' attempts panel.
const maxFaultyAttemptCohorts = 4

// faultyAttemptColumns is, for each faulty cohort (at most
// maxFaultyAttemptCohorts), its first attempts/s and its retries/s, each
// in a colour of its own (the plots dash the retries); a sample without
// them reads 0.
func faultyAttemptColumns(s *reports.Summary, series []seriesColumn) (labels []string, colors []color.Color, dashed []bool, cols [][]float64) {
	faulty := map[string]bool{}
	for _, c := range s.Cohorts {
		faulty[c.Name] = c.Faulty
	}
	firsts, retries := columnsOf(series, cohortFirstAttemptsColumn), columnsOf(series, cohortRetriesColumn)
	n := 0
	for k, c := range firsts {
		if !faulty[c.Of] || n >= maxFaultyAttemptCohorts || k >= len(retries) {
			continue
		}
		nonNegative := func(vs []float64) []float64 {
			out := make([]float64, len(vs))
			for i, v := range vs {
				out[i] = math.Max(0, plotFinite(v))
			}
			return out
		}
		labels = append(labels, c.Of+" first attempts/s", c.Of+" retries/s")
		colors = append(colors, paletteColor(2*n), paletteColor(2*n+1))
		dashed = append(dashed, false, true)
		cols = append(cols, nonNegative(c.Values), nonNegative(retries[k].Values))
		n++
	}
	return labels, colors, dashed, cols
}

// timeMarks are the windows and instants marked on every time axis.
type timeMarkSet struct {
	outages, manual, replays [][2]float64
	restarts                 []float64
}

func timeMarks(s *reports.Summary, divS float64) timeMarkSet {
	m := timeMarkSet{outages: [][2]float64{}, manual: [][2]float64{}, replays: [][2]float64{}, restarts: []float64{}}
	for _, o := range s.Outages {
		start, end := plotFinite(o.StartS), plotFinite(o.EndS)
		if end <= start {
			continue
		}
		w := [2]float64{reports.RoundFloat(start / divS), reports.RoundFloat(end / divS)}
		if o.Manual {
			m.manual = append(m.manual, w)
		} else {
			m.outages = append(m.outages, w)
		}
	}
	for _, w := range replayWindows(s) {
		m.replays = append(m.replays, [2]float64{reports.RoundFloat(w[0] / divS), reports.RoundFloat(w[1] / divS)})
	}
	for _, r := range s.Restarts {
		m.restarts = append(m.restarts, reports.RoundFloat(plotFinite(r.AtS)/divS))
	}
	return m
}

// replayWindows are the DLQ replays' windows in seconds: from each
// replay's start until its replayed deliveries drained (the drill's end
// while one is still pending), so the plots show what the replay did to
// the load; replays that moved nothing are left out.
func replayWindows(s *reports.Summary) [][2]float64 {
	var ws [][2]float64
	for _, r := range s.Replays {
		if r.Replayed == 0 {
			continue
		}
		start, end := plotFinite(r.AtS), plotFinite(s.DrillTimeS)
		if r.DrainTimeS != nil {
			end = start + plotFinite(*r.DrainTimeS)
		}
		// A replay that drained within the sample interval still shows.
		end = max(end, plotFinite(r.LastBatchS))
		if end > start {
			ws = append(ws, [2]float64{start, end})
		}
	}
	return ws
}

// finiteCols is cols with NaN and infinities as 0.
func finiteCols(cols [][]float64) [][]float64 {
	out := make([][]float64, len(cols))
	for k, vs := range cols {
		out[k] = make([]float64, len(vs))
		for i, v := range vs {
			out[k][i] = plotFinite(v)
		}
	}
	return out
}

func anyNonZeroCols(cols [][]float64) bool {
	for _, c := range cols {
		for _, v := range c {
			if v != 0 {
				return true
			}
		}
	}
	return false
}

func paletteN(n int) []color.Color {
	out := make([]color.Color, n)
	for i := range out {
		out[i] = paletteColor(i)
	}
	return out
}

func cssColor(c color.Color) string {
	r, g, b, _ := c.RGBA()
	return fmt.Sprintf("#%02x%02x%02x", r>>8, g>>8, b>>8)
}

// chartsJSON is the charts as JSON for a <script type="application/json">
// element. encoding/json escapes <, > and &, so the text cannot close the
// element.
func chartsJSON(charts []chartSpec) (template.JS, error) {
	if charts == nil {
		charts = []chartSpec{}
	}
	b, err := json.Marshal(charts)
	if err != nil {
		return "", err
	}
	return template.JS(b), nil
}

// chartScript draws every chart of #chart-data with uPlot: hover values in
// the legend, drag to zoom (double-click to reset), click a legend entry to
// hide or show its series; outages shaded, restarts marked, the SLO drawn.
const chartScript = `(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("chart-data").textContent);
  var SLO_REACH = 3; // sloReach of the plots
  function fmt(v) {
    if (v == null || isNaN(v)) return "–";
    var a = Math.abs(v);
    if (a !== 0 && a < 0.001) return v.toExponential(2);
    if (a >= 1000) return Math.round(v).toLocaleString("en-US");
    return String(+v.toPrecision(4));
  }
  function marks(spec) {
    return {hooks: {drawClear: [function (u) {
      var ctx = u.ctx, top = u.bbox.top, h = u.bbox.height;
      ctx.save();
      function shade(ws, fill) {
        ctx.fillStyle = fill;
        ws.forEach(function (w) {
          var x0 = u.valToPos(w[0], "x", true), x1 = u.valToPos(w[1], "x", true);
          ctx.fillRect(x0, top, Math.max(1, x1 - x0), h);
        });
      }
      shade(spec.outages, "rgba(128,128,128,0.22)");
      shade(spec.manual, "rgba(213,94,0,0.18)");
      shade(spec.replays, "rgba(0,114,178,0.16)");
      ctx.restore();
    }], draw: [function (u) {
      var ctx = u.ctx, top = u.bbox.top, h = u.bbox.height;
      ctx.save();
      ctx.lineWidth = 2 * devicePixelRatio;
      ctx.strokeStyle = "#7b3294";
      ctx.setLineDash([4 * devicePixelRatio, 3 * devicePixelRatio]);
      spec.restarts.forEach(function (t) {
        var x = u.valToPos(t, "x", true);
        ctx.beginPath(); ctx.moveTo(x, top); ctx.lineTo(x, top + h); ctx.stroke();
      });
      if (spec.yRef != null && spec.yRef <= u.scales.y.max) {
        var y = u.valToPos(spec.yRef, "y", true);
        ctx.strokeStyle = "#c00000";
        ctx.setLineDash([6 * devicePixelRatio, 3 * devicePixelRatio]);
        ctx.beginPath(); ctx.moveTo(u.bbox.left, y); ctx.lineTo(u.bbox.left + u.bbox.width, y); ctx.stroke();
      } else if (spec.yRef != null) {
        // Beyond the data's reach the axis stays fitted to the data and
        // says where the SLO is.
        ctx.fillStyle = "#c00000";
        ctx.font = (12 * devicePixelRatio) + "px sans-serif";
        ctx.textAlign = "right";
        ctx.textBaseline = "top";
        ctx.fillText(spec.yRefLabel + " \u2191 above this scale", u.bbox.left + u.bbox.width - 6 * devicePixelRatio, u.bbox.top + 4 * devicePixelRatio);
      }
      ctx.restore();
    }]}};
  }
  data.forEach(function (spec) {
    var el = document.getElementById(spec.id);
    if (!el) return;
    function xName(v) { return v == null ? "–" : (spec.xNames[Math.round(v)] || ""); }
    var series = [{label: spec.xLabel, value: function (u, v) { return spec.xNames ? xName(v) : fmt(v); }}];
    spec.series.forEach(function (s) {
      var opt = {label: s.label, stroke: s.color, width: s.width || 1.5,
        value: function (u, v, si, i) {
          if (spec.yNames && v != null) return spec.yNames[Math.round(v)] || fmt(v);
          if (s.err && v != null && i != null && s.err[i] != null) return fmt(v) + " \u00b1 " + fmt(s.err[i]);
          return fmt(v);
        }};
      if (spec.step) opt.paths = uPlot.paths.stepped({align: 1});
      if (spec.bars) { opt.paths = uPlot.paths.bars({size: [0.9, 64]}); opt.fill = s.color; opt.points = {show: false}; }
      if (spec.points) { opt.points = {show: true, size: 7}; opt.spanGaps = true; }
      if (spec.scatter) { opt.paths = function () { return null; }; opt.points = {show: true, size: 9, fill: s.color}; }
      series.push(opt);
    });
    var yAxis = {label: spec.yLabel};
    if (spec.yNames) {
      yAxis.splits = function () { return spec.yNames.map(function (_, i) { return i; }); };
      yAxis.values = function (u, vals) { return vals.map(function (v) { return spec.yNames[v] || ""; }); };
      yAxis.size = 80;
    }
    var yMax = spec.yRef != null ? spec.yRef : null;
    var xAxis = {label: spec.xLabel};
    var xScale = {time: false};
    if (spec.xNames) {
      xAxis.splits = function () { return spec.xNames.map(function (_, i) { return i; }); };
      xAxis.values = function (u, vals) { return vals.map(xName); };
      xScale.range = function () { return [-0.5, spec.xNames.length - 0.5]; };
    }
    var opts = {
      title: spec.title,
      width: Math.max(320, el.clientWidth || 800), height: 300,
      series: series,
      axes: [xAxis, yAxis],
      scales: {x: xScale, y: {range: function (u, lo, hi) {
        if (spec.yNames) return [-0.2, spec.yNames.length - 0.8];
        // The SLO stretches the axis only when within sloReach of the data.
        var top = yMax != null && yMax <= SLO_REACH * hi ? Math.max(hi, yMax) : hi;
        if (!(top > 0)) top = 1;
        return [Math.min(0, lo), top * 1.05];
      }}},
      cursor: {drag: {x: true, y: false}},
      legend: {live: true},
      plugins: [marks(spec)]
    };
    var cols = [spec.x].concat(spec.series.map(function (s) { return s.values; }));
    var chart = new uPlot(opts, cols, el);
    el.uplot = chart;
    window.addEventListener("resize", function () {
      chart.setSize({width: Math.max(320, el.clientWidth || 800), height: 300});
    });
  });
  document.documentElement.setAttribute("data-charts", String(data.length));
})();`
