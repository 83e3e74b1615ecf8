// Package tuning holds the CPU hints the simulator (drills/sim) turns on:
// huge pages for its large slices and prefetch of memory it is about to
// touch. They change how fast a run is, never what it computes. Only the
// simulator imports it; the pure model and the live dispatcher do not.
//
// Built with the tag stormdrill_notuning, every hint does nothing (On is
// false) and the simulator lays its state out plainly, with the same
// results byte for byte:
//
//	go build -tags stormdrill_notuning ./cmd/stormdrill
package tuning
