// Package wallclock waits for a wall-clock instant more precisely than a
// Go timer does on Linux.
//
// The Go runtime's timers on Linux wake up to about a millisecond late:
// the network poller that sleeps for them waits in whole milliseconds. An
// injector that writes an arrival on schedule measured that millisecond
// as its own lateness, and a store that retries a busy lock every 200 µs
// in fact retried every millisecond. Until sleeps on a Go timer until
// shortly before the instant, so it can be cancelled, and sleeps the
// rest (at most Tail) in one nanosleep system call, which wakes up within
// tens of microseconds. Elsewhere the runtime's timers are used as they
// are.
package wallclock
