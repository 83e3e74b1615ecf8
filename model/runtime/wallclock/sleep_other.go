//go:build !linux

package wallclock

import "time"

// The runtime's timers elsewhere wait with finer than millisecond
// resolution (kqueue takes a timespec; Windows has high-resolution
// timers), so they are used as they are.
func sleep(d time.Duration) { time.Sleep(d) }
