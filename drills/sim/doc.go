// Package sim runs a drill under the deterministic discrete-event
// simulation (`mode = "sim"`): a virtual clock, the simulated partners
// (fakepartner.Sim), an in-memory queue and the same sans-I/O dispatcher
// core (model/dispatchcore) the live dispatcher runs, feeding the same tally
// as the live and external runners. One drill seed decides every random
// stream, so the same drill and seed give a byte-identical summary.
//
// A delivery gets its item only when its partner is about to try it: the
// source offers it fresh (dispatchcore's OfferFresh, its event's number as
// the token), and a backlog held behind an open breaker waits in the core
// as 16 bytes a delivery. When the run ends the simulation's structures
// are collected before the report is built, which needs only the tally.
//
// The CPU hints it turns on (huge pages, prefetch, padded layouts) are in
// tuning.go, layout.go and the package drills/sim/tuning, apart from the
// event loop; the build tag stormdrill_notuning turns them off, with the
// same results byte for byte.
//
// BareRetryLoop is the reference `stormdrill bench` measures the simulator
// against: the least work a retry simulation can do per attempt.
package sim
