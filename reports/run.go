package reports

// Run is everything the writers need for one finished run: the summary, the
// sampled series and the extra detail that does not belong in summary.json.
type Run struct {
	Summary    *Summary
	Timeseries *Timeseries

	// HealthyCDF and HealthyOutageCDF are healthy-subscriber latencies as
	// (latency seconds, cumulative fraction) points, already bounded in size,
	// for the whole drill and for deliveries created inside outage windows.
	HealthyCDF       []CDFPoint
	HealthyOutageCDF []CDFPoint

	// DLQTimes holds, per dead-letter reason, the drill times (seconds) of
	// dead letters, bounded; Timeseries.Samples[i].DLQByReason is the binned
	// form and is what plots should use.

	// Policy echoes the drill's policy for the report, in display order.
	Policy []KV

	// Baseline is the comparison against a stored baseline run, when asked
	// for with `run --baseline`.
	Baseline *Comparison

	// SeedSummaries are the summaries of every seed of a multi-seed run
	// (run --seeds N), the first being Summary's own seed; WriteRunFiles
	// writes each to seeds/<seed>/summary.json.
	SeedSummaries []*Summary

	// Dir is where the files are written.
	Dir string
}

// CDFPoint is one point of an empirical distribution.
type CDFPoint struct {
	X float64 // seconds
	P float64 // cumulative fraction in [0, 1]
}

// KV is one row of a two-column table.
type KV struct {
	Key   string
	Value string
}
