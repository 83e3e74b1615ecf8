package model

import (
	"strings"
	"testing"
)

// TestValidName holds the rule drill and partner names follow at its edges:
// 1 to 100 characters of A-Z a-z 0-9 . _ -, starting with a letter or digit.
func TestValidName(t *testing.T) {
	cases := []struct {
		name string
		want bool
	}{
		{"a", true},
		{"Fanout-outage_2.v1", true},
		{"9lives", true},
		{strings.Repeat("a", 100), true},
		{strings.Repeat("a", 101), false},
		{"", false},
		{".hidden", false},
		{"-flag", false},
		{"_x", false},
		{"a b", false},
		{"a/b", false},
		{"a\n", false},
		{"café", false},
		{strings.Repeat("é", 50), false},
	}
	for _, c := range cases {
		if got := ValidName(c.name); got != c.want {
			t.Errorf("ValidName(%q) = %v, want %v", c.name, got, c.want)
		}
	}
}
