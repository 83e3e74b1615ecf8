package sim

import "github.com/stormdrill/stormdrill/model/dispatchcore"

// An item's Ref (dispatchcore.Item.Ref) is the simulator's one word on it:
//   - bit 0: the partner has accepted the delivery once (a second
//     acceptance is a duplicate);
//   - bits 1-10: the index of the arena slab that holds the item;
//   - bits 11-63: its data draw (fakepartner.DataDraw), 53 bits, which
//     decides with its cohort's permanent-error rate whether it carries bad
//     data, on every attempt.
//
// Three fields of their own took 11 bytes; in one word the item is 48 bytes
// instead of 64, and at millions pending that is most of what it saves.
const (
	refAccepted  = 1
	refSlabShift = 1
	refSlabBits  = 10
	refDrawShift = refSlabShift + refSlabBits
)

// refSlab is the index of the slab that holds it.
func refSlab(it *dispatchcore.Item) int {
	return int(it.Ref >> refSlabShift & (1<<refSlabBits - 1))
}

// refDraw is its data draw.
func refDraw(it *dispatchcore.Item) uint64 { return it.Ref >> refDrawShift }

// accepted reports whether the partner has accepted it once.
func accepted(it *dispatchcore.Item) bool { return it.Ref&refAccepted != 0 }

// setAccepted records that the partner has accepted it.
func setAccepted(it *dispatchcore.Item) { it.Ref |= refAccepted }
