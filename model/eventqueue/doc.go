// Package eventqueue is the discrete-event simulation's event heap: events
// ordered by (virtual time, insertion), so that events at the same time run
// in the order they were scheduled and a run is deterministic.
package eventqueue
