// Package drills is the drill format: strict TOML decoding with FILE:LINE
// errors, validation, includes, the key reference table, and what every
// runner shares (the arrival schedule, the fan-out, the tally a drill
// configures, delivery ids). The runners that turn a drill into a summary
// are packages of their own: drills/sim, drills/live and drills/external.
// The bundled drills (*.toml here) are embedded, so Load takes their bare
// names in a binary installed without a checkout.
package drills
