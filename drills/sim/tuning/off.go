//go:build stormdrill_notuning

package tuning

// On is whether tuning is built in (see on.go).
const On = false
