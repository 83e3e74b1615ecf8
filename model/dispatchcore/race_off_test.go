//go:build !race

package dispatchcore

const raceEnabled = false
