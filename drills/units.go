package drills

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Duration is a TOML string such as "250ms", "2s" or "30m". A unit is
// required and negative values are refused.
type Duration struct {
	D   time.Duration
	Set bool // present in the file
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := ParseDuration(string(b))
	if err != nil {
		return err
	}
	d.D, d.Set = v, true
	return nil
}

// MarshalText implements encoding.TextMarshaler.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.D.String()), nil }

// ParseDuration parses a duration that must carry a unit and must not be
// negative. Besides Go's units it accepts "d" for days.
func ParseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, fmt.Errorf("empty duration; write it with a unit, like \"250ms\" or \"2s\"")
	}
	if _, err := strconv.ParseFloat(s, 64); err == nil {
		return 0, fmt.Errorf("duration %q has no unit; write it like \"%ss\" or \"%sms\"", s, s, s)
	}
	if strings.HasPrefix(s, "-") {
		return 0, fmt.Errorf("duration %q is negative", s)
	}
	if strings.HasSuffix(s, "d") {
		n, err := strconv.ParseFloat(strings.TrimSuffix(s, "d"), 64)
		if err != nil || !(n >= 0) || n*24 > float64(math.MaxInt64)/float64(time.Hour) { // !(n >= 0) also refuses NaN
			return 0, fmt.Errorf("bad duration %q", s)
		}
		return time.Duration(n * 24 * float64(time.Hour)), nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("bad duration %q: want a number with a unit (ns, us, ms, s, m, h, d), at most about 290 years", s)
	}
	return v, nil
}

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
