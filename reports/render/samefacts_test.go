package render

import (
	"bytes"
	"encoding/csv"
	"encoding/xml"
	"html"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stormdrill/stormdrill/reports"
	"github.com/stormdrill/stormdrill/reports/leakscan"
)

// marks are the pass/fail symbols, which the formats draw differently.
var marks = strings.NewReplacer("✅", "", "❌", "", "✓", "", "✗", "")

// mdText undoes Markdown's escapes, emphasis and code spans.
func mdText(s string) string {
	s = regexp.MustCompile(`\\(.)`).ReplaceAllString(s, "$1")
	s = strings.NewReplacer("**", "", "`", "").Replace(s)
	s = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`).ReplaceAllString(s, "$1")
	return strings.Join(strings.Fields(marks.Replace(s)), " ")
}

// mdFirstScreen is report.md from the verdict to the first section, one
// entry per line.
func mdFirstScreen(md string) []string {
	var out []string
	for i, line := range strings.Split(md, "\n") {
		if i > 0 && strings.HasPrefix(line, "## ") {
			break
		}
		if t := mdText(strings.TrimPrefix(line, "- ")); t != "" && !strings.HasPrefix(line, "# ") {
			out = append(out, t)
		}
	}
	return out
}

// htmlFirstScreen is report.html's <main> up to its first section, one
// entry per paragraph or list item.
func htmlFirstScreen(page string) []string {
	main := page[strings.Index(page, "<main>"):]
	if i := strings.Index(main, "<section"); i >= 0 {
		main = main[:i]
	}
	main = regexp.MustCompile(`(?s)<h1>.*?</h1>`).ReplaceAllString(main, "")
	var out []string
	for _, block := range regexp.MustCompile(`(?s)<(p|li)\b[^>]*>(.*?)</(p|li)>`).FindAllStringSubmatch(main, -1) {
		if t := strings.Join(strings.Fields(marks.Replace(leakscan.VisibleText(block[2]))), " "); t != "" {
			out = append(out, t)
		}
	}
	return out
}

// mdTable is the rows of the first table after heading, as cell text.
func mdTable(md, heading string) [][]string {
	i := strings.Index(md, "\n"+heading+"\n")
	if i < 0 {
		return nil
	}
	var rows [][]string
	started := false
	for _, line := range strings.Split(md[i+len(heading)+2:], "\n") {
		if !strings.HasPrefix(line, "|") {
			if started {
				break
			}
			continue
		}
		started = true
		cells := regexp.MustCompile(`(^|[^\\])\|`).Split(strings.Trim(line, "| "), -1)
		if strings.HasPrefix(strings.TrimSpace(cells[0]), "---") {
			continue
		}
		row := make([]string, len(cells))
		for k, c := range cells {
			row[k] = mdText(c)
		}
		rows = append(rows, row)
	}
	return rows
}

// htmlTable is the rows of the table with id, header included, as cell text.
func htmlTable(page, id string) [][]string {
	m := regexp.MustCompile(`(?s)<table id="` + id + `">(.*?)</table>`).FindStringSubmatch(page)
	if m == nil {
		return nil
	}
	var rows [][]string
	for _, tr := range regexp.MustCompile(`(?s)<tr>(.*?)</tr>`).FindAllStringSubmatch(m[1], -1) {
		var row []string
		for _, td := range regexp.MustCompile(`(?s)<t[dh][^>]*>(.*?)</t[dh]>`).FindAllStringSubmatch(tr[1], -1) {
			row = append(row, strings.Join(strings.Fields(marks.Replace(html.UnescapeString(leakscan.VisibleText(td[1])))), " "))
		}
		rows = append(rows, row)
	}
	return rows
}

// TestMarkdownAndHTMLSayTheSame renders every report variant in both
// formats and compares what each says on its first screen (verdict, run,
// failures, outages, the seeds note), in its gates table and in the
// external run's figures.
func TestMarkdownAndHTMLSayTheSame(t *testing.T) {
	for _, v := range reportVariants(t) {
		if v.run.Summary == nil {
			continue
		}
		out := renderedReports(t, v.run)
		md, page := out["report.md"], out["report.html"]
		mdFirst, htmlFirst := mdFirstScreen(md), htmlFirstScreen(page)
		if len(mdFirst) < 2 || !slices.Equal(mdFirst, htmlFirst) {
			t.Errorf("%s: the first screens differ\nMarkdown: %q\nHTML:     %q", v.name, mdFirst, htmlFirst)
		}
		mdExt, htmlExt := mdTable(md, "## Seen from the partners (external run)"), htmlTable(page, "external-table")
		if (v.run.Summary.External != nil) != (len(mdExt) > 1) || !slices.EqualFunc(mdExt, htmlExt, slices.Equal) {
			t.Errorf("%s: the external figures differ\nMarkdown: %q\nHTML:     %q", v.name, mdExt, htmlExt)
		}
		mdGates, htmlGates := mdTable(md, "## Gates"), htmlTable(page, "gates")
		if len(mdGates) != len(v.run.Summary.Gates)+1 || !slices.EqualFunc(mdGates, htmlGates, slices.Equal) {
			t.Errorf("%s: the gates tables differ\nMarkdown: %q\nHTML:     %q", v.name, mdGates, htmlGates)
		}
	}
}

// failedGatesOf is the gates a rendered gates table marks as failed.
func failedGatesOf(rows [][]string) []string {
	var out []string
	for _, r := range rows[min(1, len(rows)):] {
		if len(r) > 1 && strings.Contains(r[len(r)-1], "FAIL") {
			out = append(out, r[0])
		}
	}
	return out
}

// TestEveryWriterSaysTheSameVerdict renders every report variant with
// every writer that states a verdict (report.md, report.html, junit.xml,
// the terminal) and compares the verdict line and which gates failed.
func TestEveryWriterSaysTheSameVerdict(t *testing.T) {
	for _, v := range reportVariants(t) {
		s := v.run.Summary
		if s == nil {
			continue
		}
		out := renderedReports(t, v.run)
		verdict := reports.VerdictText(s)
		mdVerdict := regexp.MustCompile(`(?m)^\*\*(.*?)\*\* ·`).FindStringSubmatch(out["report.md"])
		htmlVerdict := regexp.MustCompile(`<span class="verdict [a-z]+">(.*?)</span>`).FindStringSubmatch(out["report.html"])
		termVerdict := strings.SplitN(strings.SplitN(out["terminal"], "\n", 2)[0], ": ", 2)
		switch {
		case mdVerdict == nil || mdText(mdVerdict[1]) != verdict:
			t.Errorf("%s: report.md's verdict %q, want %q", v.name, mdVerdict, verdict)
		case htmlVerdict == nil || html.UnescapeString(htmlVerdict[1]) != verdict:
			t.Errorf("%s: report.html's verdict %q, want %q", v.name, htmlVerdict, verdict)
		case len(termVerdict) != 2 || termVerdict[1] != verdict:
			t.Errorf("%s: the terminal's verdict %q, want %q", v.name, termVerdict, verdict)
		}

		want := failedGatesOf(mdTable(out["report.md"], "## Gates"))
		if got := failedGatesOf(htmlTable(out["report.html"], "gates")); !slices.Equal(got, want) {
			t.Errorf("%s: report.html fails gates %q, report.md %q", v.name, got, want)
		}
		var junit struct {
			Cases []struct {
				Name    string    `xml:"name,attr"`
				Failure *struct{} `xml:"failure"`
			} `xml:"testsuite>testcase"`
		}
		if err := xml.Unmarshal(render(t, func(b *bytes.Buffer) error { return WriteJUnit(b, s) }), &junit); err != nil {
			t.Fatal(err)
		}
		var junitFailed []string
		for _, c := range junit.Cases {
			if c.Failure != nil && slices.ContainsFunc(s.Gates, func(g reports.GateResult) bool { return g.Expr == c.Name }) {
				junitFailed = append(junitFailed, c.Name)
			}
		}
		if !slices.Equal(junitFailed, want) {
			t.Errorf("%s: junit.xml fails gates %q, report.md %q", v.name, junitFailed, want)
		}
		var termFailed []string
		for _, line := range strings.Split(out["terminal"], "\n") {
			for _, g := range s.Gates {
				if strings.HasPrefix(line, "  ✗ "+g.Expr+" ") {
					termFailed = append(termFailed, g.Expr)
				}
			}
		}
		if !slices.Equal(termFailed, want) {
			t.Errorf("%s: the terminal fails gates %q, report.md %q", v.name, termFailed, want)
		}
	}
}

// mdFindings is report.md's findings list, one entry per finding (its
// detail lines left out).
func mdFindings(md string) []string {
	i := strings.Index(md, "\n## Findings\n")
	if i < 0 {
		return nil
	}
	var out []string
	for _, line := range strings.Split(md[i+len("\n## Findings\n"):], "\n") {
		if line == "" && len(out) > 0 {
			break // the list ends; the failures follow
		}
		if strings.HasPrefix(line, "- ") {
			out = append(out, mdText(strings.TrimPrefix(strings.TrimPrefix(line, "- "), "⚠️ ")))
		}
	}
	return out
}

// TestJUnitSaysWhatTheReportSays renders every report variant as
// junit.xml and report.md and compares them: the same gates in the same
// order, failed alike; a case per finding, failed unless expected, saying
// what report.md's findings list says; and a failure in junit.xml exactly
// when the verdict is FAIL.
func TestJUnitSaysWhatTheReportSays(t *testing.T) {
	findings := 0
	for _, v := range reportVariants(t) {
		s := v.run.Summary
		if s == nil {
			continue
		}
		md := renderedReports(t, v.run)["report.md"]
		var junit struct {
			Failures int `xml:"failures,attr"`
			Cases    []struct {
				Name      string    `xml:"name,attr"`
				Classname string    `xml:"classname,attr"`
				SystemOut string    `xml:"system-out"`
				Failure   *struct{} `xml:"failure"`
			} `xml:"testsuite>testcase"`
		}
		if err := xml.Unmarshal(render(t, func(b *bytes.Buffer) error { return WriteJUnit(b, s) }), &junit); err != nil {
			t.Fatal(err)
		}
		var gates, failed, findingText []string
		var findingFailed []bool
		for _, c := range junit.Cases {
			switch c.Classname {
			case "stormdrill." + s.Drill:
				if c.Name == "accounting identity" {
					continue
				}
				gates = append(gates, c.Name)
				if c.Failure != nil {
					failed = append(failed, c.Name)
				}
			case "stormdrill." + s.Drill + ".findings":
				findingText = append(findingText, strings.SplitN(c.SystemOut, "\n", 2)[0])
				findingFailed = append(findingFailed, c.Failure != nil)
			}
		}
		mdGates := mdTable(md, "## Gates")
		var want []string
		for _, r := range mdGates[min(1, len(mdGates)):] {
			want = append(want, r[0])
		}
		if len(want) == 0 || !slices.Equal(gates, want) {
			t.Errorf("%s: junit.xml has gates %q, report.md %q", v.name, gates, want)
		}
		if want := failedGatesOf(mdGates); !slices.Equal(failed, want) {
			t.Errorf("%s: junit.xml fails gates %q, report.md %q", v.name, failed, want)
		}
		if want := mdFindings(md); len(want) != len(s.Findings) || !slices.Equal(findingText, want) {
			t.Errorf("%s: junit.xml's findings %q, report.md's %q", v.name, findingText, want)
		}
		for i, f := range s.Findings {
			if i < len(findingFailed) && findingFailed[i] == f.Expected {
				t.Errorf("%s: junit.xml's finding %s failed %v, want %v (expected by the drill: %v)", v.name, f.Kind, findingFailed[i], !f.Expected, f.Expected)
			}
		}
		findings += len(s.Findings)
		if (junit.Failures > 0) != strings.HasPrefix(reports.VerdictText(s), "FAIL") {
			t.Errorf("%s: junit.xml has %d failures, the verdict is %q", v.name, junit.Failures, reports.VerdictText(s))
		}
	}
	if findings == 0 {
		t.Error("no variant has a finding: the findings went unchecked")
	}
}

// TestCSVHasTheChartsColumns renders timeseries.csv and report.html's
// charts of every report variant (and of a run with cohorts, drawn
// without downsampling) and checks that each chart drawn from the
// computed columns draws what the CSV holds: the dead letters by reason
// (the running sum of dlq_<reason>_per_s × the interval), each breaker,
// each cohort's amplification and the faulty cohorts' first attempts and
// retries per second.
func TestCSVHasTheChartsColumns(t *testing.T) {
	runs := reportVariants(t)
	runs = append(runs, reportVariant{"cohorts", syntheticRun(400, []string{"acme", "globex"})})
	checked := map[string]int{}
	for _, v := range runs {
		ts := v.run.Timeseries
		if ts == nil || len(ts.Samples) > MaxPlotPoints {
			continue
		}
		rows, err := csv.NewReader(bytes.NewReader(render(t, func(b *bytes.Buffer) error { return WriteTimeseriesCSV(b, ts) }))).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		// column is a CSV column's values by header; an empty cell is NaN.
		column := func(header string) []float64 {
			k := slices.Index(rows[0], header)
			if k < 0 {
				return nil
			}
			var vs []float64
			for _, r := range rows[1:] {
				f, err := strconv.ParseFloat(r[k], 64)
				if r[k] == "" {
					f, err = math.NaN(), nil
				}
				if err != nil {
					t.Fatalf("%s: %s: %v", v.name, header, err)
				}
				vs = append(vs, f)
			}
			return vs
		}
		same := func(what string, got []chartValue, want []float64) {
			if len(got) != len(want) {
				t.Errorf("%s: %s: the chart has %d values, the CSV %d", v.name, what, len(got), len(want))
				return
			}
			for i := range want {
				g, w := float64(got[i]), want[i]
				if math.IsNaN(g) != math.IsNaN(w) || math.Abs(g-w) > 1e-5*float64(i+1) {
					t.Errorf("%s: %s at row %d: the chart draws %v, the CSV says %v", v.name, what, i+1, g, w)
					return
				}
			}
		}
		for _, c := range interactiveCharts(v.run) {
			for _, sr := range c.Series {
				name := columnName(strings.TrimSuffix(sr.Label, " (faulty)"))
				switch c.ID {
				case "chart-dead-letters":
					var want []float64
					sum, prevT := 0.0, 0.0
					for i, r := range column("dlq_" + name + "_per_s") {
						interval := ts.IntervalS
						if interval <= 0 {
							interval = ts.Samples[i].T - prevT
						}
						prevT = ts.Samples[i].T
						if !math.IsNaN(r) {
							sum += r * interval
						}
						want = append(want, sum)
					}
					same(sr.Label+" dead letters", sr.Values, want)
				case "chart-breaker":
					states := column("breaker_" + name)
					for i, s := range states {
						if math.IsNaN(s) {
							states[i] = 0 // a sample without the state reads closed
						}
					}
					same(sr.Label+" breaker", sr.Values, states)
				case "chart-faulty-attempts":
					header := "first_attempts_per_s_" + columnName(strings.TrimSuffix(sr.Label, " first attempts/s"))
					if strings.HasSuffix(sr.Label, " retries/s") {
						header = "retries_per_s_" + columnName(strings.TrimSuffix(sr.Label, " retries/s"))
					}
					same(sr.Label, sr.Values, column(header))
				case "chart-amplification":
					if sr.Label == "pipeline, per interval" {
						continue
					}
					same(sr.Label+" amplification", sr.Values, column("amplification_"+name))
				default:
					continue
				}
				checked[c.ID]++
			}
		}
		// Every reason with a dead letter in the CSV is on the chart.
		for _, h := range rows[0] {
			reason, ok := strings.CutPrefix(h, "dlq_")
			if !ok || h == "dlq_per_s" || !slices.ContainsFunc(column(h), func(f float64) bool { return f > 0 }) {
				continue
			}
			if !slices.ContainsFunc(interactiveCharts(v.run), func(c chartSpec) bool {
				return c.ID == "chart-dead-letters" && slices.ContainsFunc(c.Series, func(s chartSeries) bool {
					return "dlq_"+columnName(s.Label)+"_per_s" == h
				})
			}) {
				t.Errorf("%s: timeseries.csv has dead letters in %s (reason %s), the chart does not draw them", v.name, h, strings.TrimSuffix(reason, "_per_s"))
			}
		}
	}
	for _, id := range []string{"chart-dead-letters", "chart-breaker", "chart-faulty-attempts", "chart-amplification"} {
		if checked[id] == 0 {
			t.Errorf("no run drew %s: its columns went unchecked", id)
		}
	}
}
