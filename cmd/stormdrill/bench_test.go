package main

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stormdrill/stormdrill/drills"
	"github.com/stormdrill/stormdrill/drills/sim"
)

// TestBenchPrintsReferenceRowAndPeakPending: the table has the bare loop's
// row (ratio 1.00, its heap's size as its pending) and a row per scale,
// whose peak pending is the simulated run's and whose ratio is a positive
// number.
func TestBenchPrintsReferenceRowAndPeakPending(t *testing.T) {
	const drill = "drills/demo-healthy.toml"
	code, out, errOut := stormdrill(t, "bench", "--drill", drill, "--scale", "1,2")
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	var rows [][]string
	for _, line := range strings.Split(out, "\n") {
		if !strings.HasPrefix(line, "| ") || strings.HasPrefix(line, "| drill ") || strings.HasPrefix(line, "| --- ") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "| "), " | ")
		if len(cells) != 9 {
			t.Fatalf("row with %d cells, want 9: %q", len(cells), line)
		}
		rows = append(rows, cells)
	}
	if len(rows) != 3 {
		t.Fatalf("%d rows, want the bare loop's and two drill rows:\n%s", len(rows), out)
	}
	if bare := rows[0]; !strings.HasPrefix(bare[0], "bare retry loop") || bare[2] != "100000" || bare[6] != "1.00" {
		t.Errorf("reference row %q, want the bare loop with 100000 pending and ratio 1.00", bare)
	}
	d, err := drills.Load("../../"+drill, nil)
	if err != nil {
		t.Fatal(err)
	}
	run, err := sim.Run(d, sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := rows[1][2], strconv.FormatInt(run.Summary.PeakPending, 10); got != want || want == "0" {
		t.Errorf("scale 1: peak pending %s, want the run's %s (not 0)", got, want)
	}
	subs := 0
	for _, p := range d.Partners {
		subs += p.Count
	}
	for k, row := range rows[1:] {
		if row[1] != strconv.Itoa((k+1)*subs) {
			t.Errorf("scale %d: %s subscribers, want %d", k+1, row[1], (k+1)*subs)
		}
		if r, err := strconv.ParseFloat(row[6], 64); err != nil || r <= 0 {
			t.Errorf("scale %d: ratio to the bare loop %q, want a positive number", k+1, row[6])
		}
	}
}
