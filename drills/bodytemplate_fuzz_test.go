package drills

import (
	"strings"
	"testing"
)

// FuzzBodyTemplate renders arbitrary body templates on the sample event, as
// validate does: never a panic, never more than MaxRenderedBody bytes, and a
// template validate accepts renders the same bytes on every try.
func FuzzBodyTemplate(f *testing.F) {
	for _, s := range []string{
		`{{json .}}`, `{"id":{{json .EventID}},"n":{{len .Deliveries}}}`,
		`{{range .Deliveries}}{{.ID}} {{.URL}}{{end}}`, `{{.Nope}}`, `{{index .Deliveries 3}}`,
		`{{template "x"}}`, `{{define "x"}}{{template "x"}}{{end}}{{template "x"}}`,
		`{{printf "%0999999d" 1}}`, `{{json .Payload}}`, `{{.Created.Unix}}`, `{{`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		if len(text) > limSystemTemplate {
			return
		}
		out, err := RenderSample(text)
		if err != nil {
			if strings.TrimSpace(err.Error()) == "" {
				t.Fatal("an error that says nothing")
			}
			return
		}
		if len(out) > MaxRenderedBody {
			t.Fatalf("rendered %d bytes", len(out))
		}
		again, err := RenderSample(text)
		if err != nil || string(again) != string(out) {
			t.Fatalf("a second rendering gave %q, %v; the first %q", again, err, out)
		}
	})
}
