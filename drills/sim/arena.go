package sim

import (
	"unsafe"

	"github.com/stormdrill/stormdrill/model/dispatchcore"
)

// itemArena hands out the simulation's delivery items and takes them back.
// Items live in slabs that are never freed; a freed item joins a free list
// threaded through the items themselves (its Key, dead while it is free,
// holds the next one's index), so that taking items back costs no memory:
// a pool slice of pointers grew by copying, and at the end of a drain held
// a pointer for every item ever made.
type itemArena struct {
	slabs [][]dispatchcore.Item // every slab made, in order; an item's Tag is its slab's index
	next  []dispatchcore.Item   // the latest slab's items not handed out yet
	made  int                   // items taken from slabs so far
	free  uint64                // index + 1 of the first free item (see at); 0: none
	nfree int                   // items on the free list
}

// maxSlabs bounds the slabs an item's Tag can name; past it the arena
// allocates items one by one, which are not taken back.
const maxSlabs = 1 << 16

// get returns a zero item.
func (a *itemArena) get() *dispatchcore.Item {
	if a.free != 0 {
		it := a.at(a.free - 1)
		a.free = it.Key
		a.nfree--
		tag := it.Tag
		*it = dispatchcore.Item{Tag: tag}
		return it
	}
	if len(a.next) == 0 {
		if len(a.slabs) == maxSlabs {
			return &dispatchcore.Item{Tag: maxSlabs - 1}
		}
		// Slabs are a sixteenth of the items made so far each, so that the
		// deliveries in flight span few pages while the last slab, mostly
		// unused when pending deliveries peak, is small beside them (see
		// newSlab).
		s := newSlab(a.made)
		a.slabs = append(a.slabs, s)
		a.next = s
	}
	it := &a.next[0]
	a.next = a.next[1:]
	a.made++
	it.Tag = uint16(len(a.slabs) - 1)
	return it
}

// put takes back an item get returned; the caller no longer uses it.
func (a *itemArena) put(it *dispatchcore.Item) {
	s := a.slabs[it.Tag]
	off := (uintptr(unsafe.Pointer(it)) - uintptr(unsafe.Pointer(&s[0]))) / unsafe.Sizeof(*it)
	if off >= uintptr(len(s)) {
		return // made one by one past maxSlabs: the collector takes it
	}
	it.Key = a.free
	a.free = uint64(it.Tag)<<32 | uint64(off) + 1
	a.nfree++
}

// at is the item of index i: its slab in the high 32 bits, its offset in
// the low ones.
func (a *itemArena) at(i uint64) *dispatchcore.Item { return &a.slabs[i>>32][uint32(i)] }

// peekFree is the item get returns next if it is a freed one, else nil.
func (a *itemArena) peekFree() *dispatchcore.Item {
	if a.free == 0 {
		return nil
	}
	return a.at(a.free - 1)
}
