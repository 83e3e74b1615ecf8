// Package eventqueue is the discrete-event simulation's event queue: events
// ordered by (virtual time, insertion), so that events at the same time run
// in the order they were scheduled and a run is deterministic. It keeps
// them in a calendar of time buckets that retunes its width to the events
// it is given, in front of a heap for those beyond it; the order is exact
// whatever the width.
package eventqueue
