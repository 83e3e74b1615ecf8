package render

import (
	"bytes"
	"fmt"
	"html/template"
	"io"
	"path"
	"sync"

	"github.com/stormdrill/stormdrill/reports"
)

// IndexEntry is one run listed in out/index.html. Dir is the run directory
// relative to the index file; the entry links to Dir/report.html.
type IndexEntry struct {
	Name    string
	Dir     string
	Pass    bool
	Verdict string // "FAIL: 1 of 3 gates failed"
}

// maxIndexEntries bounds the index page.
const maxIndexEntries = 1000

type indexRow struct {
	IndexEntry
	Report, Markdown string
}

// WriteIndex writes a self-contained page linking several runs, in the
// order given.
func WriteIndex(w io.Writer, entries []IndexEntry) error {
	d := struct {
		Rows           []indexRow
		Passed, Failed int
		Omitted        int
	}{}
	for i, e := range entries {
		if i >= maxIndexEntries {
			d.Omitted = len(entries) - i
			break
		}
		e.Name, e.Verdict = reports.OneLine(e.Name), reports.OneLine(e.Verdict)
		if e.Pass {
			d.Passed++
		} else {
			d.Failed++
		}
		// Forward slashes: the links are URLs, also on Windows.
		dir := path.Clean(filepathToSlash(e.Dir))
		d.Rows = append(d.Rows, indexRow{IndexEntry: e, Report: path.Join(dir, "report.html"), Markdown: path.Join(dir, "report.md")})
	}
	var buf bytes.Buffer
	if err := indexTemplate().Execute(&buf, d); err != nil {
		return fmt.Errorf("index.html: %w", err)
	}
	_, err := w.Write(buf.Bytes())
	return err
}

func filepathToSlash(p string) string {
	b := []byte(p)
	for i, c := range b {
		if c == '\\' {
			b[i] = '/'
		}
	}
	return string(b)
}

// indexTemplate is the template of index.html, parsed on first use:
// parsed at start, it would sit on the heap of every command, most of
// which write no page.
var indexTemplate = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("index").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>stormdrill runs</title>
<style>
body { font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1f2328; margin: 0; }
main { max-width: 1000px; margin: 0 auto; padding: 1.5rem 1.25rem 3rem; }
table { border-collapse: collapse; margin: .5rem 0; }
th, td { border: 1px solid #d0d7de; padding: .3rem .7rem; text-align: left; }
th { background: #f6f8fa; }
td.ok { color: #1a7f37; font-weight: 600; }
td.bad { color: #cf222e; font-weight: 700; }
a { color: #0969da; }
.note { color: #57606a; font-style: italic; }
</style>
</head>
<body>
<main>
<h1>stormdrill runs</h1>
<p>{{len .Rows}} runs{{if .Omitted}} shown ({{.Omitted}} more not shown){{end}}: {{.Passed}} passed, {{.Failed}} failed.</p>
<table id="runs">
<thead><tr><th>run</th><th>verdict</th><th>reports</th></tr></thead>
<tbody>
{{range .Rows}}<tr><td>{{.Name}}</td>{{if .Pass}}<td class="ok">{{.Verdict}}</td>{{else}}<td class="bad">{{.Verdict}}</td>{{end}}<td><a href="{{.Report}}">HTML</a> · <a href="{{.Markdown}}">Markdown</a></td></tr>
{{else}}<tr><td colspan="3" class="note">No runs.</td></tr>
{{end}}</tbody>
</table>
</main>
</body>
</html>
`))
})
