package dispatcher

import (
	"runtime/debug"
	"testing"
)

func TestTuneGC(t *testing.T) {
	orig := debug.SetGCPercent(100)
	defer debug.SetGCPercent(orig)

	t.Setenv("GOGC", "")
	TuneGC()
	if got := debug.SetGCPercent(100); got != GCPercent {
		t.Errorf("GOGC unset: collector target %d, want %d", got, GCPercent)
	}

	// A GOGC the user set wins: TuneGC leaves the target alone.
	t.Setenv("GOGC", "250")
	debug.SetGCPercent(250)
	TuneGC()
	if got := debug.SetGCPercent(100); got != 250 {
		t.Errorf("GOGC=250: collector target %d, want 250", got)
	}
}
