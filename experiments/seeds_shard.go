package experiments

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sync"

	"github.com/stormdrill/stormdrill/drills"
	"github.com/stormdrill/stormdrill/drills/sim"
	"github.com/stormdrill/stormdrill/reports"
)

// seedsShardJSON is a share of a multi-seed run (run --seeds N --shard
// I/N) as written to shard.json: each seed's summary, exact (encoding/json
// of the summary itself, not summary.json's rounded figures), so the
// statistics merged are those of the run made whole.
type seedsShardJSON struct {
	Kind        string         `json:"kind"`
	Drill       string         `json:"drill"`
	Fingerprint string         `json:"drill_sha256"`
	Seed        uint64         `json:"seed"` // the first seed of the run
	Seeds       int            `json:"seeds"`
	Shard       int            `json:"shard"`
	Of          int            `json:"of"`
	Runs        []seedShardRun `json:"runs"`
}

type seedShardRun struct {
	I       int             `json:"i"` // the seed is Seed + I
	Summary json.RawMessage `json:"summary"`
	Err     string          `json:"err,omitempty"` // the run finished but broke the accounting identity
}

// RunSeedsShard simulates the seeds of an n-seed run of d that belong to
// shard (seed d.Seed+i to shard i mod N), at most GOMAXPROCS at a time,
// and writes them to dir/shard.json for MergeSeedShards.
func RunSeedsShard(d *drills.Drill, n int, shard Shard, dir string, progress func(done, total int)) error {
	if shard.Count < 2 {
		return errors.New("not a shard")
	}
	if d.Mode != "sim" {
		return fmt.Errorf("%s: --seeds runs simulations only; the drill is mode = %q", d.Name, d.Mode)
	}
	if n < 2 || n > reports.MaxSeeds {
		return fmt.Errorf("--seeds %d: want 2 to %d with --shard", n, reports.MaxSeeds)
	}
	if err := seedShares(shard, n); err != nil {
		return err
	}
	fp, err := drillFingerprint(d)
	if err != nil {
		return err
	}
	var mine []int
	for i := range n {
		if shard.owns(i) {
			mine = append(mine, i)
		}
	}
	runs := make([]seedShardRun, len(mine))
	errs := make([]error, len(mine))
	var mu sync.Mutex
	done := 0
	runPool(len(mine), 0, nil, func(k int) {
		dd := *d
		dd.Seed = d.Seed + uint64(mine[k])
		run, err := sim.Run(&dd, sim.Options{})
		runs[k].I = mine[k]
		if err != nil {
			if run == nil {
				errs[k] = fmt.Errorf("seed %d: %w", dd.Seed, err)
				return
			}
			runs[k].Err = err.Error()
		}
		runs[k].Summary, errs[k] = json.Marshal(run.Summary)
		if progress != nil {
			mu.Lock()
			done++
			progress(done, len(mine))
			mu.Unlock()
		}
	})
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return writeShardJSON(dir, seedsShardJSON{Kind: ShardKindSeeds, Drill: d.Name, Fingerprint: fp, Seed: d.Seed, Seeds: n,
		Shard: shard.Index, Of: shard.Count, Runs: runs})
}

// MergeSeedShards reads the shard directories of one multi-seed run of d
// (loaded as the shards loaded it; its seed is the shards' own) and returns
// the run made whole: every seed's summary from the shards, and the first
// seed simulated again for the time series and plots, which it must
// reproduce exactly (a simulation is a pure function of drill and seed).
// A seed that broke the accounting identity comes back as the error beside
// the run, as run --seeds returns it.
func MergeSeedShards(d *drills.Drill, dirs []string) (*reports.Run, error) {
	var (
		set       shardSet
		summaries []*reports.Summary
		runErrs   []string
		fp        string
	)
	for _, dir := range dirs {
		file := filepath.Join(dir, ShardFile)
		var sh seedsShardJSON
		if err := readShard(file, &sh); err != nil {
			return nil, err
		}
		if sh.Kind != ShardKindSeeds {
			return nil, fmt.Errorf("%s: not a shard of run --seeds (kind %q)", file, clipName(sh.Kind))
		}
		if err := set.add(file, sh.Shard, sh.Of); err != nil {
			return nil, err
		}
		if summaries == nil {
			if sh.Seeds < 2 || sh.Seeds > reports.MaxSeeds {
				return nil, fmt.Errorf("%s: %d seeds", file, sh.Seeds)
			}
			d.Seed = sh.Seed
			var err error
			if fp, err = drillFingerprint(d); err != nil {
				return nil, err
			}
			summaries, runErrs = make([]*reports.Summary, sh.Seeds), make([]string, sh.Seeds)
		}
		switch {
		case sh.Seed != d.Seed || sh.Seeds != len(summaries):
			return nil, fmt.Errorf("%s: seeds %d+%d, the other shards have %d+%d", file, sh.Seed, sh.Seeds, d.Seed, len(summaries))
		case sh.Fingerprint != fp:
			return nil, fmt.Errorf("%s: run from another version of drill %s or with other overrides (--limit)", file, d.Name)
		}
		want := Shard{Index: sh.Shard, Count: sh.Of}
		for _, r := range sh.Runs {
			if r.I < 0 || r.I >= len(summaries) || !want.owns(r.I) || summaries[r.I] != nil {
				return nil, fmt.Errorf("%s: seed %d+%d does not belong to shard %s", file, sh.Seed, r.I, want)
			}
			var s reports.Summary
			if err := json.Unmarshal(r.Summary, &s); err != nil {
				return nil, fmt.Errorf("%s: seed %d+%d: %v", file, sh.Seed, r.I, err)
			}
			summaries[r.I], runErrs[r.I] = &s, r.Err
		}
	}
	if err := set.complete(); err != nil {
		return nil, err
	}
	for i, s := range summaries {
		if s == nil {
			return nil, fmt.Errorf("seed %d is in no shard", d.Seed+uint64(i))
		}
	}
	first, err := sim.Run(d, sim.Options{})
	if first == nil {
		return nil, fmt.Errorf("seed %d: %w", d.Seed, err)
	}
	again, jerr := json.Marshal(first.Summary)
	kept, _ := json.Marshal(summaries[0])
	if jerr != nil || string(again) != string(kept) {
		return nil, fmt.Errorf("seed %d simulated again differs from its shard's: the shards were run by another version of stormdrill", d.Seed)
	}
	runs := make([]*reports.Run, len(summaries))
	runs[0] = first
	for i := 1; i < len(runs); i++ {
		runs[i] = &reports.Run{Summary: summaries[i]}
	}
	var firstErr error
	for i, e := range runErrs {
		if e != "" {
			firstErr = fmt.Errorf("seed %d: %s", d.Seed+uint64(i), e)
			break
		}
	}
	return reports.CombineSeeds(runs), firstErr
}
