package experiments

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stormdrill/stormdrill/drills"
	"github.com/stormdrill/stormdrill/drills/sim"
	"github.com/stormdrill/stormdrill/reports"
	"github.com/stormdrill/stormdrill/reports/render"
)

// sameFiles fails unless every file under want is under got with the same
// bytes, and got has no file want lacks.
func sameFiles(t *testing.T, want, got string) {
	t.Helper()
	seen := map[string]bool{}
	n := 0
	err := filepath.WalkDir(want, func(p string, e os.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(want, p)
		seen[rel] = true
		n++
		a, _ := os.ReadFile(p)
		b, err := os.ReadFile(filepath.Join(got, rel))
		if err != nil {
			t.Errorf("%s: not in the merged output: %v", rel, err)
		} else if !bytes.Equal(a, b) {
			t.Errorf("%s differs between the whole run and the merged shards", rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	_ = filepath.WalkDir(got, func(p string, e os.DirEntry, err error) error {
		if err == nil && !e.IsDir() {
			if rel, _ := filepath.Rel(got, p); !seen[rel] {
				t.Errorf("%s: only in the merged output", rel)
			}
		}
		return nil
	})
	if n == 0 {
		t.Fatalf("%s: no files written", want)
	}
}

// A capacity search over four seeds split in three shards (seeds 0 and 3,
// 1, 2) and merged writes the same report, byte for byte, as the search
// run whole.
func TestCapacityShardsMergeToTheWholeSearch(t *testing.T) {
	// The small flagship cut further: one worker, four healthy subscribers,
	// a 1-minute drill; six probes a seed.
	ov := withOverride(withOverride(withOverride(smallFlagship, "dispatcher.workers", "1"), "partners[0].count", "4"), "duration", `"1m"`)
	opt := CapacityOptions{Overrides: ov, Seeds: 4, MaxProbes: 6, Precision: 0.25}
	whole, err := Capacity("../drills/fanout-outage.toml", opt)
	if err != nil {
		t.Fatal(err)
	}
	if !whole.Found || len(whole.SeedAnswers) != 4 {
		t.Fatalf("the whole search found no boundary on every seed: %s", whole.AnswerText())
	}
	tmp := t.TempDir()
	var dirs []string
	for i := range 3 {
		dir := filepath.Join(tmp, "shard", strconv.Itoa(i))
		if err := CapacityShard("../drills/fanout-outage.toml", opt, Shard{Index: i, Count: 3}, dir); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, dir)
	}
	merged, err := MergeCapacityShards("../drills/fanout-outage.toml", []string{dirs[2], dirs[0], dirs[1]})
	if err != nil {
		t.Fatal(err)
	}
	if merged.Answer != whole.Answer || merged.AnswerMean != whole.AnswerMean || len(merged.Probes) != len(whole.Probes) {
		t.Errorf("merged answer %g (mean %g, %d probes), whole %g (mean %g, %d probes)",
			merged.Answer, merged.AnswerMean, len(merged.Probes), whole.Answer, whole.AnswerMean, len(whole.Probes))
	}
	wantDir, gotDir := filepath.Join(tmp, "whole"), filepath.Join(tmp, "merged")
	if err := WriteCapacity(wantDir, whole); err != nil {
		t.Fatal(err)
	}
	if err := WriteCapacity(gotDir, merged); err != nil {
		t.Fatal(err)
	}
	sameFiles(t, wantDir, gotDir)

	// An incomplete or mixed set is refused.
	if _, err := MergeCapacityShards("../drills/fanout-outage.toml", dirs[:2]); err == nil || !strings.Contains(err.Error(), "shards missing: 2 of 3") {
		t.Errorf("two of three shards: %v", err)
	}
	if _, err := MergeCapacityShards("../drills/fanout-outage.toml", []string{dirs[0], dirs[0], dirs[1]}); err == nil || !strings.Contains(err.Error(), "also in") {
		t.Errorf("a shard twice: %v", err)
	}
	if err := CapacityShard("../drills/fanout-outage.toml", CapacityOptions{Overrides: ov, Seeds: 2}, Shard{Index: 0, Count: 3}, filepath.Join(tmp, "x")); err == nil {
		t.Error("three shards of two seeds: accepted")
	}
}

// A 10-seed run split in three shards and merged writes the same files,
// byte for byte, as the 10-seed run made whole: summary.json with the
// statistics, every seed's summary, junit.xml, the time series and the
// reports.
func TestRunSeedsShardsMergeToTheWholeRun(t *testing.T) {
	load := func() *drills.Drill {
		d, err := drills.Load("../drills/fanout-outage.toml", smallFlagship)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	const seeds = 10
	d := load()
	runs := make([]*reports.Run, seeds)
	for i := range runs {
		dd := *d
		dd.Seed = d.Seed + uint64(i)
		r, err := simRun(&dd)
		if err != nil {
			t.Fatal(err)
		}
		runs[i] = r
	}
	tmp := t.TempDir()
	wantDir := filepath.Join(tmp, "whole")
	if err := render.WriteRunFiles(wantDir, reports.CombineSeeds(runs)); err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for i := range 3 {
		dir := filepath.Join(tmp, "shard", strconv.Itoa(i))
		if err := RunSeedsShard(load(), seeds, Shard{Index: i, Count: 3}, dir, nil); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, dir)
	}
	merged, err := MergeSeedShards(load(), dirs)
	if err != nil {
		t.Fatal(err)
	}
	gotDir := filepath.Join(tmp, "merged")
	if err := render.WriteRunFiles(gotDir, merged); err != nil {
		t.Fatal(err)
	}
	sameFiles(t, wantDir, gotDir)
	if n, _ := filepath.Glob(filepath.Join(gotDir, "seeds", "*", "summary.json")); len(n) != seeds {
		t.Errorf("%d seed summaries, want %d", len(n), seeds)
	}

	// Shards of another drill, or of another first seed, are refused.
	other := load()
	other.Dispatcher.Workers++
	if _, err := MergeSeedShards(other, dirs); err == nil || !strings.Contains(err.Error(), "another version") {
		t.Errorf("shards of another drill: %v", err)
	}
	if kind, err := ReadShardKind(dirs[0]); kind != ShardKindSeeds || err != nil {
		t.Errorf("shard kind %q, %v", kind, err)
	}
	if _, err := MergeCapacityShards("../drills/fanout-outage.toml", dirs); err == nil || !strings.Contains(err.Error(), "not a capacity shard") {
		t.Errorf("a capacity merge of a run's shards: %v", err)
	}
}

func simRun(d *drills.Drill) (*reports.Run, error) { return sim.Run(d, sim.Options{}) }
