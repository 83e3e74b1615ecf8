package render

import (
	"html"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var (
	mdLinkRe     = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	mdHeadingRe  = regexp.MustCompile(`(?m)^#{1,6} (.+)$`)
	htmlHrefRe   = regexp.MustCompile(`(?:href|src)="([^"]*)"`)
	htmlIDRe     = regexp.MustCompile(`\sid="([^"]+)"`)
	mdLinkTextRe = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
)

// deadMarkdownLinks lists the links of a report.md that lead nowhere: an
// anchor no heading of the page has, or a file not in dir. Links that
// leave the page for the network count as dead: the report must stand
// alone.
func deadMarkdownLinks(md, dir string) []string {
	anchors := map[string]bool{}
	for _, m := range mdHeadingRe.FindAllStringSubmatch(md, -1) {
		anchors[headingSlug(mdLinkTextRe.ReplaceAllString(m[1], "$1"))] = true
	}
	var dead []string
	for _, m := range mdLinkRe.FindAllStringSubmatch(md, -1) {
		target := m[1]
		switch {
		case strings.HasPrefix(target, "#"):
			if !anchors[target[1:]] {
				dead = append(dead, target)
			}
		case strings.Contains(target, ":"):
			dead = append(dead, target+" (leaves the report)")
		default:
			name := strings.NewReplacer("%20", " ", "%28", "(", "%29", ")").Replace(target)
			if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
				dead = append(dead, target)
			}
		}
	}
	return dead
}

// deadHTMLLinks lists the href and src values of a report.html that lead
// nowhere: an in-page anchor without its id, or anything but an in-page
// anchor or a data: URI.
func deadHTMLLinks(page string) []string {
	ids := map[string]bool{}
	for _, m := range htmlIDRe.FindAllStringSubmatch(page, -1) {
		ids[html.UnescapeString(m[1])] = true
	}
	var dead []string
	for _, m := range htmlHrefRe.FindAllStringSubmatch(page, -1) {
		target := html.UnescapeString(m[1])
		switch {
		case strings.HasPrefix(target, "#"):
			if !ids[target[1:]] {
				dead = append(dead, target)
			}
		case strings.HasPrefix(target, "data:"):
		default:
			dead = append(dead, target+" (not inside the page)")
		}
	}
	return dead
}

// TestReportsHaveNoDeadLinks writes the fixture run's files and follows
// every link of report.md and report.html.
func TestReportsHaveNoDeadLinks(t *testing.T) {
	run := browserRun(t)
	dir := t.TempDir()
	if err := WriteRunFiles(dir, run); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(mdLinkRe.FindAllString(string(md), -1)); n < 20 {
		t.Fatalf("report.md has %d links; the check needs the glossary links to mean anything", n)
	}
	for _, d := range deadMarkdownLinks(string(md), dir) {
		t.Errorf("report.md: dead link %s", d)
	}
	page, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range deadHTMLLinks(string(page)) {
		t.Errorf("report.html: dead link %s", d)
	}
}

// TestDeadLinkCheckersFindDeadLinks: the checkers are not blind.
func TestDeadLinkCheckersFindDeadLinks(t *testing.T) {
	md := "## Here\n\n[a](#here) [b](#nowhere) [c](missing.png) [d](README.md#lost) [e](https://example.com)\n"
	if got := deadMarkdownLinks(md, t.TempDir()); len(got) != 4 {
		t.Errorf("markdown: found %q, want 4 dead links", got)
	}
	page := `<h2 id="here">x</h2><a href="#here">a</a><a href="#nowhere">b</a><a href="README.md#lost">c</a><img src="data:image/png;base64,AA">`
	if got := deadHTMLLinks(page); len(got) != 2 {
		t.Errorf("html: found %q, want 2 dead links", got)
	}
}
