//go:build race

package dispatchcore

// raceEnabled: the race detector allocates on its own, so allocation counts
// are not meaningful under it.
const raceEnabled = true
