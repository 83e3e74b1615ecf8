//go:build linux && !stormdrill_notuning

package tuning

import (
	"syscall"
	"unsafe"
)

// HugePages asks the kernel to back the whole 2 MiB pages inside the size
// bytes at p with huge pages, where transparent huge pages are enabled
// (also in their "madvise" mode). At tens of thousands of subscribers
// their state spans thousands of 4 KiB pages read in random order: each
// read then misses the TLB as well as the cache, and a prefetch waits for
// the page walk. Call it before the memory is first written, so that its
// first touch faults in huge pages. It changes no result; it ignores
// errors (a kernel without THP says no).
func HugePages(p unsafe.Pointer, size uintptr) {
	const huge = 2 << 20
	from := (uintptr(p) + huge - 1) &^ (huge - 1)
	to := (uintptr(p) + size) &^ (huge - 1)
	if to <= from {
		return
	}
	b := unsafe.Slice((*byte)(unsafe.Add(p, from-uintptr(p))), to-from)
	_ = syscall.Madvise(b, syscall.MADV_HUGEPAGE)
}
