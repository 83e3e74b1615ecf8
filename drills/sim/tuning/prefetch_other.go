//go:build !amd64 || stormdrill_notuning

package tuning

import "unsafe"

// Prefetch does nothing on this architecture, or with tuning off (see the
// amd64 version).
func Prefetch(p unsafe.Pointer) {}

// PrefetchLines does nothing on this architecture, or with tuning off
// (see the amd64 version).
func PrefetchLines(p unsafe.Pointer, n uintptr) {}
