//go:build unix

package testsuite

import (
	"syscall"
	"testing"
	"time"
)

// ProcessCPU is the user+system CPU time of this process so far (child
// processes' not included), for benchmarks that report CPU per unit of
// work: wall time on a busy machine says little.
func ProcessCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
