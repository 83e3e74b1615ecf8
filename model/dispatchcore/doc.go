// Package dispatchcore is the dispatcher core: which delivery starts now and what
// happens when an attempt ends. It is sans-I/O: callers step it with
// arrivals, completions and the time, and it answers with what to do. It owns
// global worker slots, per-partner concurrency limits, a due-ordered queue in
// which delayed deliveries hold no worker, round-robin fairness across
// partners, and a breaker and a retry budget per partner.
package dispatchcore
