//go:build !linux

package tuning

import "unsafe"

// HugePages does nothing on this system (see the Linux version).
func HugePages(p unsafe.Pointer, size uintptr) {}
