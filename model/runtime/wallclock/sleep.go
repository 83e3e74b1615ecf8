package wallclock

import (
	"context"
	"time"
)

// Tail is the part of a wait slept precisely (in one system call that
// cannot be cancelled): the Go timer's lateness is under a millisecond,
// so it wakes up before the instant with room to spare.
const Tail = 2 * time.Millisecond

// Until returns when the wall clock reaches t, or with ctx's error when
// ctx is done first. timer is reused for the long part of the wait (nil:
// one is made); it must not be running.
func Until(ctx context.Context, t time.Time, timer *time.Timer) error {
	wait := time.Until(t)
	if wait <= 0 {
		return nil
	}
	if wait > Tail {
		if timer == nil {
			timer = time.NewTimer(wait - Tail)
			defer timer.Stop()
		} else {
			timer.Reset(wait - Tail)
		}
		select {
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop() // since Go 1.23 no stale tick is left to drain
			return ctx.Err()
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	Sleep(time.Until(t))
	return nil
}

// Sleep pauses the calling goroutine for d. Waits up to Tail are precise
// (see the package doc); it is meant for them: a longer d holds an OS
// thread in a system call for all of it.
func Sleep(d time.Duration) {
	if d <= 0 {
		return
	}
	sleep(d)
}
