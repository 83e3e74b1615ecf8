package render

import (
	"fmt"
	"io"
	"strings"

	"github.com/stormdrill/stormdrill/reports"
)

func percentileText(p reports.Percentiles) string {
	return strings.Join([]string{
		reports.FormatDuration(p.P50), reports.FormatDuration(p.P90), reports.FormatDuration(p.P99),
		reports.FormatDuration(p.P999), reports.FormatDuration(p.Max),
	}, " / ")
}

// mdWriter writes Markdown lines and keeps the first error.
type mdWriter struct {
	w   io.Writer
	err error
}

func (m *mdWriter) line(s string) {
	if m.err != nil {
		return
	}
	_, m.err = io.WriteString(m.w, s+"\n")
}

// heading writes a section heading with a blank line on each side.
func (m *mdWriter) heading(h string) {
	m.line("")
	m.line(h)
	m.line("")
}

// row writes one table row; cells are already escaped (mdCell or mdCode).
func (m *mdWriter) row(cells ...string) {
	m.line("| " + strings.Join(cells, " | ") + " |")
}

func (m *mdWriter) omitted(n int, what string) {
	if n > 0 {
		m.line("")
		m.line(fmt.Sprintf("… and %d more %s not shown.", n, what))
	}
}

// mdCell escapes text for a table cell: pipes would end the cell, and
// Markdown punctuation would change its meaning.
func mdCell(s string) string {
	var b strings.Builder
	for _, r := range reports.OneLine(s) {
		switch r {
		case '|', '\\', '*', '_', '`', '[', ']', '<', '>':
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// mdCode writes s as inline code; a pipe still needs escaping inside a table.
func mdCode(s string) string {
	s = strings.ReplaceAll(reports.OneLine(s), "`", "'")
	if s == "" {
		return "—"
	}
	return "`" + strings.ReplaceAll(s, "|", `\|`) + "`"
}

// mdLink escapes a relative file name for a Markdown link target.
func mdLink(name string) string {
	r := strings.NewReplacer(" ", "%20", "(", "%28", ")", "%29", "<", "%3C", ">", "%3E")
	return r.Replace(name)
}
