//go:build race

package main

// raceEnabled: under the race detector the dispatcher child runs several
// times slower, and a live drill at speed 20 measures that, not the policy.
const raceEnabled = true
