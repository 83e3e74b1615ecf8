// Package fakepartner describes how a fake partner behaves (latency
// distribution, error rates, capacity, a scripted outage timeline, optimistic
// concurrency) and plays that behaviour either as a simulated partner on a
// virtual clock (Sim) or as a real HTTP server (Server). It records what
// each partner observed.
//
// The server listens on loopback unless given a control token (Listen,
// TokenEnv): then it may listen where other machines reach it, and its
// control API, alert sink and dead-letter endpoint require the token
// (guardControl), while the partner paths stay open.
//
// The behaviour is written once: Behaviour is a pure state machine that
// decides each call's answer (status, reset or no answer), latency and
// Retry-After from the drill time, the delivery and the subscriber's random
// stream. Sim steps it in virtual time; Server steps it at the drill time of
// each request and only turns the answer into bytes after waiting its
// latency. Outage kinds are declared once, in outagekinds.go, with their
// validation, behaviour and effect on the analytic plan.
//
// Bad data (PermanentErrors) belongs to a delivery: it is decided from the
// hash of the delivery id (KeyHash; the Idempotency-Key over HTTP) and the
// drill seed (a simulation keeps the two hashed together, DataDraw, with the
// delivery), so every attempt of a bad delivery is rejected and both modes
// reject the same deliveries. Transient errors are drawn per call, and so
// are a cohort's per-call faults (Spec.CallFaults), from the subscriber's
// stream and only for cohorts that have them.
//
// Faults that are not an HTTP answer travel in the Call as its Wire form:
// the Server hijacks the connection to reset it, close it with no answer,
// write bytes that are not HTTP or a 200 whose body stops short, and
// dribbles a body over Call.Dribble; a lost ack records the delivery and
// resets the connection (Call.AckLost). A refusal happens before any
// request reaches a listener, so a cohort with a refused outage is served
// on a listener of its own (ServeRefusing), closed while the outage lasts.
//
// Time, for the Server at a Speed other than 1: every duration it reads or
// reports is drill time (the spec, the control API's for, period,
// retry_after, drill_time_s and ends_in_s, the latency counters); instants
// (ends_at, first and last seen) are wall-clock ones; on the wire a
// Retry-After of D drill seconds is sent as D/Speed wall seconds rounded up,
// because the caller sleeps on the wall clock (WallClock.RetryAfterSeconds).
package fakepartner
