package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/stormdrill/stormdrill/drills"
)

// Checks a command runs on its command line before it does any work, so
// that a typo costs nothing. Each is a plain function of the flag values:
// it carries over to any flag library.

// checkNoEmptyFlags refuses a flag given with an empty value (--out "",
// --seed ""): it would otherwise silently mean "the default".
func checkNoEmptyFlags(fs *pflag.FlagSet) error {
	var bad []string
	fs.Visit(func(f *pflag.Flag) {
		switch v := f.Value.(type) {
		case *multiFlag:
			if slices.Contains(*v, "") {
				bad = append(bad, "--"+f.Name)
			}
		default:
			if v.Type() == "string" && strings.TrimSpace(v.String()) == "" {
				bad = append(bad, "--"+f.Name)
			}
		}
	})
	if len(bad) > 0 {
		return usagef("stormdrill %s: %s: empty value; give a value or leave the flag out", fs.Name(), strings.Join(bad, ", "))
	}
	return nil
}

// limitKeys are the keys --limit takes: the drill's limits table.
var limitKeys = []string{"deliveries", "subscribers", "cohorts", "gates", "array", "samples"}

// limitOverrides turns --limit KEY=N flags into drill overrides of
// limits.KEY.
func limitOverrides(cmd string, vals []string, into map[string]string) (map[string]string, error) {
	if into == nil {
		into = map[string]string{}
	}
	for _, v := range vals {
		k, n, ok := strings.Cut(v, "=")
		k = strings.TrimSpace(k)
		if !ok || !slices.Contains(limitKeys, k) {
			return nil, usagef("stormdrill %s: --limit %q: want KEY=N with KEY one of %s", cmd, clipArg(v), strings.Join(limitKeys, ", "))
		}
		x, err := strconv.ParseInt(strings.ReplaceAll(strings.TrimSpace(n), "_", ""), 10, 64)
		if err != nil || x < 1 {
			return nil, usagef("stormdrill %s: --limit %s: want a whole number of at least 1 (got %q)", cmd, k, clipArg(n))
		}
		into["limits."+k] = strconv.FormatInt(x, 10)
	}
	return into, nil
}

// checkOutDir makes sure dir can be created and written, before a run that
// would otherwise end by failing to write its report.
// What it creates to find out, it removes again: a command refused later
// leaves nothing behind.
func checkOutDir(cmd, dir string) error {
	created := ""
	for p := filepath.Clean(dir); ; p = filepath.Dir(p) {
		if _, err := os.Lstat(p); err == nil {
			break
		}
		created = p
		if filepath.Dir(p) == p {
			break
		}
	}
	if created != "" {
		defer os.RemoveAll(created)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return usagef("stormdrill %s: --out %s: cannot create it: %v", cmd, clipArg(dir), unwrapPathErr(err))
	}
	f, err := os.CreateTemp(dir, ".stormdrill-write-check-*")
	if err != nil {
		return usagef("stormdrill %s: --out %s: cannot write there: %v", cmd, clipArg(dir), unwrapPathErr(err))
	}
	name := f.Name()
	f.Close()
	_ = os.Remove(name)
	return nil
}

func unwrapPathErr(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// checkFailOn refuses --fail-on without --baseline: the tolerances compare
// against a baseline, and without one they would be silently ignored.
func checkFailOn(cmd string, failOn []string, baseline string) error {
	if len(failOn) > 0 && baseline == "" {
		return usagef("stormdrill %s: --fail-on needs --baseline (the run it compares against)", cmd)
	}
	return nil
}

// checkDistinctNames refuses two drills of one name in one run: both would
// write to the same output directory.
func checkDistinctNames(files []string, loaded []*drills.Drill) error {
	seen := map[string]int{}
	for i, d := range loaded {
		if d == nil {
			continue
		}
		if j, dup := seen[d.Name]; dup {
			return usagef("stormdrill run: %s and %s are both named %q; each run writes out/<name>, so give one a different name", files[j], files[i], d.Name)
		}
		seen[d.Name] = i
	}
	return nil
}

// checkReplayScope refuses a dlq replay of every dead letter unless it says
// so: without --reason a replay would also resend the permanent failures.
func checkReplayScope(reason, partner, cohort string, all bool) error {
	switch {
	case reason == "" && partner == "" && cohort == "" && !all:
		return usagef("stormdrill dlq replay: give --reason REASON (or --cohort, --partner), or --all to replay every dead letter (permanent ones included)")
	case (reason != "" || partner != "" || cohort != "") && all:
		return usagef("stormdrill dlq replay: --all excludes --reason, --cohort and --partner")
	}
	return nil
}

// clipArg shortens a command-line value echoed in a message.
func clipArg(s string) string {
	if len(s) > 100 {
		return fmt.Sprintf("%s...", s[:97])
	}
	return s
}

// outDirFor is where a single drill's run writes: --out, or out/<name>.
func outDirFor(out, name string) string {
	if out == "" {
		return filepath.Join("out", name)
	}
	return out
}

// durationFlag is a duration written as drills write theirs ("90s",
// "10m", "1h30m").
type durationFlag time.Duration

func (d *durationFlag) String() string {
	if *d == 0 {
		return ""
	}
	return time.Duration(*d).String()
}

func (d *durationFlag) Set(v string) error {
	x, err := drills.ParseDuration(v)
	if err != nil {
		return err
	}
	*d = durationFlag(x)
	return nil
}

func (d *durationFlag) Type() string { return "duration" }
