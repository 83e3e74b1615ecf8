package reports

import (
	"strconv"
	"strings"
)

// GroupDigits writes n with thousands separators: 12,345.
func GroupDigits(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// OneLine keeps table cells on one line and bounded in length.
func OneLine(s string) string {
	const maxCell = 200
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > maxCell {
		cut := maxCell
		for cut > 0 && !utf8Start(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }
