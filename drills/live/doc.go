// Package live runs drills for real: the dispatcher process (a claim loop
// that owns a model/dispatch core, a bounded pool of HTTP workers and DLQ
// alerting) and the live runner that starts the fake partners, injects
// deliveries into the durable queue (SQLite, or the drill's store, such as
// PostgreSQL) on the drill's schedule, starts dispatcher.processes
// dispatcher processes on it, kills and restarts them, and feeds the same
// tally as the simulation with what the partners observed (every attempt)
// and what the store holds, through the queue.Store interface only.
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
// Clock that runs Speed times faster than the wall clock from Start. The
// policy's durations therefore need no scaling, and the store's run_at,
// created and updated columns read directly as drill time.
package live
