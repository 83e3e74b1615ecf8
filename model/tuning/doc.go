// Package tuning holds the CPU hints the simulator may use: huge pages for
// large slices and prefetch of memory it is about to touch. They change how
// fast a run is, never what it computes.
package tuning
