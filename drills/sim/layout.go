//go:build !stormdrill_notuning

package sim

import (
	"math/rand/v2"
	"unsafe"

	"github.com/stormdrill/stormdrill/fakepartner"
	"github.com/stormdrill/stormdrill/model"
)

// The simulator's padded layouts (tuning on; layout_plain.go has the same
// types unpadded, for the build tag stormdrill_notuning).

// subscriber is one subscriber's state, its simulated partner and random
// stream included, in one piece: an attempt reads it all, and at tens of
// thousands of subscribers separate slices (or pointers between them) cost
// a cache and TLB miss each, one after the other. The fields an attempt
// reads come first, the partner's hot fields right after them
// (subscriberHot), and the struct is padded to a multiple of 64 bytes, so
// that in a cache-line aligned slice they fill as few cache lines as they
// can. What a new delivery needs of it (cohort, member, bad data, name) is
// in simRun's per-cohort tables and names, so that creating a delivery
// does not read it.
type subscriber struct {
	pcg     rand.PCG        // the partner's random stream; rng draws from it
	rng     rand.Rand       // reads pcg
	partner fakepartner.Sim // not copied once initialised: subs never grows
	_       [subscriberPad]byte
}

// subscriberPad pads a subscriber to a multiple of 64 bytes; 32 is the
// partner's offset (checked by the array below, which does not compile
// otherwise).
const subscriberPad = (64 - (32+unsafe.Sizeof(fakepartner.Sim{}))%64) % 64

var _ [0]struct{} = [unsafe.Offsetof(subscriber{}.partner) - 32 + unsafe.Sizeof(subscriber{})%64]struct{}{}

// simBreaker is a breaker in a cache-line aligned slice of them, where each
// breaker's first fields (what an attempt on a closed breaker reads) share
// its first cache line. model.Breaker is itself a multiple of 64 bytes, so
// it needs no pad (checked by the array below, which does not compile
// otherwise): a trailing zero-length pad would add 8 bytes.
type simBreaker struct{ model.Breaker }

var _ [0]struct{} = [unsafe.Sizeof(model.Breaker{}) % 64]struct{}{}
