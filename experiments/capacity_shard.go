package experiments

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/stormdrill/stormdrill/drills"
)

// Kinds of shard.json: what a shard directory holds, so that one merge
// command takes every kind.
const (
	ShardKindSweep    = "sweep"    // sweep --shard (files without a kind are sweeps)
	ShardKindCapacity = "capacity" // capacity --shard
	ShardKindSeeds    = "seeds"    // run --seeds N --shard
)

// ReadShardKind says what the shard directory dir holds.
func ReadShardKind(dir string) (string, error) {
	var head struct {
		Kind string `json:"kind"`
	}
	if err := readShard(filepath.Join(dir, ShardFile), &head); err != nil {
		return "", err
	}
	switch head.Kind {
	case "", ShardKindSweep:
		return ShardKindSweep, nil
	case ShardKindCapacity, ShardKindSeeds:
		return head.Kind, nil
	}
	return "", fmt.Errorf("%s: kind %q: written by another version of stormdrill", filepath.Join(dir, ShardFile), clipName(head.Kind))
}

// drillFingerprint identifies a loaded drill (its file, what it includes
// and every override), so that shards of different drills or options are
// not merged.
func drillFingerprint(d *drills.Drill) (string, error) {
	data, err := json.Marshal(d)
	if err != nil {
		return "", fmt.Errorf("fingerprint of drill %s: %w", d.Name, err)
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:]), nil
}

// seedShares checks a shard of n seeds: every shard must have a seed.
func seedShares(shard Shard, n int) error {
	if shard.Count > n {
		return fmt.Errorf("--shard %s with %d seeds: each shard needs at least one seed (give --seeds %d or more)", shard, n, shard.Count)
	}
	return nil
}

// capacityShardJSON is a capacity shard as written to shard.json: the
// options of the search and the finished search of every seed it owns.
// Values are exact (encoding/json writes the shortest decimal that reads
// back to the same float64); NaN is null.
type capacityShardJSON struct {
	Kind        string             `json:"kind"`
	Drill       string             `json:"drill"`
	Fingerprint string             `json:"drill_sha256"`
	Shard       int                `json:"shard"`
	Of          int                `json:"of"`
	Options     capacityShardOpts  `json:"options"`
	Searches    []capacitySeedJSON `json:"searches"`
}

type capacityShardOpts struct {
	Key       string            `json:"key"`
	Min       float64           `json:"min"`
	Max       float64           `json:"max"`
	Seeds     int               `json:"seeds"`
	Precision float64           `json:"precision"`
	MaxProbes int               `json:"max_probes"`
	Overrides map[string]string `json:"overrides"`
}

type capacitySeedJSON struct {
	K       int         `json:"k"` // the seed is the drill's seed + k
	Found   bool        `json:"found"`
	Bracket bool        `json:"bracket"`
	Answer  float64     `json:"answer"`
	Failing *float64    `json:"failing"`
	Note    string      `json:"note"`
	Probes  []probeJSON `json:"probes"`
}

type probeJSON struct {
	Value         float64  `json:"value"`
	Seeds         int      `json:"seeds"`
	Passed        int      `json:"passed"`
	Pass          bool     `json:"pass"`
	Amplification *float64 `json:"amplification"`
	HealthyP99S   *float64 `json:"healthy_p99_s"`
	DrainTimeS    *float64 `json:"drain_time_s"`
	DeadLettered  *float64 `json:"dead_lettered"`
	FailedGates   []string `json:"failed_gates"`
	Err           string   `json:"err,omitempty"`
}

func orNaN(v *float64) float64 {
	if v == nil {
		return math.NaN()
	}
	return *v
}

// CapacityShard runs the per-seed searches of a multi-seed capacity search
// that belong to shard (seed k to shard k mod N) and writes them to
// dir/shard.json, for MergeCapacityShards.
func CapacityShard(path string, opt CapacityOptions, shard Shard, dir string) error {
	if shard.Count < 2 {
		return errors.New("not a shard")
	}
	c, err := prepareCapacity(path, opt)
	if err != nil {
		return err
	}
	if err := seedShares(shard, c.opt.Seeds); err != nil {
		return err
	}
	base, err := loadDrill(c.path, c.opt.Overrides)
	if err != nil {
		return err
	}
	fp, err := drillFingerprint(base)
	if err != nil {
		return err
	}
	out := capacityShardJSON{Kind: ShardKindCapacity, Drill: c.res.Drill, Fingerprint: fp, Shard: shard.Index, Of: shard.Count,
		Options: capacityShardOpts{Key: c.opt.Key, Min: c.opt.Min, Max: c.opt.Max, Seeds: c.opt.Seeds, Precision: c.opt.Precision,
			MaxProbes: c.opt.MaxProbes, Overrides: c.opt.Overrides},
		Searches: []capacitySeedJSON{}}
	for k := range c.opt.Seeds {
		if !shard.owns(k) {
			continue
		}
		sub := c.searchSeed(k)
		sj := capacitySeedJSON{K: k, Found: sub.Found, Bracket: sub.Bracket, Answer: sub.Answer, Failing: nullable(sub.Failing), Note: sub.Note, Probes: []probeJSON{}}
		for _, p := range sub.Probes {
			sj.Probes = append(sj.Probes, probeJSON{Value: p.Value, Seeds: p.Seeds, Passed: p.Passed, Pass: p.Pass,
				Amplification: nullable(p.Amplification), HealthyP99S: nullable(p.HealthyP99S), DrainTimeS: nullable(p.DrainTimeS),
				DeadLettered: nullable(p.DeadLettered), FailedGates: p.FailedGates, Err: p.Err})
		}
		out.Searches = append(out.Searches, sj)
	}
	return writeShardJSON(dir, out)
}

func writeShardJSON(dir string, v any) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	data, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, ShardFile), append(data, '\n'), 0o644)
}

// shardSet checks that the shards read are one set: each of 0..of-1
// exactly once, all of the same count.
type shardSet struct {
	of   int
	seen map[int]string
}

func (s *shardSet) add(path string, shard, of int) error {
	if s.seen == nil {
		s.seen = map[int]string{}
	}
	switch {
	case s.of != 0 && of != s.of:
		return fmt.Errorf("%s: shard of %d, the others are of %d", path, of, s.of)
	case of < 2 || shard < 0 || shard >= of:
		return fmt.Errorf("%s: shard %d/%d is not a shard", path, shard, of)
	}
	if prev, dup := s.seen[shard]; dup {
		return fmt.Errorf("%s: shard %d/%d is also in %s", path, shard, of, prev)
	}
	s.seen[shard], s.of = path, of
	return nil
}

func (s *shardSet) complete() error {
	if s.of == 0 {
		return errors.New("no shard directories")
	}
	var missing []string
	for i := 0; i < s.of; i++ {
		if _, ok := s.seen[i]; !ok {
			missing = append(missing, strconv.Itoa(i))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("shards missing: %s of %d", strings.Join(missing, ", "), s.of)
	}
	return nil
}

// MergeCapacityShards reads the shard directories of one capacity search
// of the drill at path and returns the result the search run whole
// gives. The options are the shards' own (they must agree).
func MergeCapacityShards(path string, dirs []string) (*CapacityResult, error) {
	var (
		set  shardSet
		opts *capacityShardOpts
		fp   string
		subs []*CapacityResult
		c    *capacitySearch
	)
	for _, dir := range dirs {
		file := filepath.Join(dir, ShardFile)
		var sh capacityShardJSON
		if err := readShard(file, &sh); err != nil {
			return nil, err
		}
		if sh.Kind != ShardKindCapacity {
			return nil, fmt.Errorf("%s: not a capacity shard (kind %q)", file, clipName(sh.Kind))
		}
		if err := set.add(file, sh.Shard, sh.Of); err != nil {
			return nil, err
		}
		if opts == nil {
			o := sh.Options
			opts = &o
			var err error
			c, err = prepareCapacity(path, CapacityOptions{Key: o.Key, Min: o.Min, Max: o.Max, Seeds: o.Seeds, Precision: o.Precision, MaxProbes: o.MaxProbes, Overrides: o.Overrides})
			if err != nil {
				return nil, err
			}
			base, err := loadDrill(c.path, c.opt.Overrides)
			if err != nil {
				return nil, err
			}
			if fp, err = drillFingerprint(base); err != nil {
				return nil, err
			}
			if c.opt.Seeds < 2 || c.opt.Seeds > MaxSeeds {
				return nil, fmt.Errorf("%s: %d seeds", file, c.opt.Seeds)
			}
			subs = make([]*CapacityResult, c.opt.Seeds)
		}
		a, _ := json.Marshal(sh.Options)
		b, _ := json.Marshal(*opts)
		switch {
		case string(a) != string(b):
			return nil, fmt.Errorf("%s: searched with other options than the other shards", file)
		case sh.Fingerprint != fp:
			return nil, fmt.Errorf("%s: run on another version of %s or with other overrides", file, path)
		}
		want := Shard{Index: sh.Shard, Count: sh.Of}
		for _, sj := range sh.Searches {
			if sj.K < 0 || sj.K >= len(subs) || !want.owns(sj.K) || subs[sj.K] != nil {
				return nil, fmt.Errorf("%s: seed %d does not belong to shard %s", file, sj.K, want)
			}
			sub := *c.res
			sub.Seeds, sub.Found, sub.Bracket, sub.Answer, sub.Failing, sub.Note = 1, sj.Found, sj.Bracket, sj.Answer, orNaN(sj.Failing), sj.Note
			sub.Probes = make([]Probe, 0, len(sj.Probes))
			for _, p := range sj.Probes {
				sub.Probes = append(sub.Probes, Probe{Value: p.Value, Seeds: p.Seeds, Passed: p.Passed, Pass: p.Pass,
					Amplification: orNaN(p.Amplification), HealthyP99S: orNaN(p.HealthyP99S), DrainTimeS: orNaN(p.DrainTimeS),
					DeadLettered: orNaN(p.DeadLettered), FailedGates: p.FailedGates, Err: p.Err})
			}
			subs[sj.K] = &sub
		}
	}
	if err := set.complete(); err != nil {
		return nil, err
	}
	for k, sub := range subs {
		if sub == nil {
			return nil, fmt.Errorf("seed %d is in no shard", c.seed+uint64(k))
		}
	}
	c.combine(subs)
	return c.res, nil
}
