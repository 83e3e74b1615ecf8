package model

import (
	"strconv"
	"strings"
	"time"
)

// RetryAfterAbsurd is the longest Retry-After trusted. A partner asking for
// more than a day is broken or hostile; the value is ignored and counted.
const RetryAfterAbsurd = 24 * time.Hour

// httpDateLayouts are the three HTTP-date forms of RFC 9110 §5.6.7.
var httpDateLayouts = [...]string{
	"Mon, 02 Jan 2006 15:04:05 GMT",  // IMF-fixdate
	"Monday, 02-Jan-06 15:04:05 GMT", // obsolete RFC 850
	"Mon Jan _2 15:04:05 2006",       // ANSI C asctime()
}

// ParseRetryAfter parses a Retry-After value, delta-seconds or HTTP-date
// (relative to now). ok is false for a value that is empty, unparseable,
// negative (a date in the past included) or longer than RetryAfterAbsurd:
// such a value is never trusted.
func ParseRetryAfter(v string, now time.Time) (d time.Duration, ok bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if v[0] >= '0' && v[0] <= '9' {
		for i := 0; i < len(v); i++ {
			if v[i] < '0' || v[i] > '9' {
				return 0, false
			}
		}
		secs, err := strconv.ParseUint(v, 10, 64)
		if err != nil || secs > uint64(RetryAfterAbsurd/time.Second) {
			return 0, false
		}
		return time.Duration(secs) * time.Second, true
	}
	for _, layout := range httpDateLayouts {
		t, err := time.Parse(layout, v)
		if err != nil {
			continue
		}
		d := t.Sub(now)
		if d < 0 || d > RetryAfterAbsurd {
			return 0, false
		}
		return d, true
	}
	return 0, false
}
