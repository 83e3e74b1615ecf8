package model

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Duration is a duration written as text with its unit ("250ms", "2s",
// "30m", "1d"), in a TOML drill and in the dispatcher's JSON alike. A unit
// is required and negative values are refused.
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
