package render

import (
	"os"
	"strings"
	"testing"
)

// TestMetricsDocCarriesTheGlossary: docs/metrics.md's "What the harness measures" is
// the glossary the reports carry, word for word, so the two cannot drift.
func TestMetricsDocCarriesTheGlossary(t *testing.T) {
	readme, err := os.ReadFile("../../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(readme)
	start := strings.Index(text, "## What the harness measures\n")
	if start < 0 {
		t.Fatal(`docs/metrics.md has no "## What the harness measures" section`)
	}
	section := text[start:]
	if end := strings.Index(section[3:], "\n## "); end >= 0 {
		section = section[:end+4]
	}
	if !strings.Contains(section, GlossaryMarkdown()) {
		t.Errorf("docs/metrics.md's \"What the harness measures\" differs from reports/render/glossary.md; copy the file into the section")
	}
}

func TestGlossaryDefinesEveryAnchorTheReportsLinkTo(t *testing.T) {
	defined := glossaryAnchors()
	for _, a := range []string{
		anchorDelivery, anchorAttempt, anchorAmplification, anchorDrain, anchorReadyAge, anchorDelayedAge,
		anchorHealthy, anchorDeadLettered, anchorLost, anchorDuplicates, anchorRetryAfter, anchorBackPressure,
		anchorBreaker, anchorTimeSeries, anchorLateness, anchorStatusCodes, anchorSeeds, anchorRetrySpread, anchorReplay,
	} {
		if !defined[a] {
			t.Errorf("no definition has the anchor %q", a)
		}
	}
	for _, d := range glossary() {
		if len(d.Paragraphs) == 0 {
			t.Errorf("definition %q has no text", d.Term)
		}
	}
}

func TestInlineHTMLEscapes(t *testing.T) {
	got := string(inlineHTML("a <b> `x<y` and *em* & `z`"))
	want := "a &lt;b&gt; <code>x&lt;y</code> and <em>em</em> &amp; <code>z</code>"
	if got != want {
		t.Errorf("inlineHTML = %q, want %q", got, want)
	}
}
