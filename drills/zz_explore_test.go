package drills

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

func TestZZExplore(t *testing.T) {
	files, _ := filepath.Glob("*.toml")
	for _, f := range files {
		d, err := Load(f, nil)
		if err != nil {
			t.Fatal(err)
		}
		st := time.Now()
		run, err := RunSim(d, SimOptions{})
		if err != nil {
			t.Fatal(f, err)
		}
		s := run.Summary
		fmt.Printf("%s %v pass=%v created=%d deliv=%d dlq=%d pend=%d lost=%d att=%d amp=%.2f dlqr=%v held=%.1f dup=%d drill=%.0fs samples=%d\n", f, time.Since(st), s.Pass, s.Deliveries.Created, s.Deliveries.Delivered, s.Deliveries.DeadLettered, s.Deliveries.Pending, s.Deliveries.Lost, s.Attempts.Total, s.Amplification, s.DeadLetterReasons, s.SourceHeldBackS, s.Duplicates, s.DrillTimeS, len(run.Timeseries.Samples))
		for _, g := range s.Gates {
			fmt.Printf("   gate %s = %v %v\n", g.Expr, g.Value, g.Pass)
		}
	}
}
