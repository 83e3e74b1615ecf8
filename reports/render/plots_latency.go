package render

import (
	"math"
	"strconv"

	"github.com/stormdrill/stormdrill/reports"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
)

// healthyPercentilesPlot is the healthy-subscriber latency p50 and p99 of
// each interval, with the SLO; nil when the series carry no percentiles.
func healthyPercentilesPlot(in plotInput, title string) (*plot.Plot, error) {
	p50 := make([]float64, len(in.ts.Samples))
	p99 := make([]float64, len(in.ts.Samples))
	maxS := 0.0
	for i := range in.ts.Samples {
		p50[i], p99[i] = plotFinite(in.ts.Samples[i].HealthyLatencyP50S), plotFinite(in.ts.Samples[i].HealthyLatencyP99S)
		maxS = math.Max(maxS, p99[i])
	}
	if !anyNonZeroCols([][]float64{p50, p99}) {
		return nil, nil
	}
	unit := chooseDurationAxis(maxS)
	for i := range p50 {
		p50[i] /= unit.divS
		p99[i] /= unit.divS
	}
	series := columnSeries(in.ts.Samples, in.time.divS, MaxPlotPoints, [][]float64{p50, p99})
	p := newTimePlot(in, title, "latency ("+unit.unit+")")
	if _, err := addLine(p, "p50", series[0], plotPalette[0]); err != nil {
		return nil, err
	}
	if _, err := addLine(p, "p99", series[1], plotPalette[3]); err != nil {
		return nil, err
	}
	addSLO(p, false, plotFinite(in.summary.SLOS), maxS, unit.divS)
	finishTimeAxes(p, in)
	return p, nil
}

// sloReach is how far beyond the data an SLO line may stretch an axis: a
// 30m line over second-scale latencies would flatten them to nothing.
const sloReach = 3

// addSLO draws the SLO (seconds) as a dashed line when it is within
// sloReach of the data's largest value (seconds); beyond that the axis
// stays fitted to the data and the legend says where the SLO is.
func addSLO(p *plot.Plot, vertical bool, slo, dataMax, divS float64) {
	if slo <= 0 {
		return
	}
	l := newSLOLine(vertical, slo/divS)
	if slo <= sloReach*dataMax {
		p.Add(l)
		p.Legend.Add("SLO "+legendSeconds(slo), l)
		return
	}
	p.Legend.Add("SLO "+legendSeconds(slo)+": beyond this scale", l)
}

func healthyLatencyPlot(in plotInput, title string) (*plot.Plot, error) {
	curves := []struct {
		label  string
		points []reports.CDFPoint
	}{
		{"whole drill", in.run.HealthyCDF},
		{"created during outages", in.run.HealthyOutageCDF},
	}
	p := newPlot(title, "latency (s, log scale)", "fraction of deliveries")
	lo, hi := math.Inf(1), math.Inf(-1)
	drawn := 0
	for i, c := range curves {
		xys := cdfSeries(c.points, MaxPlotPoints)
		if len(xys) == 0 {
			continue // nothing measured for this curve
		}
		l, err := addLine(p, c.label, xys, paletteColor(i))
		if err != nil {
			return nil, err
		}
		l.StepStyle = plotter.PostStep
		for _, pt := range xys {
			lo, hi = math.Min(lo, pt.X), math.Max(hi, pt.X)
		}
		drawn++
	}
	if drawn == 0 {
		return nil, nil
	}
	if slo := plotFinite(in.summary.SLOS); slo > 0 {
		slo = math.Max(slo, cdfFloorS)
		addSLO(p, true, slo, hi, 1)
		if slo <= sloReach*hi {
			hi = math.Max(hi, slo)
		}
	}
	// The axis starts at a whole decade and ends a little past the data
	// (or the SLO), never a zero or empty range: a log axis cannot show 0.
	p.X.Min = math.Pow(10, math.Floor(math.Log10(lo)))
	p.X.Max = hi * 1.25
	if p.X.Max <= p.X.Min {
		p.X.Max = p.X.Min * 10
	}
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = decadeTicks{}
	p.Y.Min, p.Y.Max = 0, 1
	return p, nil
}

// decadeTicks labels every power of ten of a log axis, with unlabelled
// minor ticks at 2–9 times each.
type decadeTicks struct{}

// Ticks implements plot.Ticker.
func (decadeTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(lo > 0) || !(hi > lo) || math.IsInf(hi, 0) {
		return nil
	}
	var ticks []plot.Tick
	for e := math.Floor(math.Log10(lo)); e <= math.Ceil(math.Log10(hi)) && len(ticks) < 200; e++ {
		decade := math.Pow(10, e)
		for m := 1; m <= 9; m++ {
			v := decade * float64(m)
			if v < lo*(1-1e-9) || v > hi*(1+1e-9) {
				continue
			}
			t := plot.Tick{Value: v}
			if m == 1 {
				t.Label = strconv.FormatFloat(v, 'g', -1, 64)
			}
			ticks = append(ticks, t)
		}
	}
	return ticks
}
