package external

import (
	"strings"
	"testing"

	"github.com/stormdrill/stormdrill/fakepartner"
)

// FuzzDeadLetterCommandOutput feeds arbitrary output of a system's
// dead_letter_command to the parser: it never panics, and every dead
// letter it takes has an id; what it refuses it says why.
func FuzzDeadLetterCommandOutput(f *testing.F) {
	for _, s := range []string{
		`{"id":"evt-1:acme-0","reason":"max-attempts","attempts":3}` + "\n",
		`[{"id":"evt-1:acme-0","reason":"permanent","attempts":1,"dead_at":"2026-01-01T00:00:00Z"}]`,
		"\n\n  \n", `[{"id":""}]`, `{"id":1}`, `[`, `{"id":"a"}` + "\n" + `not json`,
		`{"id":"a","dead_at":"9999-12-31T23:59:59Z"}`, strings.Repeat(`{"id":"x"}`+"\n", 100),
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, out string) {
		n := 0
		err := parseDeadLetters(strings.NewReader(out), func(d fakepartner.DeadLetter) {
			n++
			if d.ID == "" {
				t.Fatalf("took a dead letter without an id: %+v", d)
			}
		})
		if err != nil && err.Error() == "" {
			t.Fatal("an error that says nothing")
		}
		if n > len(out) {
			t.Fatalf("%d dead letters from %d bytes", n, len(out))
		}
	})
}
