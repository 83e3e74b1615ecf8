package drills

import (
	"strconv"
	"strings"
	"testing"
)

// hugeArrayDrills are drills of about 1 MB whose arrays hold far more
// elements than any ceiling allows: each must be refused by the scan
// before decoding, at the array's key and line.
func hugeArrayDrills() []struct{ name, text, key string } {
	head := "name = \"x\"\nduration = \"2s\"\n[source]\nrate = \"1/s\"\n"
	var partners, errs, status strings.Builder
	for i := 0; partners.Len() < MaxDrillBytes-200; i++ {
		partners.WriteString("[[partners]]\nname = \"a" + strconv.Itoa(i) + "\"\n")
	}
	for errs.Len() < MaxDrillBytes-200 {
		errs.WriteString("[[partners]]\nname = \"a\"\ncount = -1\nlatency = { dist = \"x\" }\n")
	}
	status.WriteString("[[partners]]\nname = \"a\"\n[policy.retry]\nretryable_status = [500")
	for status.Len() < MaxDrillBytes-200 {
		status.WriteString(",500")
	}
	status.WriteString("]\n")
	return []struct{ name, text, key string }{
		{"very many partners", head + partners.String(), "partners"},
		{"very many errors", head + errs.String(), "partners"},
		{"huge status list", head + status.String(), "policy.retry.retryable_status"},
	}
}

// A drill with very many partners, a huge status list or very many errors
// is refused while it is read, before its arrays are built: one error at
// the array's key and line, not one per element.
func TestHugeArraysRefusedWhileReading(t *testing.T) {
	for _, c := range hugeArrayDrills() {
		t.Run(c.name, func(t *testing.T) {
			if len(c.text) > MaxDrillBytes {
				t.Fatalf("test drill of %d bytes is over the file limit", len(c.text))
			}
			_, err := Parse("huge.toml", []byte(c.text))
			es, ok := AsErrors(err)
			if !ok || len(es) != 1 {
				t.Fatalf("got %v, want one error", err)
			}
			e := es[0]
			if e.Key != c.key || e.Line == 0 || !strings.Contains(e.Msg, "more than "+strconv.Itoa(MaxArrayElements)+" elements") {
				t.Fatalf("got %q, want huge.toml:LINE: %s: an array of more than %d elements", e, c.key, MaxArrayElements)
			}
		})
	}
	// At the bound the arrays are read, and the ceilings speak.
	var b strings.Builder
	b.WriteString("name = \"x\"\nduration = \"2s\"\n[source]\nrate = \"1/s\"\n[[partners]]\nname = \"a\"\n[policy.retry]\nretryable_status = [500")
	for i := 1; i < MaxArrayElements; i++ {
		b.WriteString(",500")
	}
	b.WriteString("]\n")
	if _, err := Parse("full.toml", []byte(b.String())); err == nil || !strings.Contains(err.Error(), "elements; at most 1000") {
		t.Fatalf("%d statuses: %v, want the array ceiling's refusal", MaxArrayElements, err)
	}
	// Nested arrays of tables count per parent element.
	var n strings.Builder
	n.WriteString("name = \"x\"\nduration = \"2s\"\n[source]\nrate = \"1/s\"\n")
	for i := 0; i < 3; i++ {
		n.WriteString("[[partners]]\nname = \"p" + strconv.Itoa(i) + "\"\n")
		for j := 0; j < MaxArrayElements/2; j++ {
			n.WriteString("[[partners.outages]]\n")
		}
	}
	if e := checkTOMLShape("n.toml", []byte(n.String())); e != nil {
		t.Fatalf("3 cohorts of %d outages each: %v", MaxArrayElements/2, e)
	}
}

// A ceiling cannot be raised past what the scan lets through.
func TestLimitAboveArrayBoundRefused(t *testing.T) {
	_, err := Parse("t.toml", []byte(validBase+"[limits]\narray = 20000\n"))
	if err == nil || !strings.Contains(err.Error(), "t.toml:8: limits.array: at most 10000") {
		t.Fatalf("got %v", err)
	}
}

// BenchmarkRefuseHugeArrays measures refusing each 1 MB drill of
// TestHugeArraysRefusedWhileReading: well under a second each.
func BenchmarkRefuseHugeArrays(b *testing.B) {
	for _, c := range hugeArrayDrills() {
		b.Run(strings.ReplaceAll(c.name, " ", "-"), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if _, err := Parse("huge.toml", []byte(c.text)); err == nil {
					b.Fatal("validated")
				}
			}
		})
	}
}
