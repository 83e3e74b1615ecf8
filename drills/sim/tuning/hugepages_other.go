//go:build !linux || stormdrill_notuning

package tuning

import "unsafe"

// HugePages does nothing on this system, or with tuning off (see the
// Linux version).
func HugePages(p unsafe.Pointer, size uintptr) {}
