// Package sim runs a drill under the deterministic discrete-event
// simulation (`mode = "sim"`): a virtual clock, the simulated partners
// (fakepartner.Sim), an in-memory queue and the same sans-I/O dispatcher
// core (model/dispatchcore) the live dispatcher runs, feeding the same tally
// as the live and external runners. One drill seed decides every random
// stream, so the same drill and seed give a byte-identical summary.
//
// The CPU hints it turns on (huge pages, prefetch, padded layouts) are in
// tuning.go, layout.go and the package drills/sim/tuning, apart from the
// event loop; the build tag stormdrill_notuning turns them off, with the
// same results byte for byte.
//
// BareRetryLoop is the reference `stormdrill bench` measures the simulator
// against: the least work a retry simulation can do per attempt.
package sim
