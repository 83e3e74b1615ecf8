// Package live runs drills for real: it starts the fake partners over HTTP,
// converts the drill into the dispatcher runtime's configuration
// (DispatcherConfig, written as the file a `stormdrill dispatch` child
// process reads), injects deliveries into a SQLite queue on the drill's
// schedule, kills and restarts the dispatcher, and builds the same report
// as the simulation from what the partners observed and what the store
// holds. The dispatcher itself lives in model/dispatcher and never reads
// the drill format.
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
// run_at, created and updated columns read directly as drill time.
package live
