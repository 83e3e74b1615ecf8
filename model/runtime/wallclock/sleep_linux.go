package wallclock

import (
	"syscall"
	"time"
)

func sleep(d time.Duration) {
	ts := syscall.NsecToTimespec(int64(d))
	// EINTR (a signal) leaves the rest in ts: sleep it too.
	for syscall.Nanosleep(&ts, &ts) == syscall.EINTR {
	}
}
