package render

import "math"

// MaxPlotPoints bounds the number of points drawn for one series, so a long
// drill does not make huge plot files.
const MaxPlotPoints = 1000

// Downsample reduces the series (xs[i], ys[i]) to at most max points while
// keeping its peaks: the first and last points are kept, and the interior is
// split into buckets of consecutive points of which each keeps its minimum
// and its maximum, in time order. The global minimum and maximum therefore
// survive. A series that already fits is returned as a copy. Extra elements
// of the longer slice are ignored. With max < 2 the first point (max == 1) or
// nothing (max <= 0) is returned.
func Downsample(xs, ys []float64, max int) (x, y []float64) {
	n := min(len(xs), len(ys))
	idx := downsampleIndices(n, [][]float64{ys[:n]}, max)
	x = make([]float64, len(idx))
	y = make([]float64, len(idx))
	for i, j := range idx {
		x[i], y[i] = xs[j], ys[j]
	}
	return x, y
}

// downsampleIndices picks, in increasing order, at most max indices of n
// points that share their x values across several series, keeping each
// series' minimum and maximum in every bucket. Sharing the indices keeps
// stacked series aligned (a band's bottom and top have the same x values),
// which separate downsampling would not.
func downsampleIndices(n int, series [][]float64, max int) []int {
	if n <= 0 || max <= 0 {
		return nil
	}
	if n <= max {
		idx := make([]int, n)
		for i := range idx {
			idx[i] = i
		}
		return idx
	}
	if max == 1 {
		return []int{0}
	}
	perBucket := 2 * len(series)
	if perBucket == 0 {
		perBucket = 2
	}
	buckets := (max - 2) / perBucket
	idx := make([]int, 0, max)
	idx = append(idx, 0)
	interior := n - 2
	picked := make([]int, 0, perBucket)
	for b := range buckets {
		lo := 1 + b*interior/buckets
		hi := 1 + (b+1)*interior/buckets
		if lo >= hi {
			continue
		}
		picked = picked[:0]
		for _, ys := range series {
			minAt, maxAt := extremes(ys, lo, hi)
			picked = appendUnique(picked, minAt)
			picked = appendUnique(picked, maxAt)
		}
		sortSmall(picked)
		idx = append(idx, picked...)
	}
	return append(idx, n-1)
}

// extremes returns the indices of the minimum and maximum of ys[lo:hi],
// ignoring NaN; a bucket of NaN only yields lo for both.
func extremes(ys []float64, lo, hi int) (minAt, maxAt int) {
	minAt, maxAt = -1, -1
	for i := lo; i < hi; i++ {
		v := ys[i]
		if math.IsNaN(v) {
			continue
		}
		if minAt < 0 || v < ys[minAt] {
			minAt = i
		}
		if maxAt < 0 || v > ys[maxAt] {
			maxAt = i
		}
	}
	if minAt < 0 {
		return lo, lo
	}
	return minAt, maxAt
}

func appendUnique(s []int, v int) []int {
	for _, w := range s {
		if w == v {
			return s
		}
	}
	return append(s, v)
}

// sortSmall is an insertion sort: a bucket picks at most a few indices.
func sortSmall(s []int) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}
