package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

var (
	docLinkRe    = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	docHeadingRe = regexp.MustCompile(`^#{1,6} (.+)$`)
	docLinkText  = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
)

// docFiles are the project's Markdown documents: README.md and docs/*.md,
// as paths relative to the repository root.
func docFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no docs/*.md")
	}
	return append([]string{"../../README.md"}, files...)
}

// markdownOutsideFences returns the lines of md that are not inside a
// fenced code block: a heading or a link in a code block is an example.
func markdownOutsideFences(md string) []string {
	var out []string
	fenced := false
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if !fenced {
			out = append(out, line)
		}
	}
	return out
}

// headingAnchor is the anchor GitHub gives a heading: lower case, spaces
// as hyphens, punctuation other than - and _ dropped, inline code and link
// syntax read as their text.
func headingAnchor(heading string) string {
	heading = docLinkText.ReplaceAllString(heading, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// markdownAnchors is the set of heading anchors of one document, with
// GitHub's -1, -2 … for repeated headings.
func markdownAnchors(md string) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	for _, line := range markdownOutsideFences(md) {
		m := docHeadingRe.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		a := headingAnchor(m[1])
		if n := seen[a]; n > 0 {
			anchors[a+"-"+strconv.Itoa(n)] = true
		} else {
			anchors[a] = true
		}
		seen[a]++
	}
	return anchors
}

// deadDocLinks lists the relative links of the document at path that lead
// nowhere: a file that does not exist, or an anchor that the target
// Markdown file (or the document itself) has no heading for. Links that
// carry a scheme (https:, mailto:) are not followed.
func deadDocLinks(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var dead []string
	for _, line := range markdownOutsideFences(string(data)) {
		for _, m := range docLinkRe.FindAllStringSubmatch(line, -1) {
			target := m[1]
			if strings.Contains(target, ":") {
				continue
			}
			file, anchor, _ := strings.Cut(target, "#")
			resolved := path
			if file != "" {
				resolved = filepath.Join(filepath.Dir(path), filepath.FromSlash(file))
				if _, err := os.Stat(resolved); err != nil {
					dead = append(dead, target+" (no such file)")
					continue
				}
			}
			if anchor == "" || !strings.HasSuffix(resolved, ".md") {
				continue
			}
			body, err := os.ReadFile(resolved)
			if err != nil {
				t.Fatal(err)
			}
			if !markdownAnchors(string(body))[anchor] {
				dead = append(dead, target+" (no such heading)")
			}
		}
	}
	return dead
}

// TestDocLinksResolve: every relative link of README.md and docs/*.md
// points to a file of the repository, and every anchor to a heading of its
// Markdown file.
func TestDocLinksResolve(t *testing.T) {
	for _, path := range docFiles(t) {
		for _, d := range deadDocLinks(t, path) {
			t.Errorf("%s: dead link %s", strings.TrimPrefix(path, "../../"), d)
		}
	}
}

// TestDeadDocLinksFindsEachKind checks the checker on a document with one
// link of every kind, good and bad.
func TestDeadDocLinksFindsEachKind(t *testing.T) {
	dir := t.TempDir()
	other := "# Other\n\n## Part `one`, two\n\n## Part `one`, two\n"
	if err := os.WriteFile(filepath.Join(dir, "other.md"), []byte(other), 0o644); err != nil {
		t.Fatal(err)
	}
	doc := "# Here\n\n```\n# not a heading\n[x](in-a-fence.md)\n```\n" +
		"[a](#here) [b](#not-a-heading) [c](other.md) [d](other.md#part-one-two) [e](other.md#part-one-two-1)\n" +
		"[f](other.md#missing) [g](missing.md) [h](https://example.com/x.md) [i](other.md#part-one-two-2)\n"
	path := filepath.Join(dir, "doc.md")
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	got := strings.Join(deadDocLinks(t, path), "; ")
	want := "#not-a-heading (no such heading); other.md#missing (no such heading); missing.md (no such file); other.md#part-one-two-2 (no such heading)"
	if got != want {
		t.Errorf("dead links:\n got %s\nwant %s", got, want)
	}
}
