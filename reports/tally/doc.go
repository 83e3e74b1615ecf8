// Package tally is the one instrument every mode feeds: it owns the
// subscriber layout, the per-cohort counters and latency histograms, the
// per-interval counters of the time series, the outage drain tracks, and
// the assembly of every figure of summary.json and timeseries.csv
// (reports.Run).
//
// Feeders speak in domain terms: a delivery was created, an attempt
// started or ended (with its outcome, classified by the drill's own
// classifier), a delivery was delivered, dead-lettered (with a reason) or
// is still pending at the end, and the queue looked like this at a sample.
// The simulator feeds it event by event; the live runner feeds it from the
// queue store and the partner server's records; the external runner from
// the partner server's records and its own injector's, in drill-time order
// after the run. A fact may arrive late: it
// is counted in the interval that holds its time, so the series and the
// summary always add up to the same totals.
//
// A Tally is not safe for concurrent use; feeders serialise their calls.
package tally
