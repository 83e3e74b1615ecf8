package reports

// Comparison is a base run set against a candidate run, metric by metric.
type Comparison struct {
	Base, Candidate string // where each came from
	Rows            []CompareRow
	Failed          bool // a --fail-on tolerance was exceeded
}

// CompareRow is one key figure of a comparison.
type CompareRow struct {
	Metric    string
	Base      float64
	Candidate float64
	Change    float64 // candidate - base
	Percent   float64 // change ÷ |base| × 100; NaN when base is 0
	Tolerance string  // the --fail-on rule that applies, if any
	Exceeded  bool
}
