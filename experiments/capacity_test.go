package experiments

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stormdrill/stormdrill/internal/testsuite"
)

// The flagship drill, shortened: a 3-minute outage in a 6-minute drill.
// The full tier searches it with 16 and 32 workers.
var shortFlagship = map[string]string{
	"duration":                     `"6m"`,
	"drain":                        `"15m"`,
	"partners[1].outages[0].start": `"1m"`,
	"partners[1].outages[0].for":   `"3m"`,
}

// smallFlagship is the flagship cut down for the quick tier: 20
// subscribers, a 1-minute outage in a 2-minute drill, and a tenth of the
// workers. The boundary and its move with the pool are the same property
// at a hundredth of the attempts per probe, so it runs under -race too.
var smallFlagship = map[string]string{
	"duration":                     `"2m"`,
	"drain":                        `"10m"`,
	"partners[0].count":            "19",
	"partners[1].outages[0].start": `"30s"`,
	"partners[1].outages[0].for":   `"1m"`,
}

// capacityCase is the drill, the two pool sizes and the rate a capacity
// test searches with: the small flagship, or in the full tier the short
// one. At the rate, more than one worker is needed.
func capacityCase() (overrides map[string]string, workers [2]string, rate string) {
	if testsuite.Full() {
		return shortFlagship, [2]string{"16", "32"}, `"2/s"`
	}
	return smallFlagship, [2]string{"2", "4"}, `"10/s"`
}

// The flagship drill has a rate boundary, and doubling the workers moves
// it up.
func TestCapacityFlagshipWorkersMoveBoundary(t *testing.T) {
	base, pools, _ := capacityCase()
	var answers []float64
	for _, workers := range pools {
		ov := withOverride(base, "dispatcher.workers", workers)
		r, err := Capacity("../drills/fanout-outage.toml", CapacityOptions{Overrides: ov})
		if err != nil {
			t.Fatal(err)
		}
		if !r.Found || !r.Bracket {
			t.Fatalf("workers %s: no bracketed boundary: %s", workers, r.AnswerText())
		}
		if (r.Failing-r.Answer)/r.Answer > DefaultRatePrecision+1e-9 {
			t.Errorf("workers %s: bracket %g–%g wider than the precision", workers, r.Answer, r.Failing)
		}
		if len(r.Probes) > DefaultMaxProbes {
			t.Errorf("workers %s: %d probes", workers, len(r.Probes))
		}
		for _, p := range r.Probes {
			if p.Value == r.Answer && !p.Pass || p.Value == r.Failing && p.Pass {
				t.Errorf("workers %s: probe %+v contradicts the answer", workers, p)
			}
		}
		t.Logf("workers %s: %s", workers, r.AnswerText())
		answers = append(answers, r.Answer)
		if workers == pools[1] {
			dir := t.TempDir()
			if err := WriteCapacity(dir, r); err != nil {
				t.Fatal(err)
			}
			for _, f := range []string{"report.md", "summary.json", "capacity.png", "capacity.svg"} {
				if fi, err := os.Stat(filepath.Join(dir, f)); err != nil || fi.Size() == 0 {
					t.Errorf("%s: %v", f, err)
				}
			}
		}
	}
	if !(answers[1] > answers[0]) {
		t.Errorf("boundary with %s workers %g is not above that with %s workers %g", pools[1], answers[1], pools[0], answers[0])
	}
}

// Searching the worker count finds the smallest passing pool, to a step
// of one.
func TestCapacityWorkersSmallest(t *testing.T) {
	base, _, rate := capacityCase()
	ov := withOverride(base, "source.rate", rate)
	r, err := Capacity("../drills/fanout-outage.toml", CapacityOptions{Key: "dispatcher.workers", Overrides: ov})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Found || !r.Bracket || r.Failing != r.Answer-1 {
		t.Fatalf("want a boundary to a step of one: %s", r.AnswerText())
	}
	t.Log(r.AnswerText())
}

// With several seeds the search runs once per seed: the answer is the
// least per-seed boundary (it passed on its seed, and every other seed's
// boundary is at or above it), stated with the 95% CI of the per-seed
// boundaries, which the report and summary.json carry.
func TestCapacitySeedsStateACI(t *testing.T) {
	base, pools, _ := capacityCase()
	ov := withOverride(base, "dispatcher.workers", pools[0])
	// Two seeds keep the test short; the CLI default is DefaultCapacitySeeds.
	r, err := Capacity("../drills/fanout-outage.toml", CapacityOptions{Overrides: ov, Seeds: 2})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Found || len(r.SeedAnswers) != 2 {
		t.Fatalf("want two per-seed boundaries: %s (%v)", r.AnswerText(), r.SeedAnswers)
	}
	for _, a := range r.SeedAnswers {
		if a < r.Answer {
			t.Errorf("a seed's boundary %g is below the answer %g", a, r.Answer)
		}
	}
	if !(r.AnswerCILow <= r.AnswerMean && r.AnswerMean <= r.AnswerCIHigh) || r.AnswerCIHigh == r.AnswerCILow && r.SeedAnswers[0] != r.SeedAnswers[1] {
		t.Errorf("CI [%g, %g] around the mean %g", r.AnswerCILow, r.AnswerCIHigh, r.AnswerMean)
	}
	if !strings.Contains(r.AnswerText(), "95% CI") {
		t.Errorf("the answer states no CI: %s", r.AnswerText())
	}
	dir := t.TempDir()
	if err := WriteCapacity(dir, r); err != nil {
		t.Fatal(err)
	}
	js, _ := os.ReadFile(filepath.Join(dir, "summary.json"))
	if !strings.Contains(string(js), `"answer_ci95_low"`) {
		t.Errorf("summary.json has no CI:\n%s", js)
	}
}
