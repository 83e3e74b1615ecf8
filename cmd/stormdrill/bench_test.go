package main

import (
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/stormdrill/stormdrill/drills"
	"github.com/stormdrill/stormdrill/drills/sim"
)

// TestBenchPrintsMatchedReferenceAndBytesPerPending: the table has a row
// per scale whose peak pending is the simulated run's, beside the bare
// loop's rate measured at that pending, the ratio of the two rates, and
// the peak heap divided by the peak pending, and the heap before the run
// with the run's own bytes per pending (the peak less that heap).
func TestBenchPrintsMatchedReferenceAndBytesPerPending(t *testing.T) {
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
		if len(cells) != 13 {
			t.Fatalf("row with %d cells, want 13: %q", len(cells), line)
		}
		rows = append(rows, cells)
	}
	if len(rows) != 2 {
		t.Fatalf("%d rows, want two drill rows:\n%s", len(rows), out)
	}
	d, err := drills.Load("../../"+drill, nil)
	if err != nil {
		t.Fatal(err)
	}
	run, err := sim.Run(d, sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := rows[0][2], strconv.FormatInt(run.Summary.PeakPending, 10); got != want || want == "0" {
		t.Errorf("scale 1: peak pending %s, want the run's %s (not 0)", got, want)
	}
	subs := 0
	for _, p := range d.Partners {
		subs += p.Count
	}
	num := func(row []string, i int) float64 {
		v, err := strconv.ParseFloat(strings.TrimSuffix(row[i], " MiB"), 64)
		if err != nil || v <= 0 {
			t.Fatalf("cell %d %q, want a positive number", i, row[i])
		}
		return v
	}
	for k, row := range rows {
		if row[1] != strconv.Itoa((k+1)*subs) {
			t.Errorf("scale %d: %s subscribers, want %d", k+1, row[1], (k+1)*subs)
		}
		rate, bare, ratio := num(row, 5), num(row, 6), num(row, 7)
		if got := rate / bare; math.Abs(got-ratio) > 0.05*got {
			t.Errorf("scale %d: ratio %v, want rate ÷ bare loop = %.2g", k+1, ratio, got)
		}
		pending, heapMiB, perPending := num(row, 2), num(row, 8), num(row, 9)
		// The heap is printed to a tenth of a MiB, the bytes to one.
		if heap := perPending * pending; math.Abs(heap-heapMiB*(1<<20)) > 0.05*(1<<20)+pending {
			t.Errorf("scale %d: %v bytes per pending × %v pending is not the peak heap %v MiB", k+1, perPending, pending, heapMiB)
		}
		baseMiB, ownPerPending := num(row, 11), num(row, 12)
		if baseMiB >= heapMiB {
			t.Errorf("scale %d: heap before the run %v MiB, not below the peak %v MiB", k+1, baseMiB, heapMiB)
		}
		if own := ownPerPending * pending; math.Abs(own-(heapMiB-baseMiB)*(1<<20)) > 0.1*(1<<20)+pending {
			t.Errorf("scale %d: the run's own %v bytes per pending × %v pending is not the peak %v MiB less the %v MiB before", k+1, ownPerPending, pending, heapMiB, baseMiB)
		}
	}
}
