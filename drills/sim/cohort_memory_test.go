package sim

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/stormdrill/stormdrill/drills"
)

// manyCohortsDrill is a drill of n one-subscriber cohorts, each receiving
// some deliveries.
func manyCohortsDrill(t testing.TB, n int) *drills.Drill {
	t.Helper()
	var b strings.Builder
	b.WriteString("name = \"cohorts\"\nduration = \"10s\"\ndrain = \"1m\"\n[source]\narrival = \"constant\"\nrate = \"1/s\"\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "[[partners]]\nname = \"p%d\"\nlatency = { dist = \"lognormal\", p50 = \"80ms\", p99 = \"2s\" }\n", i)
	}
	d, err := drills.Parse("cohorts.toml", []byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// A simulated run's memory per cohort is small: the per-cohort latency
// histograms once took 272 KiB each, so 66,000 cohorts took gigabytes.
func TestMemoryPerCohort(t *testing.T) {
	const n = 300
	d := manyCohortsDrill(t, n)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	run, err := Run(d, Options{})
	if err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	perCohort := float64(after.TotalAlloc-before.TotalAlloc) / n
	t.Logf("%.0f KiB allocated per cohort (%d deliveries)", perCohort/1024, run.Summary.Deliveries.Created)
	if perCohort > 128<<10 {
		t.Errorf("%.0f KiB allocated per cohort over the run, want at most 128 KiB", perCohort/1024)
	}
}
