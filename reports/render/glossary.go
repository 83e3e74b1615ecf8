package render

import (
	_ "embed"
	"html"
	"html/template"
	"regexp"
	"strings"
	"sync"
)

// glossaryText is the one source of the definitions of what the harness
// measures: docs/metrics.md's section "What the harness measures" is this text,
// and every report carries it as its Definitions section, so the links of
// a report resolve inside the report itself.
//
//go:embed glossary.md
var glossaryText string

// Definition is one entry of the glossary.
type Definition struct {
	Term       string   // "retry amplification"
	Anchor     string   // "retry-amplification", as GitHub slugs the heading
	Paragraphs []string // Markdown: inline `code` and *emphasis* only
}

// GlossaryMarkdown returns the glossary as Markdown, one "### term" heading
// per definition; docs/metrics.md carries it verbatim.
func GlossaryMarkdown() string { return glossaryText }

// glossary is glossaryText parsed once, on first use.
var glossary = sync.OnceValue(func() []Definition { return parseGlossary(glossaryText) })

func parseGlossary(text string) []Definition {
	var defs []Definition
	for _, block := range strings.Split(text, "\n\n") {
		block = strings.TrimSpace(block)
		if block == "" {
			continue
		}
		if term, ok := strings.CutPrefix(block, "### "); ok {
			defs = append(defs, Definition{Term: term, Anchor: headingSlug(term)})
			continue
		}
		if len(defs) > 0 {
			d := &defs[len(defs)-1]
			d.Paragraphs = append(d.Paragraphs, strings.Join(strings.Fields(block), " "))
		}
	}
	return defs
}

// headingSlug is the anchor GitHub (and most Markdown renderers) give a
// heading: lower case, spaces to hyphens, other punctuation dropped.
func headingSlug(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(s)) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') || r > 127:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// glossaryAnchors is the set of anchors the glossary defines.
func glossaryAnchors() map[string]bool {
	m := make(map[string]bool, len(glossary()))
	for _, d := range glossary() {
		m[d.Anchor] = true
	}
	return m
}

var (
	inlineCode = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile("`([^`]+)`") })
	inlineEm   = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\*([^*]+)\*`) })
)

// inlineHTML renders the glossary's inline Markdown (`code`, *emphasis*)
// as HTML; everything else is escaped.
func inlineHTML(md string) template.HTML {
	parts := inlineCode().Split(md, -1)
	codes := inlineCode().FindAllStringSubmatch(md, -1)
	var b strings.Builder
	for i, p := range parts {
		b.WriteString(inlineEm().ReplaceAllString(html.EscapeString(p), "<em>$1</em>"))
		if i < len(codes) {
			b.WriteString("<code>" + html.EscapeString(codes[i][1]) + "</code>")
		}
	}
	return template.HTML(b.String()) // built from escaped text and fixed tags only
}

// htmlDefinition is a Definition ready for the HTML template.
type htmlDefinition struct {
	Term, Anchor string
	Paragraphs   []template.HTML
}

func htmlGlossary() []htmlDefinition {
	out := make([]htmlDefinition, 0, len(glossary()))
	for _, d := range glossary() {
		hd := htmlDefinition{Term: d.Term, Anchor: d.Anchor}
		for _, p := range d.Paragraphs {
			hd.Paragraphs = append(hd.Paragraphs, inlineHTML(p))
		}
		out = append(out, hd)
	}
	return out
}
