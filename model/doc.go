// Package model is the delivery domain and its policy core: deliveries,
// outcomes and decisions; capped exponential backoff with jitter,
// classification of outcomes, Retry-After, the delivery window, the circuit
// breaker and the retry budget.
//
// Everything here is pure: no I/O, no goroutines, no clock and no global
// random source. Time comes in as now; randomness comes in as a uniform
// number in [0, 1) that the caller draws from a stream it owns. The same code
// runs under the simulation and in the live dispatcher.
//
// The subpackages dispatchcore (the sans-I/O dispatcher core), eventqueue
// and seed are pure too. The adapters that do I/O (stores, the dispatcher
// runtime, the wall clock) live under runtime/, which the pure core never
// imports (purity_test.go holds that).
package model
