//go:build race

package external

const raceEnabled = true
