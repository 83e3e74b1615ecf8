package model

import (
	"testing"
	"time"
)

// raNow is a Sunday; every date in the tables is relative to it.
var raNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func TestParseRetryAfter(t *testing.T) {
	tests := []struct {
		v      string
		now    time.Time
		want   time.Duration
		wantOK bool
		why    string
	}{
		{"120", raNow, 2 * time.Minute, true, "delta-seconds"},
		{"0", raNow, 0, true, "zero: retry now"},
		{"  120\t", raNow, 2 * time.Minute, true, "surrounding whitespace trimmed"},
		{"0000120", raNow, 2 * time.Minute, true, "leading zeros"},
		{"86400", raNow, 24 * time.Hour, true, "exactly RetryAfterAbsurd is trusted"},
		{"86401", raNow, 0, false, "one second over RetryAfterAbsurd: absurd"},
		{"99999999999999999999999999", raNow, 0, false, "huge digits overflow uint64: ignored"},
		{"18446744073709551615", raNow, 0, false, "MaxUint64 seconds: absurd"},
		{"-5", raNow, 0, false, "negative delta"},
		{"+5", raNow, 0, false, "sign is not delta-seconds"},
		{"1.5", raNow, 0, false, "fraction is not delta-seconds"},
		{"12a", raNow, 0, false, "trailing garbage"},
		{"1 20", raNow, 0, false, "inner space"},
		{"0x10", raNow, 0, false, "hex"},
		{"١٢", raNow, 0, false, "non-ASCII digits"},
		{"", raNow, 0, false, "empty"},
		{"   ", raNow, 0, false, "only whitespace"},
		{"soon", raNow, 0, false, "garbage"},
		{"Sun, 01 Mar 2026 12:02:00 GMT", raNow, 2 * time.Minute, true, "IMF-fixdate"},
		{"Sunday, 01-Mar-26 12:02:00 GMT", raNow, 2 * time.Minute, true, "obsolete RFC 850"},
		{"Sun Mar  1 12:02:00 2026", raNow, 2 * time.Minute, true, "asctime, space-padded day"},
		{"Sun, 01 Mar 2026 12:00:00 GMT", raNow, 0, true, "date equal to now: zero"},
		{"Sun, 01 Mar 2026 12:00:00 GMT", raNow.Add(500 * time.Millisecond), 0, false, "half a second in the past: negative"},
		{"Sun, 01 Mar 2026 11:59:00 GMT", raNow, 0, false, "past date"},
		{"Sun, 06 Nov 1994 08:49:37 GMT", raNow, 0, false, "RFC example date, long past"},
		{"Mon, 02 Mar 2026 12:00:00 GMT", raNow, 24 * time.Hour, true, "a day ahead: the limit"},
		{"Mon, 02 Mar 2026 12:00:01 GMT", raNow, 0, false, "a day and a second ahead: absurd"},
		{"Fri, 31 Dec 9999 23:59:59 GMT", raNow, 0, false, "year 9999: absurd, no overflow"},
		{"Sun, 01 Mar 2026 12:02:00 PST", raNow, 0, false, "HTTP-dates are GMT only"},
		{"Sun, 01 Mar 2026 12:02:00", raNow, 0, false, "no zone"},
		{"2026-03-01T12:02:00Z", raNow, 0, false, "RFC 3339 is not an HTTP-date"},
		{"Sun, 32 Mar 2026 12:02:00 GMT", raNow, 0, false, "day 32"},
	}
	for _, tt := range tests {
		got, ok := ParseRetryAfter(tt.v, tt.now)
		if got != tt.want || ok != tt.wantOK {
			t.Errorf("ParseRetryAfter(%q) (%s): got %v, %v; want %v, %v", tt.v, tt.why, got, ok, tt.want, tt.wantOK)
		}
	}
}

// FuzzParseRetryAfter: never panics, ok implies 0 <= d <= RetryAfterAbsurd,
// and not ok returns 0. More seeds are in testdata/fuzz.
func FuzzParseRetryAfter(f *testing.F) {
	for _, s := range []string{
		"120", "0", "86400", "86401", "-1", "99999999999999999999999", "1.5", "",
		"Sun, 01 Mar 2026 12:02:00 GMT",
		"Sunday, 01-Mar-26 12:02:00 GMT",
		"Sun Mar  1 12:02:00 2026",
		"Sun, 06 Nov 1994 08:49:37 GMT",
		"Fri, 31 Dec 9999 23:59:59 GMT",
		"\x00\xff garbage ☃",
	} {
		f.Add(s, int64(0))
	}
	f.Fuzz(func(t *testing.T, v string, offsetSec int64) {
		now := raNow.Add(time.Duration(offsetSec%(400*24*3600)) * time.Second)
		d, ok := ParseRetryAfter(v, now)
		if ok && (d < 0 || d > RetryAfterAbsurd) {
			t.Fatalf("ParseRetryAfter(%q) = %v, true: outside [0, %v]", v, d, RetryAfterAbsurd)
		}
		if !ok && d != 0 {
			t.Fatalf("ParseRetryAfter(%q) = %v, false: want 0 when not ok", v, d)
		}
		if d2, ok2 := ParseRetryAfter(v, now); d2 != d || ok2 != ok {
			t.Fatalf("ParseRetryAfter(%q) not deterministic", v)
		}
	})
}
