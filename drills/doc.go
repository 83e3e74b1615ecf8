// Package drills is the drill format and its runners: strict TOML decoding
// with FILE:LINE errors, validation, includes, the key reference table, and
// the simulated and live runners that turn a drill into a summary.
package drills
