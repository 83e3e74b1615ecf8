// Package live runs drills for real: it starts the fake partners over HTTP,
// converts the drill into the dispatcher runtime's configuration
// (DispatcherConfig, written as the file a `stormdrill dispatch` child
// process reads), injects deliveries into the durable queue (SQLite, or the
// drill's store, such as PostgreSQL) on the drill's schedule, starts
// dispatcher.processes dispatcher processes on it, kills and restarts them,
// and feeds the same tally as the simulation with what the partners
// observed (every attempt) and what the store holds, through the
// queue.Store interface only. The dispatcher itself lives in
// model/runtime/dispatcher and never reads the drill format.
//
// Each event goes to the subscribers source.fanout picks for its number
// (drills.Fanout), the simulation's pick, so both modes make the same
// deliveries.
//
// The injector honours dispatcher.queue_capacity and on_full against the
// store's non-terminal deliveries (block: the source is held back and that
// is reported; reject: queue-full dead letters). The dispatcher renews the
// leases of the deliveries it keeps in memory, so that several dispatcher
// processes on one queue never send the same delivery while its owner is
// alive. Samples count a partner's due deliveries as delayed while its
// breaker, as the dispatcher reports it, is not closed.
//
// Time: every time the dispatcher and the store hold is drill time, on a
// dispatcher.Clock that runs Speed times faster than the wall clock from
// Start. The policy's durations therefore need no scaling, and the store's
// run_at, created and updated columns read directly as drill time. The run
// records that clock in the store (queue.Clock), so `stormdrill dlq` shows
// the wall-clock instants of the run. Retry-After crosses the wire in wall
// seconds (see the fakepartner package).
package live
