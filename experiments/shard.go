package experiments

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// MaxShards bounds --shard I/N.
const MaxShards = 10_000

// ShardFile is the file a sharded sweep writes into its directory.
const ShardFile = "shard.json"

// Shard is one share of a sweep's runs: run i (cell-major, then seed)
// belongs to shard i mod Count. Round-robin keeps the shards' costs alike
// when cells differ in cost. Count 0 or 1 is the whole sweep.
type Shard struct {
	Index, Count int
}

func (s Shard) owns(run int) bool { return s.Count <= 1 || run%s.Count == s.Index }

// String is "I/N".
func (s Shard) String() string { return strconv.Itoa(s.Index) + "/" + strconv.Itoa(s.Count) }

// ParseShard reads "I/N": shard I (counted from 0, as a Kubernetes
// Indexed Job's JOB_COMPLETION_INDEX) of N.
func ParseShard(v string) (Shard, error) {
	is, ns, ok := strings.Cut(v, "/")
	i, err1 := strconv.Atoi(is)
	n, err2 := strconv.Atoi(ns)
	if !ok || err1 != nil || err2 != nil {
		return Shard{}, fmt.Errorf("%q: want I/N, such as 0/3", v)
	}
	if n < 1 || n > MaxShards {
		return Shard{}, fmt.Errorf("%q: N must be between 1 and %d", v, MaxShards)
	}
	if i < 0 || i >= n {
		return Shard{}, fmt.Errorf("%q: I must be between 0 and N-1 (%d)", v, n-1)
	}
	return Shard{Index: i, Count: n}, nil
}

// shardJSON is a shard's runs as written to shard.json. Values are exact:
// encoding/json writes the shortest decimal that reads back to the same
// float64, and NaN (a metric that does not apply) is null.
type shardJSON struct {
	Kind        string     `json:"kind"` // ShardKindSweep; absent in older files
	Experiment  string     `json:"experiment"`
	Fingerprint string     `json:"experiment_sha256"`
	Shard       int        `json:"shard"`
	Of          int        `json:"of"`
	Runs        int        `json:"runs"` // of the whole sweep
	Metrics     []string   `json:"metrics"`
	Done        []shardRun `json:"done"`
}

type shardRun struct {
	I      int        `json:"i"`
	Cell   int        `json:"cell"`
	Seed   uint64     `json:"seed"`
	Pass   bool       `json:"pass"`
	Err    string     `json:"err,omitempty"`
	Values []*float64 `json:"values"`
}

// fingerprint identifies the experiment file, so that shards run from
// different versions of it are not merged.
func fingerprint(e *Experiment) (string, error) {
	data, err := readSmallFile(e.Path, MaxExperimentBytes)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:]), nil
}

// WriteShard writes a shard's runs to dir/shard.json.
func WriteShard(dir string, r *SweepResult) error {
	if r.Shard.Count < 2 {
		return errors.New("not a shard's result")
	}
	fp, err := fingerprint(r.Experiment)
	if err != nil {
		return err
	}
	out := shardJSON{Kind: ShardKindSweep, Experiment: r.Experiment.Name, Fingerprint: fp, Shard: r.Shard.Index, Of: r.Shard.Count,
		Runs: len(r.Runs), Metrics: r.MetricNames, Done: []shardRun{}}
	for i, run := range r.Runs {
		if !r.Shard.owns(i) {
			continue
		}
		sr := shardRun{I: i, Cell: run.Cell, Seed: run.Seed, Pass: run.Pass, Err: run.Err}
		for _, v := range run.Values {
			sr.Values = append(sr.Values, nullable(v))
		}
		out.Done = append(out.Done, sr)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	data, err := json.MarshalIndent(out, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, ShardFile), append(data, '\n'), 0o644)
}

// maxShardBytes bounds one shard.json read back.
const maxShardBytes = 256 << 20

// MergeShards reads the shard directories of one sweep of e and returns
// the result the unsharded sweep gives: every run exactly once, the
// statistics computed from them in the same order.
func MergeShards(e *Experiment, dirs []string) (*SweepResult, error) {
	cells, err := e.loadCells()
	if err != nil {
		return nil, err
	}
	fp, err := fingerprint(e)
	if err != nil {
		return nil, err
	}
	names := AllMetricNames()
	res := &SweepResult{Experiment: e, MetricNames: names, Runs: make([]SweepRun, len(cells)*e.Seeds)}
	seen := make([]bool, len(res.Runs))
	var set shardSet
	for _, dir := range dirs {
		path := filepath.Join(dir, ShardFile)
		var sh shardJSON
		if err := readShard(path, &sh); err != nil {
			return nil, err
		}
		switch {
		case sh.Kind != "" && sh.Kind != ShardKindSweep:
			return nil, fmt.Errorf("%s: not a sweep's shard (kind %q)", path, clipName(sh.Kind))
		case sh.Fingerprint != fp:
			return nil, fmt.Errorf("%s: run from another version of %s", path, e.Path)
		case sh.Runs != len(res.Runs):
			return nil, fmt.Errorf("%s: %d runs, the experiment has %d", path, sh.Runs, len(res.Runs))
		case strings.Join(sh.Metrics, ",") != strings.Join(names, ","):
			return nil, fmt.Errorf("%s: written by another version of stormdrill (its metrics differ)", path)
		}
		if err := set.add(path, sh.Shard, sh.Of); err != nil {
			return nil, err
		}
		want := Shard{Index: sh.Shard, Count: sh.Of}
		for _, sr := range sh.Done {
			if sr.I < 0 || sr.I >= len(res.Runs) || !want.owns(sr.I) || seen[sr.I] || len(sr.Values) != len(names) {
				return nil, fmt.Errorf("%s: run %d does not belong to shard %s", path, sr.I, want)
			}
			seen[sr.I] = true
			run := SweepRun{Cell: sr.Cell, Seed: sr.Seed, Pass: sr.Pass, Err: sr.Err, Values: make([]float64, len(names))}
			for k, v := range sr.Values {
				run.Values[k] = math.NaN()
				if v != nil {
					run.Values[k] = *v
				}
			}
			res.Runs[sr.I] = run
		}
	}
	if err := set.complete(); err != nil {
		return nil, err
	}
	for i, ok := range seen {
		if !ok {
			return nil, fmt.Errorf("run %d is in no shard", i)
		}
	}
	res.gather(cells)
	return res, nil
}

func readShard(path string, sh any) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxShardBytes+1))
	if err != nil {
		return err
	}
	if len(data) > maxShardBytes {
		return fmt.Errorf("%s: larger than %d bytes", path, maxShardBytes)
	}
	if err := json.Unmarshal(data, sh); err != nil {
		return fmt.Errorf("%s: %v", path, err)
	}
	return nil
}
