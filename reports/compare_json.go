package reports

import (
	"encoding/json"
	"io"
	"math"
)

// comparisonJSON is the shape of `stormdrill compare --json`. Numbers are
// in the metric's base unit (seconds, fractions, counts); a figure that
// does not apply is null, and na says why.
type comparisonJSON struct {
	Base           string              `json:"base"`
	Candidate      string              `json:"candidate"`
	BaseSeeds      int                 `json:"base_seeds,omitempty"`
	CandidateSeeds int                 `json:"candidate_seeds,omitempty"`
	Failed         bool                `json:"failed"`
	Rows           []comparisonRowJSON `json:"rows"`
	Tolerances     []ToleranceResult   `json:"tolerances"`
}

type comparisonRowJSON struct {
	Metric      string     `json:"metric"`
	Base        *float64   `json:"base"`
	Candidate   *float64   `json:"candidate"`
	Change      *float64   `json:"change"`
	Percent     *float64   `json:"percent"`
	BaseNA      string     `json:"base_na,omitempty"`
	CandidateNA string     `json:"candidate_na,omitempty"`
	Tolerance   string     `json:"tolerance,omitempty"`
	Exceeded    bool       `json:"exceeded"`
	Test        *welchJSON `json:"welch,omitempty"`
}

type welchJSON struct {
	Diff   *float64 `json:"diff"`
	CILow  *float64 `json:"ci_low"`
	CIHigh *float64 `json:"ci_high"`
	P      *float64 `json:"p"`
	DF     *float64 `json:"df"`
}

func finite(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

// WriteComparisonJSON writes a comparison as indented JSON, for scripts.
func WriteComparisonJSON(w io.Writer, c *Comparison) error {
	out := comparisonJSON{Base: c.Base, Candidate: c.Candidate, BaseSeeds: c.BaseSeeds, CandidateSeeds: c.CandidateSeeds,
		Failed: c.Failed, Rows: []comparisonRowJSON{}, Tolerances: c.Tolerances}
	if out.Tolerances == nil {
		out.Tolerances = []ToleranceResult{}
	}
	for _, r := range c.Rows {
		jr := comparisonRowJSON{Metric: r.Metric, Base: finite(r.Base), Candidate: finite(r.Candidate),
			Change: finite(r.Change), Percent: finite(r.Percent), BaseNA: r.BaseNA, CandidateNA: r.CandidateNA,
			Tolerance: r.Tolerance, Exceeded: r.Exceeded}
		if r.BaseNA != "" {
			jr.Base = nil
		}
		if r.CandidateNA != "" {
			jr.Candidate = nil
		}
		if t := r.Test; t != nil {
			jr.Test = &welchJSON{Diff: finite(t.Diff), CILow: finite(t.CILow), CIHigh: finite(t.CIHigh), P: finite(t.P), DF: finite(t.DF)}
		}
		out.Rows = append(out.Rows, jr)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
