//go:build !race

package external

const raceEnabled = false
