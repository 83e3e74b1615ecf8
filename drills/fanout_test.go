package drills

import (
	"math"
	"slices"
	"strings"
	"testing"
)

func fanoutDrill(t *testing.T, source string) *Drill {
	t.Helper()
	d, err := Parse("fanout.toml", []byte(`name = "f"
seed = 3
duration = "1m"
[source]
arrival = "constant"
rate = "10/s"
`+source+`
[[partners]]
name = "small"
count = 90
[[partners]]
name = "big"
count = 10
`))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestFanoutShapes(t *testing.T) {
	const events = 20000
	tests := []struct {
		source   string
		mean     float64 // deliveries per event
		bigShare float64 // share of deliveries to cohort big
	}{
		{`fanout = "all"`, 100, 0.1},
		{`fanout = "one"`, 1, 0.1},
		{"fanout = \"one\"\nweights = { big = 9 }", 1, 0.5}, // 10×9 against 90×1
		{"fanout = \"k\"\nk = 3", 3, 0.1},
		{"fanout = \"degree\"\ndegree = [{ n = 1, p = 0.5 }, { n = 4, p = 0.5 }]", 2.5, 0.1},
	}
	for _, tt := range tests {
		d := fanoutDrill(t, tt.source)
		specs, err := d.PartnerSpecs()
		if err != nil {
			t.Fatal(err)
		}
		if got := d.FanoutMean(); got != tt.mean {
			t.Errorf("%s: FanoutMean %v, want %v", tt.source, got, tt.mean)
		}
		f := d.NewFanout(specs)
		var total, big int
		var buf []int32
		for e := int64(0); e < events; e++ {
			picks := f.Pick(e, buf)
			if f.Degree(e) != len(picks) {
				t.Fatalf("%s: event %d: Degree %d, Pick %d", tt.source, e, f.Degree(e), len(picks))
			}
			seen := map[int32]bool{}
			for _, si := range picks {
				if seen[si] || si < 0 || si >= 100 {
					t.Fatalf("%s: event %d picks %v: repeated or out of range", tt.source, e, picks)
				}
				seen[si] = true
				if si >= 90 {
					big++
				}
			}
			total += len(picks)
			if !f.All() {
				buf = picks
			}
		}
		if mean := float64(total) / events; math.Abs(mean-tt.mean) > 0.05*tt.mean {
			t.Errorf("%s: %.3f deliveries per event, want about %v", tt.source, mean, tt.mean)
		}
		if share := float64(big) / float64(total); math.Abs(share-tt.bigShare) > 0.02 {
			t.Errorf("%s: big gets %.3f of deliveries, want about %v", tt.source, share, tt.bigShare)
		}
		if got := 10 * d.SubscriberShare("big"); math.Abs(got-tt.bigShare) > 1e-9 {
			t.Errorf("%s: SubscriberShare(big)×10 = %v, want %v", tt.source, got, tt.bigShare)
		}
		// The choice is a function of the seed and the event number only.
		again := d.NewFanout(specs)
		if a, b := slices.Clone(f.Pick(77, nil)), again.Pick(77, nil); !slices.Equal(a, b) {
			t.Errorf("%s: event 77 picks %v, then %v", tt.source, a, b)
		}
	}
}

func TestFanoutValidation(t *testing.T) {
	for _, tt := range []struct{ source, want string }{
		{`fanout = "som"`, "source.fanout"},
		{"fanout = \"k\"\nk = 101", "source.k"},
		{"fanout = \"k\"", "source.k"},
		{`k = 2`, "only with fanout"},
		{"fanout = \"degree\"\ndegree = [{ n = 1, p = 0.5 }]", "add up to 0.5"},
		{"fanout = \"one\"\nweights = { nobody = 2 }", "names no partner cohort"},
		{"fanout = \"one\"\nweights = { big = -1 }", "above 0"},
		{"weights = { big = 2 }", "only with fanout"},
	} {
		_, err := Parse("fanout.toml", []byte(`name = "f"
duration = "1m"
[source]
rate = "10/s"
`+tt.source+`
[[partners]]
name = "small"
count = 90
[[partners]]
name = "big"
count = 10
`))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want one about %q", tt.source, err, tt.want)
		}
	}
}
