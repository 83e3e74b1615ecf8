package experiments

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/stormdrill/stormdrill/reports"
	"github.com/stormdrill/stormdrill/reports/render"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// thresholdLine is a gate's threshold across a capacity panel.
type thresholdLine struct{ y float64 }

var thresholdStyle = draw.LineStyle{Color: color.NRGBA{R: 0xC0, A: 0xFF}, Width: vg.Points(1.25), Dashes: []vg.Length{vg.Points(2), vg.Points(2)}}

// Plot implements plot.Plotter.
func (t *thresholdLine) Plot(c draw.Canvas, p *plot.Plot) {
	_, trY := p.Transforms(&c)
	y := trY(t.y)
	c.StrokeLines(thresholdStyle, c.ClipLinesY([]vg.Point{{X: c.Min.X, Y: y}, {X: c.Max.X, Y: y}})...)
}

// DataRange implements plot.DataRanger: the threshold is always in view.
func (t *thresholdLine) DataRange() (xmin, xmax, ymin, ymax float64) {
	return math.Inf(1), math.Inf(-1), t.y, t.y
}

// Thumbnail implements plot.Thumbnailer for the legend.
func (t *thresholdLine) Thumbnail(c *draw.Canvas) {
	y := c.Center().Y
	c.StrokeLine2(thresholdStyle, c.Min.X, y, c.Max.X, y)
}

// AnswerText is the search's answer in one sentence.
func (r *CapacityResult) AnswerText() string {
	what := "largest"
	if !r.Largest {
		what = "smallest"
	}
	v := r.formatValue(r.Answer)
	switch {
	case !r.Found:
		return fmt.Sprintf("No value of %s passes every gate (%s).", r.Key, r.Note)
	case !r.Bracket:
		bound := "at least"
		if !r.Largest {
			bound = "at most"
		}
		return fmt.Sprintf("The %s passing %s is %s %s (%s).", what, r.Key, bound, v, r.Note)
	}
	if len(r.SeedAnswers) > 1 {
		return fmt.Sprintf("The %s %s at which every gate holds is %s on every one of %d seeds (%s fails on one); per seed: mean %s, 95%% CI [%s, %s] (%s).",
			what, r.Key, v, r.Seeds, r.formatValue(r.Failing), r.formatValue(r.AnswerMean),
			r.formatValue(r.AnswerCILow), r.formatValue(r.AnswerCIHigh), r.Note)
	}
	return fmt.Sprintf("The %s %s at which every gate holds on all %d seeds is %s; %s fails (%s).",
		what, r.Key, r.Seeds, v, r.formatValue(r.Failing), r.Note)
}

func (r *CapacityResult) formatValue(v float64) string {
	if math.IsNaN(v) {
		return "n/a"
	}
	if r.Integer {
		return reports.GroupDigits(int64(v))
	}
	return strconv.FormatFloat(v, 'g', 4, 64) + "/s"
}

// WriteCapacityMarkdown writes the answer and the table of probes.
func WriteCapacityMarkdown(w io.Writer, r *CapacityResult) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# Capacity: %s, varying %s\n\n", r.Drill, r.Key)
	fmt.Fprintf(&b, "**%s**\n\n", r.AnswerText())
	fmt.Fprintf(&b, "%s\n\n", r.howText())
	header, rows := r.capacityTable()
	b.WriteString("| " + strings.Join(header, " | ") + " |\n")
	b.WriteString("|" + strings.Repeat(" ---: |", len(header)-1) + " --- |\n")
	for _, row := range rows {
		for i := range row {
			row[i] = mdEscape(row[i])
		}
		b.WriteString("| " + strings.Join(row, " | ") + " |\n")
	}
	if z := r.zeroLine(); z != "" {
		b.WriteString("\n" + z + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// howText says what the search was given and how a probe reads.
func (r *CapacityResult) howText() string {
	how := "Each probe runs one seed."
	if r.Seeds > 1 {
		how = fmt.Sprintf("The search ran once for each of %d seeds; each probe below is one seed's. "+
			"95%% CI: confidence interval of the mean per-seed boundary, Student's t with n−1 degrees of freedom.", r.Seeds)
	}
	return fmt.Sprintf("The drill's own value: %s. Gates: %s. %s", r.formatValue(r.Baseline), "`"+strings.Join(r.Gates, "`, `")+"`", how)
}

// capacityTable is the probes' table: the value (the answer marked), seeds
// passed, each metric in one unit and precision per column, failed gates.
func (r *CapacityResult) capacityTable() (header []string, rows [][]string) {
	header = []string{r.Key, "seeds passed"}
	for _, m := range capacityMetrics {
		header = append(header, m.title)
	}
	header = append(header, "failed gates")
	formats := r.capacityFormats()
	for k := range r.Probes {
		p := &r.Probes[k]
		mark := ""
		if r.Found && p.Value == r.Answer {
			mark = " ◀"
		}
		failed := strings.Join(p.FailedGates, "; ")
		if p.Err != "" {
			first, _, _ := strings.Cut(p.Err, "\n")
			failed = strings.TrimPrefix(failed+"; run failed: "+first, "; ")
		}
		row := []string{r.formatValue(p.Value) + mark, fmt.Sprintf("%d/%d", p.Passed, p.Seeds)}
		for i, m := range capacityMetrics {
			cell := formats[i](m.get(p))
			if m.metric == "drain_time" && math.IsNaN(p.DrainTimeS) {
				cell = "not drained"
			}
			row = append(row, cell)
		}
		rows = append(rows, append(row, failed))
	}
	return header, rows
}

func roundTenth(v float64) float64 { return math.Round(v*10) / 10 }

// WriteCapacity writes report.md, report.html, summary.json and
// capacity.png/.svg into dir.
func WriteCapacity(dir string, r *CapacityResult) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var md bytes.Buffer
	if err := WriteCapacityMarkdown(&md, r); err != nil {
		return err
	}
	md.WriteString("\n![key metrics against " + r.Key + "](capacity.png)\n")
	if err := os.WriteFile(filepath.Join(dir, "report.md"), md.Bytes(), 0o644); err != nil {
		return err
	}
	type jsonProbe struct {
		Value         float64  `json:"value"`
		Seeds         int      `json:"seeds"`
		Passed        int      `json:"seeds_passed"`
		Pass          bool     `json:"pass"`
		Amplification *float64 `json:"amplification"`
		HealthyP99S   *float64 `json:"healthy_latency_p99_s"`
		DrainTimeS    *float64 `json:"drain_time_s"`
		DeadLettered  *float64 `json:"dead_lettered"`
		FailedGates   []string `json:"failed_gates"`
		Err           string   `json:"error,omitempty"`
	}
	out := struct {
		Drill   string   `json:"drill"`
		Key     string   `json:"key"`
		Search  string   `json:"search"`
		Found   bool     `json:"found"`
		Answer  *float64 `json:"answer"`
		Failing *float64 `json:"failing"`
		Note    string   `json:"note"`
		Seeds   int      `json:"seeds"`
		// Per-seed boundaries and their mean and 95% CI (several seeds).
		SeedAnswers []float64   `json:"seed_answers,omitempty"`
		Mean        *float64    `json:"answer_mean,omitempty"`
		CILow       *float64    `json:"answer_ci95_low,omitempty"`
		CIHigh      *float64    `json:"answer_ci95_high,omitempty"`
		Probes      []jsonProbe `json:"probes"`
	}{Drill: r.Drill, Key: r.Key, Search: map[bool]string{true: "largest", false: "smallest"}[r.Largest], Found: r.Found,
		Failing: nullable(r.Failing), Note: r.Note, Seeds: r.Seeds}
	if r.Found {
		out.Answer = nullable(r.Answer)
	}
	if len(r.SeedAnswers) > 1 {
		out.SeedAnswers = r.SeedAnswers
		out.Mean, out.CILow, out.CIHigh = nullable(r.AnswerMean), nullable(r.AnswerCILow), nullable(r.AnswerCIHigh)
	}
	for _, p := range r.Probes {
		out.Probes = append(out.Probes, jsonProbe{Value: p.Value, Seeds: p.Seeds, Passed: p.Passed, Pass: p.Pass,
			Amplification: nullable(p.Amplification), HealthyP99S: nullable(p.HealthyP99S), DrainTimeS: nullable(p.DrainTimeS),
			DeadLettered: nullable(p.DeadLettered), FailedGates: append([]string{}, p.FailedGates...), Err: p.Err})
	}
	js, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "summary.json"), append(js, '\n'), 0o644); err != nil {
		return err
	}
	var svg []byte
	for _, f := range []string{"png", "svg"} {
		data, err := renderPlotSize(func(c draw.Canvas) error { return drawCapacity(c, r) }, f, plotWidth, 2*plotHeight)
		if err != nil {
			return fmt.Errorf("capacity plot: %w", err)
		}
		if err := os.WriteFile(filepath.Join(dir, "capacity."+f), data, 0o644); err != nil {
			return err
		}
		svg = data
	}
	var page bytes.Buffer
	if err := writeCapacityHTML(&page, r, svg); err != nil {
		return fmt.Errorf("report.html: %w", err)
	}
	return os.WriteFile(filepath.Join(dir, "report.html"), page.Bytes(), 0o644)
}

// Probe colours from the sweep palette: bluish green passes, vermillion
// fails, black marks the boundary.
var (
	passColor = palette[2]
	failColor = palette[3]
	markColor = palette[7]
)

// logXFactor: a capacity plot's x axis turns logarithmic when the probes
// span this factor or more, as bracketing by factors of two makes them do;
// otherwise the probes near the boundary crowd into one corner.
const logXFactor = 8

// capacityPanel is one metric of the capacity plot.
type capacityPanel struct {
	title, metric string
	get           func(p *Probe) float64
}

// drawCapacityPanel draws one panel: the probes on pn's metric, passing
// green and failing orange, the gates on it and the answer; the first
// panel carries the title and legend, the last the x label.
func drawCapacityPanel(r *CapacityResult, pn capacityPanel, gates []reports.Gate, first, last bool) (*plot.Plot, error) {
	p := plot.New()
	render.UseSansFont(p)
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.TextStyle.Font.Size = vg.Points(8)
	p.Y.Label.Text = pn.title
	if first {
		p.Title.Text = fmt.Sprintf("%s: key metrics against %s", r.Drill, r.Key)
	}
	if last {
		p.X.Label.Text = r.Key
		if !r.Integer {
			p.X.Label.Text += " (/s)"
		}
	}
	p.Y.Tick.Marker = readableTicks{}
	p.Add(plotter.NewGrid())
	var pass, fail, all plotter.XYs
	for k := range r.Probes {
		pr := &r.Probes[k]
		y := pn.get(pr)
		if math.IsNaN(y) || math.IsInf(y, 0) {
			continue
		}
		pt := plotter.XY{X: pr.Value, Y: y}
		all = append(all, pt)
		if pr.Pass {
			pass = append(pass, pt)
		} else {
			fail = append(fail, pt)
		}
	}
	if len(all) > 1 {
		l, err := plotter.NewLine(all)
		if err != nil {
			return nil, err
		}
		l.Color = color.NRGBA{R: 0x80, G: 0x80, B: 0x80, A: 0xFF}
		p.Add(l)
	}
	for _, set := range []struct {
		xys plotter.XYs
		col color.Color
	}{{pass, passColor}, {fail, failColor}} {
		if len(set.xys) == 0 {
			continue
		}
		s, err := plotter.NewScatter(set.xys)
		if err != nil {
			return nil, err
		}
		s.Color = set.col
		s.Radius = vg.Points(3)
		p.Add(s)
		if first {
			label := "probe passes every gate"
			if set.col == failColor {
				label = "probe fails a gate"
			}
			p.Legend.Add(label, s)
		}
	}
	// Gate thresholds on this panel's metric; one far above the data
	// (a 30m latency SLO over second-scale latencies) is named in the
	// legend instead of flattening the data.
	dataMax := 0.0
	for _, pt := range all {
		dataMax = math.Max(dataMax, pt.Y)
	}
	for _, g := range gates {
		if g.Metric != pn.metric {
			continue
		}
		if g.Value > 3*math.Max(dataMax, 1e-9) {
			p.Legend.Add(fmt.Sprintf("gate %s: above the plot", g.Expr), &thresholdLine{})
			continue
		}
		tl := &thresholdLine{y: g.Value}
		p.Add(tl)
		p.Legend.Add("gate "+g.Expr, tl)
	}
	if r.Found {
		ymin, ymax := 0.0, 1.0
		for j, pt := range all {
			if j == 0 || pt.Y < ymin {
				ymin = pt.Y
			}
			if j == 0 || pt.Y > ymax {
				ymax = pt.Y
			}
		}
		line, err := plotter.NewLine(plotter.XYs{{X: r.Answer, Y: ymin}, {X: r.Answer, Y: ymax}})
		if err != nil {
			return nil, err
		}
		line.Color = markColor
		line.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		p.Add(line)
		if first {
			p.Legend.Add("answer: "+r.formatValue(r.Answer), line)
		}
	}
	return p, nil
}

// drawCapacity draws a panel per metric, stacked: amplification, healthy
// p99, drain time and dead letters against the parameter, leaving out a
// metric that is 0 on every probe (amplification always stays); passing
// probes green, failing orange, the boundary a dashed vertical line.
func drawCapacity(c draw.Canvas, r *CapacityResult) error {
	var panels []capacityPanel
	for _, m := range capacityMetrics {
		if !r.alwaysZero(m) || m.metric == "amplification" {
			panels = append(panels, capacityPanel{title: m.title + unitSuffix(m.metric), metric: m.metric, get: m.get})
		}
	}
	// The gates on a panel's metric, drawn as its thresholds.
	gates, _ := reports.ParseGates(r.Gates)
	rows := make([][]*plot.Plot, len(panels))
	for i, pn := range panels {
		p, err := drawCapacityPanel(r, pn, gates, i == 0, i == len(panels)-1)
		if err != nil {
			return err
		}
		rows[i] = []*plot.Plot{p}
	}
	// One column, a row per panel; x ranges shared so that the boundary
	// lines up.
	xmin, xmax := math.Inf(1), math.Inf(-1)
	for _, row := range rows {
		xmin, xmax = math.Min(xmin, row[0].X.Min), math.Max(xmax, row[0].X.Max)
	}
	logX := xmin > 0 && xmax/xmin >= logXFactor
	for _, row := range rows {
		row[0].X.Min, row[0].X.Max = xmin, xmax
		row[0].X.Tick.Marker = readableTicks{}
		if logX {
			row[0].X.Scale = plot.LogScale{}
			row[0].X.Tick.Marker = logTicks125{}
		}
	}
	tiles := draw.Tiles{Rows: len(rows), Cols: 1, PadX: vg.Millimeter, PadY: vg.Millimeter * 2, PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 4}
	canvases := plot.Align(rows, tiles, c)
	for i := range rows {
		rows[i][0].Draw(canvases[i][0])
	}
	return nil
}
