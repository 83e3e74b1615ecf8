package external

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stormdrill/stormdrill/drills"
)

// TestFanoutShapesExternal: with source.fanout = "k", each event the
// harness hands the system lists the deliveries the simulation's picker
// makes for that event number. No system runs: the events go to a JSONL
// file and stay unresolved.
func TestFanoutShapesExternal(t *testing.T) {
	dir := t.TempDir()
	events := filepath.Join(dir, "events.jsonl")
	d, err := drills.Parse("ext.toml", []byte(`
name = "ext-fanout"
mode = "external"
seed = 5
duration = "2s"
drain = "100ms"
[source]
arrival = "constant"
rate = "5/s"
fanout = "k"
k = 2
[[partners]]
name = "sub"
count = 20
latency = { dist = "constant", value = "1ms" }
[system]
ingest = "jsonl"
jsonl_path = "`+filepath.ToSlash(events)+`"
dead_letters = "none"
`))
	if err != nil {
		t.Fatal(err)
	}
	run, err := Run(d, t.TempDir(), Options{DrillDir: dir})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	runID := run.Summary.External.RunID
	specs, err := d.PartnerSpecs()
	if err != nil {
		t.Fatal(err)
	}
	subs, _ := drills.Subscribers(d, specs)
	fan := d.NewFanout(specs)
	f, err := os.Open(events)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	n := int64(0)
	for ; sc.Scan(); n++ {
		var ev Event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("event %d: %v", n, err)
		}
		var got, want []string
		for _, dl := range ev.Deliveries {
			got = append(got, dl.ID)
		}
		// The simulation's ids with the run's id in them: evt-RUNID-000001:sub-3.
		for _, si := range fan.Pick(n, nil) {
			want = append(want, strings.Replace(drills.DeliveryID(n, subs[si].Name), "evt-", "evt-"+runID+"-", 1))
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("event %d: deliveries %v, the simulation's picker %v", n, got, want)
		}
	}
	if n < 5 {
		t.Errorf("%d events written, want about 10", n)
	}
}
