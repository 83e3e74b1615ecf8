// Package fakepartner describes how a fake partner behaves (latency
// distribution, error rates, capacity, a scripted outage timeline, optimistic
// concurrency) and plays that behaviour either as a simulated partner on a
// virtual clock or as a real HTTP server on loopback. It records what each
// partner observed.
//
// Bad data (PermanentErrors) belongs to a delivery: it is decided from the
// hash of the delivery id (KeyHash; the Idempotency-Key over HTTP) and the
// drill seed, so every attempt of a bad delivery is rejected and both modes
// reject the same deliveries. Transient errors are drawn per call.
package fakepartner
