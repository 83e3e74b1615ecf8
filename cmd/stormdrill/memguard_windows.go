//go:build windows

package main

// addressSpaceLimit: Windows has no RLIMIT_AS; the guard uses the machine's
// memory (or GOMEMLIMIT) alone.
func addressSpaceLimit() int64 { return 0 }
