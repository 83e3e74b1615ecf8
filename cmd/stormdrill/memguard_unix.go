//go:build !windows

package main

import (
	"math"
	"syscall"
)

// addressSpaceLimit is the process's address-space limit (RLIMIT_AS) in
// bytes; 0 when there is none or it cannot be read.
func addressSpaceLimit() int64 {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_AS, &rl); err != nil || rl.Cur >= math.MaxInt64 {
		return 0
	}
	return int64(rl.Cur)
}
