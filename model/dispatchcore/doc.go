// Package dispatchcore is the dispatcher core: which delivery starts now and what
// happens when an attempt ends. It is sans-I/O: callers step it with
// arrivals, completions and the time, and it answers with what to do. It owns
// global worker slots, per-partner concurrency limits, a due-ordered queue in
// which delayed deliveries hold no worker, round-robin fairness across
// partners, and a breaker and a retry budget per partner. The calls that
// step it take the time as Unix nanoseconds.
//
// A caller that can make a new delivery's item from a few words (the
// simulator: its partner, its time and its event's number) offers it with
// OfferFresh rather than Offer, and the core asks for the item
// (Config.Fresh) only when the delivery is its partner's next. Until then
// it is 16 bytes of a chunked fifo: a backlog of millions held behind an
// open breaker costs no item each. Either way the deliveries come out in
// the same order.
package dispatchcore
