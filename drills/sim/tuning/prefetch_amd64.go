//go:build !stormdrill_notuning

package tuning

import "unsafe"

// Prefetch asks the CPU to bring the cache line at p into the cache without
// waiting for it. A simulation of tens of thousands of subscribers misses
// the cache on every subscriber's state; prefetching the pieces an event
// will read as soon as their addresses are known lets the misses overlap
// instead of coming one after the other. It changes no result.
//
//go:noescape
func Prefetch(p unsafe.Pointer)

// PrefetchLines is Prefetch of the n cache lines from p on, in one call.
// The caller keeps them inside one object.
//
//go:noescape
func PrefetchLines(p unsafe.Pointer, n uintptr)
