package drills

import (
	"math"
	"strings"
	"testing"
	"time"
)

// Every declared arrival kind is complete: a name, a one-line doc, a check,
// a schedule (First and Gap, or Once) and the rate the plan assumes. A kind
// added without any of these fails here.
func TestArrivalKindsDeclared(t *testing.T) {
	seen := map[string]bool{}
	for _, k := range ArrivalKinds {
		switch {
		case k.Name == "" || seen[k.Name]:
			t.Errorf("arrival kind %q: empty or declared twice", k.Name)
		case k.Doc == "" || strings.Contains(k.Doc, "\n"):
			t.Errorf("%s: doc must be one non-empty line", k.Name)
		case k.Check == nil:
			t.Errorf("%s: no Check", k.Name)
		case !k.Once && (k.First == nil || k.Gap == nil):
			t.Errorf("%s: neither Once nor a First and Gap", k.Name)
		case k.PlanRate == nil:
			t.Errorf("%s: no PlanRate for the plan", k.Name)
		}
		seen[k.Name] = true
		if !strings.Contains(arrivalDoc(), "`"+k.Name+"`") {
			t.Errorf("%s: missing from the key reference", k.Name)
		}
	}
}

// The rate the plan assumes is the rate the runners' schedule delivers:
// the events of the schedule over an hour, per second, are within 2% of
// PlanRate (a ramp: the plan sizes for its peak, the schedule averages
// the start and end rates).
func TestArrivalPlanRateMatchesTheSchedule(t *testing.T) {
	for _, k := range ArrivalKinds {
		d := &Drill{Seed: 5, Duration: Duration{D: time.Hour, Set: true}}
		d.Source = Source{Arrival: k.Name, Rate: Rate{PerSecond: 4, Set: true}, RateTo: Rate{PerSecond: 8, Set: true}, Events: 1000}
		if ps := k.Check(d); len(ps) > 0 {
			t.Fatalf("%s: %v", k.Name, ps)
		}
		want, err := d.PlanRate()
		if err != nil {
			t.Fatal(err)
		}
		a := d.NewArrivals()
		events := 0
		for {
			_, n, ok := a.Next()
			if !ok {
				break
			}
			events += n
		}
		got := float64(events) / d.Duration.D.Seconds()
		if k.Name == "ramp" {
			want = (4.0 + 8) / 2 // the peak, 8/s, is what PlanRate states
			if r, _ := d.PlanRate(); r != 8 {
				t.Errorf("ramp: PlanRate %v, want the peak 8", r)
			}
		}
		if math.Abs(got-want) > 0.02*want {
			t.Errorf("%s: the schedule gives %.3f events/s, the plan assumes %.3f", k.Name, got, want)
		}
	}
}
