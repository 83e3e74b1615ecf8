package render

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/montanaflynn/stats"
	"github.com/stormdrill/stormdrill/reports"
)

// seedFigureView is one row of the "Across seeds" table.
func seedFigureView(f reports.FigureStats) seedFigureRow {
	kind, _ := reports.MetricKind(f.Metric)
	row := seedFigureRow{Metric: f.Metric, Mean: reports.FormatValue(kind, f.Mean), N: strconv.Itoa(f.N)}
	if f.NotApplicable > 0 {
		row.N += fmt.Sprintf(" (%d %s)", f.NotApplicable, notApplicableWord(f.Metric))
	}
	row.CI = "—"
	if f.N >= 2 {
		row.CI = "[" + reports.FormatValue(kind, f.CILow) + ", " + reports.FormatValue(kind, f.CIHigh) + "]"
	}
	lo, _ := stats.Min(f.Values)
	hi, _ := stats.Max(f.Values)
	row.Range = reports.FormatValue(kind, lo) + " – " + reports.FormatValue(kind, hi)
	return row
}

// notApplicableWord says briefly why seeds lack a figure.
func notApplicableWord(metric string) string {
	if metric == "drain_time" {
		return "not drained"
	}
	return "n/a"
}

// seedGateRow is one gate of a multi-seed run as the reports show it: on
// how many seeds it held and its figure's range across them. A figure no
// seed could measure is "unknown"; seeds that could not say why.
func seedGateRow(s *reports.Summary, g reports.GateSpread) gateRow {
	row := gateRow{Expr: reports.OneLine(g.Expr), Pass: g.Held == g.Seeds && g.Seeds > 0,
		HeldOn: fmt.Sprintf("%d of %d seeds", g.Held, g.Seeds)}
	kind := reports.Ratio
	metric := ""
	if pg, err := reports.ParseGate(g.Expr); err == nil {
		kind, metric = pg.Kind, pg.Metric
	}
	if g.Measured < g.Seeds {
		why := "unknown"
		if metric != "" {
			why = notApplicableWord(metric)
		}
		row.HeldOn += fmt.Sprintf(" (%d %s)", g.Seeds-g.Measured, why)
	}
	row.Min, row.Mean, row.Max = "unknown", "unknown", "unknown"
	if g.Min != nil && g.Mean != nil && g.Max != nil {
		row.Min, row.Mean, row.Max = reports.FormatValue(kind, *g.Min), reports.FormatValue(kind, *g.Mean), reports.FormatValue(kind, *g.Max)
	}
	return row
}

// seedRangeText names the seeds of a multi-seed run: "7–11" when they
// follow each other, else the list (bounded).
func seedRangeText(st *reports.SeedStats) string {
	if st == nil || len(st.Runs) == 0 {
		return ""
	}
	consecutive := true
	for i := 1; i < len(st.Runs); i++ {
		if st.Runs[i].Seed != st.Runs[i-1].Seed+1 {
			consecutive = false
			break
		}
	}
	first, last := st.Runs[0].Seed, st.Runs[len(st.Runs)-1].Seed
	if consecutive {
		return strconv.FormatUint(first, 10) + "–" + strconv.FormatUint(last, 10)
	}
	var seeds []string
	for _, r := range st.Runs {
		seeds = append(seeds, strconv.FormatUint(r.Seed, 10))
	}
	return reports.OneLine(strings.Join(seeds, ", "))
}
