//go:build !stormdrill_notuning

package sim

import (
	"testing"
	"unsafe"

	"github.com/stormdrill/stormdrill/model/dispatchcore"
)

// TestPaddedLayouts: the padded types fill whole cache lines, and an item's
// fields an attempt touches (those before PrevDelay, see
// dispatchcore.Item.Recycle) fit a slab item's first line.
func TestPaddedLayouts(t *testing.T) {
	for _, tt := range []struct {
		name       string
		size, unit uintptr
	}{
		{"subscriber", unsafe.Sizeof(subscriber{}), 64},
		{"simBreaker", unsafe.Sizeof(simBreaker{}), 64},
		{"slabItem", unsafe.Sizeof(slabItem{}), 128},
	} {
		if tt.size%tt.unit != 0 {
			t.Errorf("%s is %d bytes, not a multiple of %d", tt.name, tt.size, tt.unit)
		}
	}
	var it dispatchcore.Item
	if off := unsafe.Offsetof(it.PrevDelay); off > 64 {
		t.Errorf("PrevDelay at byte %d: an attempt's fields of an item outgrow a cache line", off)
	}
}
