//go:build !stormdrill_notuning

package tuning

// On is whether tuning is built in: false under the build tag
// stormdrill_notuning, which makes every hint here do nothing and the
// simulator use its plain layouts.
const On = true
