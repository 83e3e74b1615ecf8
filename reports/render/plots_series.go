package render

import (
	"math"
	"strconv"

	"github.com/stormdrill/stormdrill/reports"
	"gonum.org/v1/plot/plotter"
)

// This file turns the run's data into plotter points, separately from
// drawing, so the numbers that end up in a plot can be tested directly.

// timeAxis is the unit of a plot's time axis.
type timeAxis struct {
	divS  float64 // seconds per unit
	label string
}

// minutesAfterS is the drill length beyond which time axes are in minutes:
// a few thousand seconds read worse than a few dozen minutes.
const minutesAfterS = 600

// chooseTimeAxis picks seconds or minutes for a drill that spans spanS.
func chooseTimeAxis(spanS float64) timeAxis {
	if spanS > minutesAfterS {
		return timeAxis{divS: 60, label: "drill time (min)"}
	}
	return timeAxis{divS: 1, label: "drill time (s)"}
}

// durationAxis is the unit of a plot's duration axis (ages, latencies).
type durationAxis struct {
	divS float64
	unit string // "s" or "min"
}

// chooseDurationAxis picks seconds or minutes for durations up to maxS.
func chooseDurationAxis(maxS float64) durationAxis {
	if maxS > minutesAfterS {
		return durationAxis{divS: 60, unit: "min"}
	}
	return durationAxis{divS: 1, unit: "s"}
}

// plotFinite maps NaN and ±Inf to 0: gonum refuses them, and a sample that
// could not be measured is better drawn as nothing than not drawn at all.
func plotFinite(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	return v
}

// sampleSeries evaluates each column over the samples and hands them to
// columnSeries.
func sampleSeries(samples []reports.Sample, xDivS float64, maxPoints int, cols ...func(*reports.Sample) float64) []plotter.XYs {
	values := make([][]float64, len(cols))
	for c, col := range cols {
		vs := make([]float64, len(samples))
		for i := range samples {
			vs[i] = col(&samples[i])
		}
		values[c] = vs
	}
	return columnSeries(samples, xDivS, maxPoints, values)
}

// columnSeries downsamples the columns (values[c][i] belongs to samples[i])
// with shared indices, so stacked series stay aligned and every column's
// peaks survive, and returns one XYs per column with x in the time axis'
// unit.
func columnSeries(samples []reports.Sample, xDivS float64, maxPoints int, values [][]float64) []plotter.XYs {
	n := len(samples)
	for _, vs := range values {
		for i := range vs {
			vs[i] = plotFinite(vs[i])
		}
		n = min(n, len(vs))
	}
	idx := downsampleIndices(n, values, maxPoints)
	out := make([]plotter.XYs, len(values))
	for c := range values {
		xys := make(plotter.XYs, len(idx))
		for k, i := range idx {
			xys[k] = plotter.XY{X: plotFinite(samples[i].T) / xDivS, Y: values[c][i]}
		}
		out[c] = xys
	}
	return out
}

// columnSeriesGaps is columnSeries for columns that may hold NaN for "no
// value in this interval": the downsampling sees them as 0, and the points
// are left out, so the line joins the intervals that have a value.
func columnSeriesGaps(samples []reports.Sample, xDivS float64, maxPoints int, values [][]float64) []plotter.XYs {
	finite := make([][]float64, len(values))
	for c, vs := range values {
		finite[c] = make([]float64, len(vs))
		for i, v := range vs {
			finite[c][i] = plotFinite(v)
		}
	}
	n := len(samples)
	for _, vs := range values {
		n = min(n, len(vs))
	}
	idx := downsampleIndices(n, finite, maxPoints)
	out := make([]plotter.XYs, len(values))
	for c := range values {
		xys := make(plotter.XYs, 0, len(idx))
		for _, i := range idx {
			if v := values[c][i]; !math.IsNaN(v) && !math.IsInf(v, 0) {
				xys = append(xys, plotter.XY{X: plotFinite(samples[i].T) / xDivS, Y: v})
			}
		}
		out[c] = xys
	}
	return out
}

// attemptsSeries is the attempts plot's data: first attempts per second (the
// bottom band), first attempts plus retries per second (the top of the
// stacked retries band) and successes per second. Negative rates, which a
// recorder should never produce, are clamped to 0 so the bands never cross.
func attemptsSeries(samples []reports.Sample, xDivS float64, maxPoints int) (first, top, successes plotter.XYs) {
	s := sampleSeries(samples, xDivS, maxPoints,
		func(s *reports.Sample) float64 { return math.Max(0, plotFinite(s.FirstAttemptsPerS)) },
		func(s *reports.Sample) float64 {
			return math.Max(0, plotFinite(s.FirstAttemptsPerS)) + math.Max(0, plotFinite(s.RetriesPerS))
		},
		func(s *reports.Sample) float64 { return s.SuccessesPerS },
	)
	return s[0], s[1], s[2]
}

// bandPolygon is the closed outline between bottom and top, which share
// their x values: along the bottom forwards and back along the top.
func bandPolygon(bottom, top plotter.XYs) plotter.XYs {
	n := min(len(bottom), len(top))
	poly := make(plotter.XYs, 0, 2*n)
	poly = append(poly, bottom[:n]...)
	for i := n - 1; i >= 0; i-- {
		poly = append(poly, top[i])
	}
	return poly
}

// zeroLike is xys with every y set to 0: the bottom of the lowest band.
func zeroLike(xys plotter.XYs) plotter.XYs {
	z := make(plotter.XYs, len(xys))
	for i, p := range xys {
		z[i] = plotter.XY{X: p.X}
	}
	return z
}

// deadLetterSeries is deadLetterColumns as plot points: for each reason
// that has any dead letter, the cumulative number of dead letters with
// that reason over time.
func deadLetterSeries(samples []reports.Sample, series []seriesColumn, xDivS float64, maxPoints int) (reasons []string, out []plotter.XYs) {
	reasons, values := deadLetterColumns(series)
	if len(values) == 0 {
		return nil, nil
	}
	return reasons, columnSeries(samples, xDivS, maxPoints, values)
}

// maxBreakerLines bounds the breaker plot's lines: beyond a handful of
// partners the lines and the legend are unreadable.
const maxBreakerLines = 8

// breakerSeries is, for each of the first maxBreakerLines breaker partners,
// its state (0 closed, 1 half-open, 2 open) over time as the points where it
// changes, plus the first and last samples: drawn as a post-step line that
// is the exact state history at the sampling resolution, and usually far
// fewer points than samples. A partner that flaps more often than maxPoints
// allows falls back to min/max downsampling.
func breakerSeries(samples []reports.Sample, series []seriesColumn, xDivS float64, maxPoints int) (partners []string, out []plotter.XYs) {
	partners, cols := breakerColumns(series)
	for _, states := range cols {
		var xys plotter.XYs
		for i, st := range states {
			if i == 0 || i == len(states)-1 || st != states[i-1] {
				xys = append(xys, plotter.XY{X: plotFinite(samples[i].T) / xDivS, Y: st})
			}
		}
		if len(xys) > maxPoints {
			xys = columnSeries(samples, xDivS, maxPoints, [][]float64{states})[0]
		}
		out = append(out, xys)
	}
	return partners, out
}

// cdfFloorS is where the latency CDF's log axis starts: zero latencies (a
// simulated partner may answer instantly) are drawn here, since a log scale
// has no 0.
const cdfFloorS = 1e-3

// cdfSeries is a latency CDF as points (seconds, fraction) for a post-step
// line, with latencies clamped to at least cdfFloorS, fractions to [0, 1],
// non-finite points dropped, a starting point at fraction 0 and at most
// maxPoints points.
func cdfSeries(points []reports.CDFPoint, maxPoints int) plotter.XYs {
	xs := make([]float64, 0, len(points))
	ps := make([]float64, 0, len(points))
	for _, pt := range points {
		if math.IsNaN(pt.X) || math.IsInf(pt.X, 0) || math.IsNaN(pt.P) || math.IsInf(pt.P, 0) {
			continue
		}
		xs = append(xs, math.Max(pt.X, cdfFloorS))
		ps = append(ps, math.Min(1, math.Max(0, pt.P)))
	}
	// The curve rises from 0 at the first latency, as an empirical CDF
	// does; without it a one-point CDF (a constant latency) draws nothing.
	if len(ps) > 0 && ps[0] > 0 {
		xs = append([]float64{xs[0]}, xs...)
		ps = append([]float64{0}, ps...)
	}
	xs, ps = Downsample(xs, ps, maxPoints)
	xys := make(plotter.XYs, len(xs))
	for i := range xs {
		xys[i] = plotter.XY{X: xs[i], Y: ps[i]}
	}
	return xys
}

// maxOrdinalBars bounds the ordinal bar chart; later ordinals are summed
// into the last bar.
const maxOrdinalBars = 30

// ordinalBars is the attempts-by-ordinal bar chart's labels ("1", "2", …)
// and heights. Trailing zero ordinals are dropped; nothing is returned when
// there are no attempts.
func ordinalBars(byOrdinal []int64) (labels []string, heights plotter.Values) {
	last := -1
	for i, v := range byOrdinal {
		if v > 0 {
			last = i
		}
	}
	for i := 0; i <= last; i++ {
		v := float64(max(0, byOrdinal[i]))
		if i == maxOrdinalBars-1 && last > i {
			for _, w := range byOrdinal[i+1 : last+1] {
				v += float64(max(0, w))
			}
			labels = append(labels, strconv.Itoa(i+1)+"+")
			heights = append(heights, v)
			break
		}
		labels = append(labels, strconv.Itoa(i+1))
		heights = append(heights, v)
	}
	return labels, heights
}
