package model

// MaxNameLen is the longest name ValidName accepts.
const MaxNameLen = 100

// ValidName reports whether s can name a drill or a partner: 1 to
// MaxNameLen characters of A-Z a-z 0-9 . _ -, starting with a letter or
// digit. Names become directory names and metric labels, so nothing else
// is let through. A loop rather than a regexp: every drill load checks
// names, and a bounded repetition ({0,99}) compiles to a 42 kB program.
func ValidName(s string) bool {
	if len(s) == 0 || len(s) > MaxNameLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z', '0' <= c && c <= '9':
		case i > 0 && (c == '.' || c == '_' || c == '-'):
		default:
			return false
		}
	}
	return true
}
