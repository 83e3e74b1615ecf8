package reports_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/stormdrill/stormdrill/reports"
)

// A run directory's summary.json is the result contract: ReadSummary
// takes the directory (or the file), and Metric reads any figure a gate
// can name. A figure that could not be measured is null in the file and
// nil here, never 0: this external run's amplification is unknown.
func ExampleReadSummary() {
	dir, err := os.MkdirTemp("", "run")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	// An excerpt of what `stormdrill run` writes.
	const summaryJSON = `{
  "drill": "fanout-outage", "seed": 42, "mode": "external", "pass": false,
  "deliveries": {"created": 7200, "delivered": 7150, "dead_lettered": 50, "pending": 0, "lost": 0, "refused": 0},
  "amplification": null,
  "gates": [{"expr": "lost == 0", "value": 0, "display": "0", "pass": true},
            {"expr": "amplification <= 3", "value": 0, "display": "unknown", "pass": false}]
}`
	if err := os.WriteFile(filepath.Join(dir, "summary.json"), []byte(summaryJSON), 0o644); err != nil {
		fmt.Println(err)
		return
	}
	s, err := reports.ReadSummary(dir)
	if err != nil {
		fmt.Println(err)
		return
	}
	dead, _, err := s.Metric("dead_lettered")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s (seed %d, %s): pass %v, %d delivered, %.0f dead-lettered\n", s.Drill, s.Seed, s.Mode, s.Pass, s.Deliveries.Delivered, dead)
	fmt.Println("amplification measured:", s.Amplification != nil)
	for _, g := range s.Gates {
		fmt.Printf("%s: %s, pass %v\n", g.Expr, g.Display, g.Pass)
	}
	// Output:
	// fanout-outage (seed 42, external): pass false, 7150 delivered, 50 dead-lettered
	// amplification measured: false
	// lost == 0: 0, pass true
	// amplification <= 3: unknown, pass false
}
