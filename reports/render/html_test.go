package render

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"regexp"
	"strings"
	"testing"

	"github.com/stormdrill/stormdrill/reports/internal/fixture"
)

// fakePlotFiles serves plot files from memory.
func fakePlotFiles(files map[string]string) func(string) ([]byte, error) {
	return func(name string) ([]byte, error) {
		if s, ok := files[name]; ok {
			return []byte(s), nil
		}
		return nil, errors.New("no such file")
	}
}

const tinySVG = `<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg" width="400" height="300" viewBox="0 0 400 300"><rect width="400" height="300" fill="#eee"/></svg>`

func renderHTML(t *testing.T, files map[string]string) string {
	t.Helper()
	run := fixture.Run(t)
	return string(render(t, func(b *bytes.Buffer) error { return WriteHTML(b, run, fixturePlots, fakePlotFiles(files)) }))
}

func TestHTMLSelfContained(t *testing.T) {
	page := renderHTML(t, map[string]string{"attempts.svg": tinySVG, "healthy latency.png": "\x89PNG\r\n\x1a\nfake"})
	if !strings.Contains(page, `id="gates"`) {
		t.Error(`no id="gates"`)
	}
	// No src or href that fetches from the network; scripts only inline
	// (the chart data, the vendored uPlot and the script that draws).
	external := regexp.MustCompile(`(?i)(src|href)\s*=\s*"\s*(https?:)?//`)
	if m := external.FindString(page); m != "" {
		t.Errorf("external reference %q", m)
	}
	for _, banned := range []string{"<link", "@import", "url(", "fetch(", "xmlhttprequest", "<iframe"} {
		if strings.Contains(strings.ToLower(page), banned) {
			t.Errorf("page contains %q", banned)
		}
	}
	scripts := regexp.MustCompile(`<script[^>]*>`).FindAllString(page, -1)
	if len(scripts) != 3 {
		t.Errorf("%d <script> elements, want 3 inline ones: %q", len(scripts), scripts)
	}
	for _, tag := range scripts {
		if strings.Contains(tag, "src") {
			t.Errorf("script %q loads a file", tag)
		}
	}
	if !strings.Contains(page, `<div class="chart" id="chart-attempts"`) || !strings.Contains(page, "<noscript><img ") {
		t.Error("the attempts plot is not an interactive chart with a <noscript> image")
	}
	// The SVG plot is embedded as an SVG, the other falls back to its PNG.
	if !strings.Contains(page, `src="data:image/svg+xml;base64,`) || !strings.Contains(page, `src="data:image/png;base64,`) {
		t.Error("plots are not embedded as data: URIs")
	}
	if strings.Count(page, "<img ") != 2 {
		t.Errorf("%d images, want 2", strings.Count(page, "<img "))
	}
}

func TestHTMLMissingPlotIsANote(t *testing.T) {
	page := renderHTML(t, map[string]string{"attempts.svg": "not an svg"})
	if strings.Contains(page, "<img ") {
		t.Error("an unreadable plot became an image")
	}
	if !strings.Contains(page, "plot not embedded") {
		t.Error("no note for the missing plot")
	}
}

func TestHTMLIsWellFormed(t *testing.T) {
	// The page is written as XHTML-compatible markup apart from the doctype
	// and void elements, so an XML tokenizer in non-strict mode must get
	// through it; this catches unbalanced tags in the template.
	page := renderHTML(t, map[string]string{"attempts.svg": tinySVG})
	page = strings.TrimPrefix(page, "<!DOCTYPE html>")
	// Script and style text is not markup; the browser test runs it.
	page = regexp.MustCompile(`(?s)(<script[^>]*>).*?(</script>)`).ReplaceAllString(page, "$1$2")
	page = regexp.MustCompile(`(?s)(<style[^>]*>).*?(</style>)`).ReplaceAllString(page, "$1$2")
	d := xml.NewDecoder(strings.NewReader(page))
	d.Strict = false
	d.AutoClose = xml.HTMLAutoClose
	d.Entity = xml.HTMLEntity
	var stack []string
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("page does not tokenize: %v", err)
		}
		switch el := tok.(type) {
		case xml.StartElement:
			stack = append(stack, el.Name.Local)
		case xml.EndElement:
			if len(stack) == 0 || stack[len(stack)-1] != el.Name.Local {
				t.Fatalf("unbalanced </%s>, open: %v", el.Name.Local, stack)
			}
			stack = stack[:len(stack)-1]
		}
	}
	if len(stack) != 0 {
		t.Errorf("unclosed elements: %v", stack)
	}
}

func TestHTMLEscapes(t *testing.T) {
	run := fixture.Run(t)
	run.Summary.Drill = `<script>alert(1)</script>`
	page := string(render(t, func(b *bytes.Buffer) error { return WriteHTML(b, run, nil, nil) }))
	if strings.Contains(page, "<script>alert") {
		t.Error("drill name is not escaped")
	}
}

func TestIndex(t *testing.T) {
	entries := []IndexEntry{
		{Name: "fanout-outage", Dir: "fanout-outage", Pass: false, Verdict: "FAIL: 1 of 3 gates failed"},
		{Name: "healthy", Dir: "healthy", Pass: true, Verdict: "PASS: all 2 gates hold"},
	}
	page := string(render(t, func(b *bytes.Buffer) error { return WriteIndex(b, entries) }))
	for _, want := range []string{`href="fanout-outage/report.html"`, `href="healthy/report.md"`, "1 passed, 1 failed", "FAIL: 1 of 3 gates failed"} {
		if !strings.Contains(page, want) {
			t.Errorf("index lacks %q", want)
		}
	}
	if strings.Contains(page, "http") {
		t.Error("index references the network")
	}
}
