//go:build !stormdrill_notuning

package sim

import (
	"testing"
	"unsafe"
)

// TestPaddedLayouts: the padded types fill whole cache lines.
func TestPaddedLayouts(t *testing.T) {
	for _, tt := range []struct {
		name       string
		size, unit uintptr
	}{
		{"subscriber", unsafe.Sizeof(subscriber{}), 64},
		{"simBreaker", unsafe.Sizeof(simBreaker{}), 64},
	} {
		if tt.size%tt.unit != 0 {
			t.Errorf("%s is %d bytes, not a multiple of %d", tt.name, tt.size, tt.unit)
		}
	}
}
