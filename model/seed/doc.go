// Package seed derives the random stream of each named component of a
// drill from the drill's one seed (SplitMix64 over an FNV-1a hash of the
// name), so that adding a partner does not reshuffle every other stream.
package seed
