package leakscan

import (
	"html"
	"regexp"
	"strings"
)

// maxFindings bounds what one scan reports.
const maxFindings = 20

// fragments are the shapes of source text that no report sentence has.
var fragments = []struct {
	what string
	re   *regexp.Regexp
}{
	{"template action", regexp.MustCompile(`\{\{|\}\}`)},
	{"fmt verb error", regexp.MustCompile(`%!|%\[?[0-9]*\]?[vTqdsfgx]\b`)},
	{"Go assignment", regexp.MustCompile(`\b[A-Za-z_]\w*(\.[A-Za-z_]\w*)*\s*(:=|[^=!<>:+\-*/%]=[^=])\s*[A-Za-z_]\w*(\.\w+)*\(`)},
	{"Go selector of a run", regexp.MustCompile(`\b(r|s|d|v|run)\.(Summary|Seeds|External|Gates|Outages|Timeseries)\b`)},
	{"Go field path", regexp.MustCompile(`\.Summary\.|\.Timeseries\.`)},
	{"Go call of an exported function", regexp.MustCompile(`\b[A-Z][a-z]+(?:[A-Z][a-z0-9]+)+\(`)},
	{"Go nil", regexp.MustCompile(`<nil>|\bnil\b`)},
	{"Go composite literal", regexp.MustCompile(`map\[\w+\]|\[\]\w+\{|&\{|\bfunc\(`)},
	{"pointer", regexp.MustCompile(`\b0x[0-9a-f]{8,}\b`)},
	{"non-number", regexp.MustCompile(`\bNaN\b|[+-]Inf\b`)},
}

// Find returns each fragment of source text in text, as "what: «…»" with
// a little context, at most maxFindings of them.
func Find(text string) []string {
	var out []string
	for _, f := range fragments {
		for _, loc := range f.re.FindAllStringIndex(text, -1) {
			if len(out) >= maxFindings {
				return out
			}
			lo, hi := max(0, loc[0]-40), min(len(text), loc[1]+40)
			for lo > 0 && !utf8Start(text[lo]) {
				lo--
			}
			for hi < len(text) && !utf8Start(text[hi]) {
				hi++
			}
			out = append(out, f.what+": «"+strings.Join(strings.Fields(text[lo:hi]), " ")+"»")
		}
	}
	return out
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

var (
	scriptOrStyle = regexp.MustCompile(`(?is)<(script|style|noscript)\b[^>]*>.*?</(script|style|noscript)>`)
	comment       = regexp.MustCompile(`(?s)<!--.*?-->`)
	tag           = regexp.MustCompile(`(?s)<[^>]*>`)
)

// VisibleText is the text of an HTML page as a reader sees it: without
// scripts, styles, <noscript> fallbacks, comments and tags, entities
// decoded. It is a static approximation of the rendered text; the
// browser tests scan the rendered DOM itself.
func VisibleText(page string) string {
	page = scriptOrStyle.ReplaceAllString(page, " ")
	page = comment.ReplaceAllString(page, " ")
	page = tag.ReplaceAllString(page, " ")
	return html.UnescapeString(page)
}
