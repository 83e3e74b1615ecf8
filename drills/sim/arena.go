package sim

import (
	"math/bits"
	"unsafe"

	"github.com/stormdrill/stormdrill/model/dispatchcore"
)

// itemArena hands out the simulation's delivery items and takes them back.
// Items live in slabs that are never freed, each with a bitmap of its
// freed items: taking an item back costs a bit, where a pool slice of
// pointers grew by copying and at the end of a drain held a pointer for
// every item ever made; and handing freed ones out again sweeps the
// bitmaps in address order, so that an event's fan-out, which takes
// thousands at once, reads memory in order instead of chasing a free
// list from one cold item to the next.
type itemArena struct {
	slabs [][]dispatchcore.Item // every slab made, in order; an item's Ref names its slab (refSlab)
	freed [][]uint64            // freed[s] has bit k set when slabs[s][k] is free
	next  []dispatchcore.Item   // the latest slab's items not handed out yet
	made  int                   // items taken from slabs so far
	nfree int                   // freed items not handed out again
	// The sweep's place: the next word of freed[cs] to look at.
	cs, cw int
}

// maxSlabs bounds the slabs an item's Ref can name; past it the arena
// allocates items one by one, which are not taken back. Slabs grow by a
// sixteenth up to 4 MiB: 1,024 of them hold about 87 million items.
const maxSlabs = 1 << refSlabBits

// get returns a zero item: a freed one, the next in the sweep, if there is
// one, else a new one.
func (a *itemArena) get() *dispatchcore.Item {
	if a.nfree > 0 {
		// A set bit exists, so the sweep finds one within a lap of the
		// slabs.
		for {
			if a.cw == len(a.freed[a.cs]) {
				a.cs, a.cw = (a.cs+1)%len(a.slabs), 0
				continue
			}
			w := a.freed[a.cs][a.cw]
			if w == 0 {
				a.cw++
				continue
			}
			b := bits.TrailingZeros64(w)
			a.freed[a.cs][a.cw] = w &^ (1 << b)
			a.nfree--
			it := &a.slabs[a.cs][a.cw*64+b]
			*it = dispatchcore.Item{Ref: uint64(a.cs) << refSlabShift}
			return it
		}
	}
	if len(a.next) == 0 {
		if len(a.slabs) == maxSlabs {
			return &dispatchcore.Item{Ref: (maxSlabs - 1) << refSlabShift}
		}
		// Slabs are a sixteenth of the items made so far each, so that the
		// deliveries in flight span few pages while the last slab, mostly
		// unused when pending deliveries peak, is small beside them (see
		// newSlab).
		s := newSlab(a.made)
		a.slabs = append(a.slabs, s)
		a.freed = append(a.freed, make([]uint64, (len(s)+63)/64))
		a.next = s
	}
	it := &a.next[0]
	a.next = a.next[1:]
	a.made++
	it.Ref = uint64(len(a.slabs)-1) << refSlabShift
	return it
}

// place is where it lies: its slab and its place in the slab; ok is false
// for an item made one by one past maxSlabs, which lies in none.
func (a *itemArena) place(it *dispatchcore.Item) (slab int, off uintptr, ok bool) {
	slab = refSlab(it)
	s := a.slabs[slab]
	off = (uintptr(unsafe.Pointer(it)) - uintptr(unsafe.Pointer(&s[0]))) / unsafe.Sizeof(*it)
	return slab, off, off < uintptr(len(s))
}

// put takes back an item get returned; the caller no longer uses it.
func (a *itemArena) put(it *dispatchcore.Item) {
	slab, off, ok := a.place(it)
	if !ok {
		return // made one by one past maxSlabs: the collector takes it
	}
	a.freed[slab][off/64] |= 1 << (off % 64)
	a.nfree++
}

// An item's index names it in 32 bits, for an event to carry (see
// simEvent): its slab above its place in the slab. A slab holds at most
// maxSlabBytes of items, fewer than 2^itemPlaceBits.
const (
	itemPlaceBits = 17
	noItemIndex   = ^uint32(0) // an item made one by one, or none
)

var _ = [1]struct{}{}[maxSlabBytes/unsafe.Sizeof(dispatchcore.Item{})>>itemPlaceBits] // does not compile unless a slab's items fit itemPlaceBits

// index is where it lies in the arena (see place), as an event carries
// it; noItemIndex if it was made one by one.
func (a *itemArena) index(it *dispatchcore.Item) uint32 {
	slab, off, ok := a.place(it)
	if !ok {
		return noItemIndex
	}
	return uint32(slab)<<itemPlaceBits | uint32(off)
}

// at is the item whose index is i, nil for noItemIndex.
func (a *itemArena) at(i uint32) *dispatchcore.Item {
	if i == noItemIndex {
		return nil
	}
	return &a.slabs[i>>itemPlaceBits][i&(1<<itemPlaceBits-1)]
}

// upcoming is the item the sweep would hand out after the next one if it
// lies in the same bitmap word, else nil: for a caller to prefetch.
func (a *itemArena) upcoming() *dispatchcore.Item {
	if a.nfree < 2 || a.cw >= len(a.freed[a.cs]) {
		return nil
	}
	w := a.freed[a.cs][a.cw]
	if bits.OnesCount64(w) < 2 {
		return nil
	}
	w &= w - 1 // past the next one
	return &a.slabs[a.cs][a.cw*64+bits.TrailingZeros64(w)]
}
