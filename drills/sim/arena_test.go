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
