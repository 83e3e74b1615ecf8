package experiments

import (
	"math"
	"strconv"

	"gonum.org/v1/plot"
)

// maxTickDecimals bounds the decimals readableTicks tries.
const maxTickDecimals = 9

// readableTicks places ticks where plot.DefaultTicks does but labels them
// with the fewest decimals that tell them apart and read back as the tick
// (gonum's own labels print 1.005 and 1.01 both as "1.01", and 2250 as
// "2250.00").
type readableTicks struct{}

func (readableTicks) Ticks(lo, hi float64) []plot.Tick {
	ticks := plot.DefaultTicks{}.Ticks(lo, hi)
	relabel(ticks)
	return ticks
}

// relabel rewrites the labels of the labelled (major) ticks in place.
func relabel(ticks []plot.Tick) {
	var major []int
	for i, t := range ticks {
		if t.Label != "" {
			major = append(major, i)
		}
	}
	if len(major) == 0 {
		return
	}
	// Half the smallest gap between labelled ticks: a label within it of its
	// tick cannot be mistaken for a neighbour.
	gap := math.Inf(1)
	for k := 1; k < len(major); k++ {
		gap = math.Min(gap, math.Abs(ticks[major[k]].Value-ticks[major[k-1]].Value))
	}
	tol := gap / 100
	if math.IsInf(tol, 1) || tol == 0 {
		tol = math.Abs(ticks[major[0]].Value) * 1e-9
	}
	for d := 0; d <= maxTickDecimals; d++ {
		labels := make([]string, len(major))
		ok := true
		for k, i := range major {
			v := ticks[i].Value
			labels[k] = strconv.FormatFloat(v, 'f', d, 64)
			back, _ := strconv.ParseFloat(labels[k], 64)
			if math.Abs(back-v) > tol || k > 0 && labels[k] == labels[k-1] {
				ok = false
				break
			}
		}
		if ok || d == maxTickDecimals {
			for k, i := range major {
				if labels[k] == "-0" {
					labels[k] = "0"
				}
				ticks[i].Label = labels[k]
			}
			return
		}
	}
}

// logTicks125 is a log axis ticker with labels at 1, 2 and 5 × 10^k, for
// searches that bracket by factors of two.
type logTicks125 struct{}

func (logTicks125) Ticks(lo, hi float64) []plot.Tick {
	if !(lo > 0 && hi > lo) {
		return readableTicks{}.Ticks(lo, hi)
	}
	var ticks []plot.Tick
	for e := math.Floor(math.Log10(lo)); e <= math.Ceil(math.Log10(hi)) && len(ticks) < 60; e++ {
		p := math.Pow(10, e)
		for _, m := range []float64{1, 2, 5} {
			if v := m * p; v >= lo*(1-1e-9) && v <= hi*(1+1e-9) {
				ticks = append(ticks, plot.Tick{Value: v, Label: "x"})
			}
		}
	}
	if len(ticks) < 2 {
		return readableTicks{}.Ticks(lo, hi)
	}
	relabel(ticks)
	return ticks
}
