package sim

import (
	"testing"

	"github.com/stormdrill/stormdrill/model/dispatchcore"
)

// TestArenaReusesFreedItems: items taken back are handed out again, zero,
// before any new one, across slabs; nothing handed out twice at once.
func TestArenaReusesFreedItems(t *testing.T) {
	var a itemArena
	const n = 5000 // several slabs (the first holds 512)
	out := make([]*dispatchcore.Item, n)
	seen := map[*dispatchcore.Item]bool{}
	for i := range out {
		out[i] = a.get()
		if seen[out[i]] {
			t.Fatalf("item %d handed out twice", i)
		}
		seen[out[i]] = true
		out[i].RunAt, out[i].Key, out[i].ID, out[i].Accepted = int64(i+1), 99, "x", true
	}
	if len(a.slabs) < 3 {
		t.Fatalf("%d slabs for %d items, want several", len(a.slabs), n)
	}
	// Take back every third one, from every slab.
	var back []*dispatchcore.Item
	for i := 0; i < n; i += 3 {
		a.put(out[i])
		back = append(back, out[i])
	}
	if a.nfree != len(back) {
		t.Fatalf("%d on the free list, want %d", a.nfree, len(back))
	}
	made := a.made
	for k := len(back) - 1; k >= 0; k-- { // last freed, first reused
		it := a.get()
		if it != back[k] {
			t.Fatalf("get %d returned an item not freed last", k)
		}
		if tag := it.Tag; *it != (dispatchcore.Item{Tag: tag}) {
			t.Fatalf("reused item not zero: %+v", *it)
		}
	}
	if a.made != made || a.nfree != 0 || a.free != 0 {
		t.Fatalf("after reusing every freed item: made %d → %d, %d free, head %d", made, a.made, a.nfree, a.free)
	}
	if it := a.get(); seen[it] {
		t.Fatal("a new item after the free list emptied was one already handed out")
	}
}
