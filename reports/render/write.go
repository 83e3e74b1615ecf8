package render

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/stormdrill/stormdrill/reports"
)

// WriteRunFiles writes every file of a run into dir (created if needed):
// summary.json, timeseries.csv, junit.xml, the plots, report.md and
// report.html. Each file is written to a temporary name and renamed, so a
// reader never sees half a report.
func WriteRunFiles(dir string, run *reports.Run) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	run.Dir = dir
	write := func(name string, f func(io.Writer) error) error {
		var buf bytes.Buffer
		if err := f(&buf); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		return writeFileAtomic(filepath.Join(dir, name), buf.Bytes())
	}
	if err := write("summary.json", func(w io.Writer) error { return reports.WriteSummaryJSON(w, run.Summary) }); err != nil {
		return err
	}
	for _, s := range run.SeedSummaries {
		sub := filepath.Join("seeds", strconv.FormatUint(s.Seed, 10))
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			return err
		}
		if err := write(filepath.Join(sub, "summary.json"), func(w io.Writer) error { return reports.WriteSummaryJSON(w, s) }); err != nil {
			return err
		}
	}
	if run.Timeseries != nil {
		if err := write("timeseries.csv", func(w io.Writer) error { return WriteTimeseriesCSV(w, run.Timeseries) }); err != nil {
			return err
		}
	}
	if err := write("junit.xml", func(w io.Writer) error { return WriteJUnit(w, run.Summary) }); err != nil {
		return err
	}
	plots, err := WritePlots(dir, run)
	if err != nil {
		return fmt.Errorf("plots: %w", err)
	}
	if err := write("report.md", func(w io.Writer) error { return WriteMarkdown(w, run, plots) }); err != nil {
		return err
	}
	readFile := func(name string) ([]byte, error) {
		if filepath.Base(name) != name {
			return nil, fmt.Errorf("plot %q is not a plain file name", name)
		}
		return os.ReadFile(filepath.Join(dir, name))
	}
	return write("report.html", func(w io.Writer) error { return WriteHTML(w, run, plots, readFile) })
}

func writeFileAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
