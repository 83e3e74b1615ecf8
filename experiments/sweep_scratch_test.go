package experiments

import (
	"fmt"
	"testing"
)

func TestScratchJitter(t *testing.T) {
	for _, ov := range []map[string]string{
		{},
		{"partners.latency": `{dist = "abs-normal", mean = "10ms", stddev = "2ms"}`},
		{"partners.latency": `{dist = "abs-normal", mean = "10ms", stddev = "2ms"}`, "policy.retry.base": `"10ms"`},
	} {
		e, err := LoadExperiment("jitter.toml")
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range ov {
			e.Overrides[k] = v
		}
		e.Axes[0].Values = e.Axes[0].Values[4:6]
		r, err := RunSweep(e, SweepOptions{})
		if err != nil {
			t.Fatal(err)
		}
		fmt.Println(ov)
		for i, c := range r.Cells {
			fmt.Printf("%v %.0f±%.0f  %.2fs\n", c.Labels, r.Cells[i].Stats[0].Mean, r.Cells[i].Stats[0].CIHalf, r.Cells[i].Stats[1].Mean)
		}
	}
}
