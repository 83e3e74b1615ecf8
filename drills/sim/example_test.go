package sim_test

import (
	"fmt"

	"github.com/stormdrill/stormdrill/drills"
	"github.com/stormdrill/stormdrill/drills/sim"
)

// Load a drill (here the bundled demo-healthy, by its bare name, shortened
// to two minutes with an override, as --set does), simulate it, and read
// the summary. The drill's seed decides every random stream, so the
// figures are the same on every run and every machine.
func ExampleRun() {
	d, err := drills.Load("demo-healthy", map[string]string{"duration": `"2m"`})
	if err != nil {
		fmt.Println(err)
		return
	}
	run, err := sim.Run(d, sim.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	s := run.Summary
	fmt.Printf("seed %d: %d created, %d delivered, %d dead-lettered, %d lost\n",
		s.Seed, s.Deliveries.Created, s.Deliveries.Delivered, s.Deliveries.DeadLettered, s.Deliveries.Lost)
	fmt.Printf("amplification %.3f, healthy latency p99 %.2fs\n", *s.Amplification, s.HealthyLatencyS.P99)
	for _, g := range s.Gates {
		fmt.Printf("%-28s %-8s pass %v\n", g.Expr, g.Display, g.Pass)
	}
	// Output:
	// seed 1: 245 created, 245 delivered, 0 dead-lettered, 0 lost
	// amplification 1.098, healthy latency p99 5.17s
	// lost == 0                    0        pass true
	// dead_lettered == 0           0        pass true
	// amplification <= 1.2         1.098    pass true
	// healthy.latency.p99 < 30s    5.2s     pass true
}
