package model

import (
	"strings"
	"testing"
)

func TestBudgetArithmetic(t *testing.T) {
	tests := []struct {
		max, ratio float64
		ops        string // f: failure, s: success, in order
		wantTokens float64
		wantAllow  bool
		why        string
	}{
		{10, 0.1, "", 10, true, "starts full"},
		{10, 0.1, "s", 10, true, "success on a full bucket: stays at max"},
		{10, 0.1, "f", 9, true, "a failure takes one"},
		{10, 0.1, "ffff", 6, true, "6 > 5: allowed"},
		{10, 0.1, "fffff", 5, false, "exactly half: refused (strictly greater)"},
		{10, 0.1, "fffffs", 5.1, true, "a success lifts it over half"},
		{10, 0.1, strings.Repeat("f", 20), 0, false, "never below zero"},
		{10, 0.1, strings.Repeat("f", 20) + strings.Repeat("s", 50), 5, false, "50 × 0.1 from zero: exactly half"},
		{10, 0.1, strings.Repeat("f", 20) + strings.Repeat("s", 51), 5.1, true, "one more success: allowed"},
		{10, 0.1, strings.Repeat("fs", 10), 1, false, "each fs pair nets -0.9: 10 - 9 = 1"},
		{3, 1, "ff", 1, false, "1 <= 1.5"},
		{3, 1, "ffs", 2, true, "2 > 1.5"},
		{5, 0.5, "fff", 2, false, "odd max: threshold 2.5"},
		{5, 0.5, "fffs", 2.5, false, "2.5 is not > 2.5"},
		{5, 0.5, "fffss", 3, true, "3 > 2.5"},
		{100, 0.001, "fs", 99.001, true, "ratio with three decimals is exact"},
	}
	for _, tt := range tests {
		b := NewBudget(tt.max, tt.ratio)
		for _, op := range tt.ops {
			if op == 'f' {
				b.RecordFailure()
			} else {
				b.RecordSuccess()
			}
		}
		if got := b.Tokens(); got != tt.wantTokens {
			t.Errorf("max=%v ratio=%v %q (%s): tokens %v, want %v", tt.max, tt.ratio, tt.ops, tt.why, got, tt.wantTokens)
		}
		if got := b.AllowRetry(); got != tt.wantAllow {
			t.Errorf("max=%v ratio=%v %q (%s): allow %v, want %v", tt.max, tt.ratio, tt.ops, tt.why, got, tt.wantAllow)
		}
	}
}
