//go:build stormdrill_notuning

package sim

import (
	"math/rand/v2"

	"github.com/stormdrill/stormdrill/fakepartner"
	"github.com/stormdrill/stormdrill/model"
)

// The simulator's layouts with tuning off: layout.go's types, unpadded.

// subscriber is one subscriber's state, its simulated partner and random
// stream included.
type subscriber struct {
	pcg     rand.PCG        // the partner's random stream; rng draws from it
	rng     rand.Rand       // reads pcg
	partner fakepartner.Sim // not copied once initialised: subs never grows
}

// simBreaker is a breaker in the simulator's slice of them.
type simBreaker struct{ model.Breaker }
