package live

import "time"

// resetTimer re-arms t for d, draining a tick that fired meanwhile.
func resetTimer(t *time.Timer, d time.Duration) {
	t.Stop()
	select {
	case <-t.C:
	default:
	}
	t.Reset(d)
}

// storeTimeout bounds one store call of the runner or the injector.
const storeTimeout = 30 * time.Second
