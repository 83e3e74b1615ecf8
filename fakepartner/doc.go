// Package fakepartner describes how a fake partner behaves (latency
// distribution, error rates, capacity, a scripted outage timeline, optimistic
// concurrency) and plays that behaviour either as a simulated partner on a
// virtual clock or as a real HTTP server on loopback. It records what each
// partner observed.
package fakepartner
