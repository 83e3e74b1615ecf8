package drills

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/stormdrill/stormdrill/model"
)

// Duration is a duration written with its unit (model.Duration).
type Duration = model.Duration

// ParseDuration parses a duration that must carry a unit and must not be
// negative (model.ParseDuration).
func ParseDuration(s string) (time.Duration, error) { return model.ParseDuration(s) }

// Rate is a TOML string such as "12/s", "600/m" or "5/h", in events per
// second once decoded.
type Rate struct {
	PerSecond float64
	Set       bool
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (r *Rate) UnmarshalText(b []byte) error {
	v, err := ParseRate(string(b))
	if err != nil {
		return err
	}
	r.PerSecond, r.Set = v, true
	return nil
}

// MarshalText implements encoding.TextMarshaler.
func (r Rate) MarshalText() ([]byte, error) {
	return []byte(strconv.FormatFloat(r.PerSecond, 'g', -1, 64) + "/s"), nil
}

// ParseRate parses "N/s", "N/m" or "N/h" into events per second.
func ParseRate(s string) (float64, error) {
	s = strings.TrimSpace(s)
	num, unit, ok := strings.Cut(s, "/")
	if !ok {
		return 0, fmt.Errorf("rate %q has no unit; write it like \"12/s\", \"600/m\" or \"5/h\"", s)
	}
	n, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
	if err != nil || math.IsNaN(n) || math.IsInf(n, 0) {
		return 0, fmt.Errorf("bad rate %q: want a number before the slash", s)
	}
	if n < 0 {
		return 0, fmt.Errorf("rate %q is negative", s)
	}
	var v float64
	switch strings.TrimSpace(unit) {
	case "s":
		v = n
	case "m":
		v = n / 60
	case "h":
		v = n / 3600
	default:
		return 0, fmt.Errorf("bad rate unit in %q: want /s, /m or /h", s)
	}
	if v > MaxRatePerSecond {
		return 0, fmt.Errorf("rate %q is above %g/s, the most any rate may be", s, float64(MaxRatePerSecond))
	}
	return v, nil
}
