// Package eventqueue is the discrete-event simulation's event queue: events
// ordered by (virtual time, insertion), so that events at the same time run
// in the order they were scheduled and a run is deterministic. It is a
// radix heap, which a clock that only moves forward allows.
package eventqueue
