package sim

import (
	"testing"

	"github.com/stormdrill/stormdrill/model/dispatchcore"
)

// TestArenaReusesFreedItems: items taken back are handed out again, zero,
// before any new one, in address order across slabs; nothing is handed
// out twice at once.
func TestArenaReusesFreedItems(t *testing.T) {
	var a itemArena
	const n = 5000 // several slabs (the first holds 512)
	out := make([]*dispatchcore.Item, n)
	inUse := map[*dispatchcore.Item]bool{}
	for i := range out {
		out[i] = a.get()
		if inUse[out[i]] {
			t.Fatalf("item %d handed out twice", i)
		}
		inUse[out[i]] = true
		out[i].RunAt, out[i].JitterKey = int64(i+1), 99
		out[i].Ref |= 12345 << refDrawShift
		setAccepted(out[i])
		if !accepted(out[i]) || refDraw(out[i]) != 12345 {
			t.Fatalf("item %d: Ref %#x does not keep the flag and the draw", i, out[i].Ref)
		}
		if s := a.slabs[refSlab(out[i])]; !inSlab(s, out[i]) {
			t.Fatalf("item %d: Ref names slab %d, which does not hold it", i, refSlab(out[i]))
		}
	}
	if len(a.slabs) < 3 {
		t.Fatalf("%d slabs for %d items, want several", len(a.slabs), n)
	}
	// Take back every third one, from every slab, the later ones first.
	var back []*dispatchcore.Item
	for i := n - 1; i >= 0; i -= 3 {
		a.put(out[i])
		delete(inUse, out[i])
		back = append(back, out[i])
	}
	if a.nfree != len(back) {
		t.Fatalf("%d freed, want %d", a.nfree, len(back))
	}
	made := a.made
	for k := len(back) - 1; k >= 0; k-- { // the sweep goes in address order: out's order
		it := a.get()
		if it != back[k] {
			t.Fatalf("get returned an item other than the next freed one in address order (%d)", k)
		}
		if *it != (dispatchcore.Item{Ref: uint64(refSlab(it)) << refSlabShift}) || !inSlab(a.slabs[refSlab(it)], it) {
			t.Fatalf("reused item not zero: %+v", *it)
		}
		inUse[it] = true
	}
	if a.made != made || a.nfree != 0 {
		t.Fatalf("after reusing every freed item: made %d → %d, %d free", made, a.made, a.nfree)
	}
	if it := a.get(); inUse[it] {
		t.Fatal("a new item after the freed ones ran out was one in use")
	}
	// The sweep wraps: an item freed behind it is found.
	a.put(out[1])
	if it := a.get(); it != out[1] {
		t.Fatal("an item freed behind the sweep was not found")
	}
}

// inSlab reports whether it is one of s's items.
func inSlab(s []dispatchcore.Item, it *dispatchcore.Item) bool {
	for k := range s {
		if &s[k] == it {
			return true
		}
	}
	return false
}

// TestArenaIndexNamesItsItem: an item's index, as a completion event
// carries it for the prefetch, leads back to the same item, in every
// slab; distinct items have distinct indexes; an item not in a slab has
// none.
func TestArenaIndexNamesItsItem(t *testing.T) {
	var a itemArena
	seen := map[uint32]bool{}
	for i := range 5000 { // several slabs
		it := a.get()
		idx := a.index(it)
		if idx == noItemIndex || seen[idx] {
			t.Fatalf("item %d (slab %d): index %#x is none or taken", i, refSlab(it), idx)
		}
		seen[idx] = true
		if got := a.at(idx); got != it {
			t.Fatalf("item %d (slab %d): at(index %#x) is another item", i, refSlab(it), idx)
		}
	}
	if len(a.slabs) < 3 {
		t.Fatalf("%d slabs, want several", len(a.slabs))
	}
	loose := &dispatchcore.Item{Ref: uint64(len(a.slabs)-1) << refSlabShift} // as get makes one past maxSlabs
	if idx := a.index(loose); idx != noItemIndex {
		t.Fatalf("an item outside every slab has index %#x, want none", idx)
	}
	if a.at(noItemIndex) != nil {
		t.Fatal("at(noItemIndex) is an item")
	}
}

// TestEventKeepsKindAndEpoch: an event's kind and epoch share a word; each
// comes back whole, the largest epoch included.
func TestEventKeepsKindAndEpoch(t *testing.T) {
	for _, k := range []evKind{evArrival, evComplete, evWake, evSample, evDown, evUp, evWrite, evAction, evReplay, evResume} {
		for _, epoch := range []uint32{0, 1, 1<<epochBits - 1} {
			ev := mkEvent(k, 7).withEpoch(epoch)
			if ev.kind() != k || ev.epoch() != epoch || ev.slot != 7 {
				t.Errorf("kind %d epoch %d: read back kind %d epoch %d", k, epoch, ev.kind(), ev.epoch())
			}
		}
		if ev := mkEvent(k, 3); ev.kind() != k || ev.epoch() != 0 || ev.slot != 3 {
			t.Errorf("mkEvent(%d, 3) = %+v", k, ev)
		}
	}
	if evResume >= 1<<(32-epochBits) {
		t.Fatalf("%d kinds do not fit %d bits", evResume+1, 32-epochBits)
	}
}
