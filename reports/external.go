package reports

import (
	"fmt"
	"sort"
	"strconv"
)

// External is what only an external run (mode = "external") can show: the
// pipeline is somebody else's, so every figure is seen from the partners.
type External struct {
	// System is how the system under drill was driven, for the report.
	System string `json:"system"`
	// RunID is in every event and delivery id of the run
	// ("evt-RUNID-000123:acme-0"), random per run.
	RunID string `json:"run_id"`
	// DeadLetterSource is endpoint, command or none. With none, deliveries
	// that end unresolved are reported as unresolved and lost is not
	// claimed (LostClaimed false).
	DeadLetterSource string `json:"dead_letter_source"`
	LostClaimed      bool   `json:"lost_claimed"`
	Unresolved       int64  `json:"unresolved"`
	// Unidentified counts attempts whose idempotency key named no delivery
	// of the run (missing, or changed by the system); they are counted,
	// never dropped, and not attributed to any delivery.
	Unidentified         int64            `json:"unidentified_attempts"`
	UnidentifiedByCohort map[string]int64 `json:"unidentified_by_cohort,omitempty"`
	UnknownDeadLetters   int64            `json:"unknown_dead_letters"`
	IngestRefusedEvents  int64            `json:"ingest_refused_events"`

	RetryAfter     RetryAfterCompliance `json:"retry_after"`
	Backoff        []BackoffGap         `json:"backoff"`
	CallsWhileDown []DownCalls          `json:"calls_while_down"`
	Concurrency    []Concurrency        `json:"concurrency"`
}

// RetryAfterCompliance: retries that followed an answer with a Retry-After,
// and how many came sooner than it asked.
type RetryAfterCompliance struct {
	Checked      int64    `json:"checked"`
	Early        int64    `json:"early"`
	ShortestGapS *float64 `json:"shortest_gap_s"`
	MedianGapS   *float64 `json:"median_gap_s"`
}

// BackoffGap is the observed gap before attempt Ordinal: from the end of the
// previous attempt of the same delivery to this one's arrival.
type BackoffGap struct {
	Ordinal int     `json:"ordinal"` // the last ordinal holds every later one
	Count   int64   `json:"count"`
	P50S    float64 `json:"p50_s"`
	P90S    float64 `json:"p90_s"`
	MinS    float64 `json:"min_s"`
	MaxS    float64 `json:"max_s"`
}

// DownCalls is how many calls reached a partner while an outage held it
// down: a breaker that holds keeps it near zero.
type DownCalls struct {
	Partner string  `json:"partner"`
	Kind    string  `json:"kind"`
	StartS  float64 `json:"start_s"`
	EndS    float64 `json:"end_s"`
	Calls   int64   `json:"calls"`
}

// Concurrency is the most requests a cohort was serving at once.
type Concurrency struct {
	Partner string `json:"partner"`
	Max     int    `json:"max"`
}

// ExternalRows renders the external figures as label/value rows for the
// reports.
func ExternalRows(e *External) [][2]string {
	if e == nil {
		return nil
	}
	secs := func(p *float64) string {
		if p == nil {
			return "—"
		}
		return fmt.Sprintf("%.3gs", *p)
	}
	rows := [][2]string{{"system", e.System}}
	if e.RunID != "" {
		// A summary written before run ids has none: no row, rather than an
		// empty cell that Markdown and HTML render differently.
		rows = append(rows, [2]string{"run id (in every delivery id)", e.RunID})
	}
	rows = append(rows, [2]string{"dead letters seen by", e.DeadLetterSource})
	if !e.LostClaimed {
		rows = append(rows, [2]string{"lost", "not claimed: no dead-letter source, " + strconv.FormatInt(e.Unresolved, 10) + " unresolved"})
	} else {
		rows = append(rows, [2]string{"unresolved at the end", strconv.FormatInt(e.Unresolved, 10)})
	}
	rows = append(rows,
		[2]string{"unidentified attempts", strconv.FormatInt(e.Unidentified, 10)},
		[2]string{"Retry-After honoured", fmt.Sprintf("%d of %d retries early; gap shortest %s, median %s",
			e.RetryAfter.Early, e.RetryAfter.Checked, secs(e.RetryAfter.ShortestGapS), secs(e.RetryAfter.MedianGapS))},
	)
	if e.IngestRefusedEvents > 0 {
		rows = append(rows, [2]string{"events the ingest refused", strconv.FormatInt(e.IngestRefusedEvents, 10)})
	}
	if e.UnknownDeadLetters > 0 {
		rows = append(rows, [2]string{"dead letters of unknown ids", strconv.FormatInt(e.UnknownDeadLetters, 10)})
	}
	for _, g := range e.Backoff {
		rows = append(rows, [2]string{fmt.Sprintf("backoff before attempt %d", g.Ordinal),
			fmt.Sprintf("p50 %.3gs · p90 %.3gs · min %.3gs · max %.3gs (%d)", g.P50S, g.P90S, g.MinS, g.MaxS, g.Count)})
	}
	for _, d := range e.CallsWhileDown {
		rows = append(rows, [2]string{fmt.Sprintf("calls to %s while down (%s, %gs–%gs)", d.Partner, d.Kind, d.StartS, d.EndS), strconv.FormatInt(d.Calls, 10)})
	}
	for _, c := range e.Concurrency {
		rows = append(rows, [2]string{"most concurrent calls to " + c.Partner, strconv.Itoa(c.Max)})
	}
	names := make([]string, 0, len(e.UnidentifiedByCohort))
	for n := range e.UnidentifiedByCohort {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		rows = append(rows, [2]string{"unidentified attempts at " + n, strconv.FormatInt(e.UnidentifiedByCohort[n], 10)})
	}
	return rows
}
