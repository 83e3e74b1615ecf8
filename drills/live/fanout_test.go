package live

import (
	"context"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stormdrill/stormdrill/drills"
	"github.com/stormdrill/stormdrill/drills/sim"
	"github.com/stormdrill/stormdrill/model/runtime/queue"
)

// fanoutDrill: 45 subscribers in two cohorts, constant arrivals, healthy
// partners; SHAPE is the source.fanout under test.
const fanoutDrill = `
name = "fanout-live"
seed = 11
duration = "30s"
drain = "30s"
sample_interval = "5s"
[source]
arrival = "constant"
rate = "4/s"
SHAPE
[[partners]]
name = "small"
count = 40
latency = { dist = "constant", value = "5ms" }
[[partners]]
name = "big"
count = 5
latency = { dist = "constant", value = "5ms" }
[policy.retry]
max_attempts = 3
base = "1s"
cap = "1s"
jitter = "none"
[dispatcher]
workers = 8
attempt_timeout = "2s"
`

// TestFanoutShapesLive: source.fanout one (weighted), k and degree run
// live. Event n goes to the subscribers the simulation picks for event n
// (the same seeded stream), so the live store holds exactly the
// deliveries the simulation creates, cohort by cohort, and the offered
// deliveries per second measured live are the plan's within 15% (the
// sampling error of a drawn degree over 121 events is about 5%).
func TestFanoutShapesLive(t *testing.T) {
	if testing.Short() {
		t.Skip("runs live drills")
	}
	for _, shape := range []string{
		"fanout = \"one\"\nweights = { big = 8 }",
		"fanout = \"k\"\nk = 3",
		"fanout = \"degree\"\ndegree = [{ n = 1, p = 0.5 }, { n = 4, p = 0.5 }]",
	} {
		name, _, _ := strings.Cut(strings.TrimPrefix(shape, "fanout = \""), "\"")
		t.Run(name, func(t *testing.T) {
			src := strings.Replace(fanoutDrill, "SHAPE", shape, 1)
			simD := parseDrill(t, src)
			simRun, err := sim.Run(simD, sim.Options{})
			if err != nil {
				t.Fatal(err)
			}
			// The deliveries the simulation's picker makes, by id.
			specs, err := simD.PartnerSpecs()
			if err != nil {
				t.Fatal(err)
			}
			subs, _ := drills.Subscribers(simD, specs)
			want := map[string]bool{}
			arr, fan := simD.NewArrivals(), simD.NewFanout(specs)
			for ev := int64(0); ; {
				_, n, ok := arr.Next()
				if !ok {
					break
				}
				for ; n > 0; n-- {
					for _, si := range fan.Pick(ev, nil) {
						want[drills.DeliveryID(ev, subs[si].Name)] = true
					}
					ev++
				}
			}
			if int64(len(want)) != simRun.Summary.Deliveries.Created {
				t.Fatalf("the picker makes %d deliveries, the simulation created %d", len(want), simRun.Summary.Deliveries.Created)
			}

			dir := t.TempDir()
			liveRun, err := Run(parseDrill(t, "mode = \"live\"\nspeed = 10\n"+src), dir, Options{Executable: testExecutable(t), Log: logWriter{t}})
			if err != nil {
				t.Fatal(err)
			}
			s, l := simRun.Summary, liveRun.Summary
			if l.Deliveries.Created != s.Deliveries.Created || l.Deliveries.Lost != 0 || l.Deliveries.Pending != 0 {
				t.Errorf("live deliveries %+v; simulation created %d", l.Deliveries, s.Deliveries.Created)
			}
			for i := range s.Cohorts {
				if i >= len(l.Cohorts) || l.Cohorts[i].Deliveries != s.Cohorts[i].Deliveries {
					t.Errorf("cohort %s: live %+v, simulation %d deliveries", s.Cohorts[i].Name, l.Cohorts, s.Cohorts[i].Deliveries)
				}
			}
			if l.Offered != s.Offered {
				t.Errorf("offered live %+v, simulation %+v", l.Offered, s.Offered)
			}
			measured := float64(l.Deliveries.Created) / parseDrill(t, src).Duration.D.Seconds()
			if math.Abs(measured-l.Offered.DeliveriesPerS) > 0.15*l.Offered.DeliveriesPerS {
				t.Errorf("live offered %.2f deliveries/s, plan %.2f", measured, l.Offered.DeliveriesPerS)
			}

			st, err := queue.OpenSQLite(filepath.Join(dir, "queue.db"))
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			got := 0
			for after := ""; ; {
				page, err := st.Outcomes(context.Background(), after, queue.MaxList)
				if err != nil {
					t.Fatal(err)
				}
				if len(page) == 0 {
					break
				}
				for _, o := range page {
					if !want[o.ID] {
						t.Errorf("live delivery %s is not one the simulation makes", o.ID)
					}
					got++
				}
				after = page[len(page)-1].ID
			}
			if got != len(want) {
				t.Errorf("the live store holds %d deliveries, the simulation makes %d", got, len(want))
			}
			t.Logf("%s: %d deliveries, offered %.2f/s measured against %.2f/s planned", name, got, measured, l.Offered.DeliveriesPerS)
		})
	}
}
