//go:build race

package live

// raceEnabled: the race detector slows the dispatcher several times over,
// and at speed 20 every wall millisecond is 20ms of drill time.
const raceEnabled = true
