package drills

import (
	"strings"
	"testing"
)

// Every declared fault kind is complete and validates; a name outside the
// table is refused.
func TestFaultKindsDeclared(t *testing.T) {
	graceful := 0
	for _, k := range FaultKinds {
		if k.Name == "" || strings.ContainsAny(k.Name, " \t\n") || k.Doc == "" || strings.Contains(k.Doc, "\n") {
			t.Errorf("fault kind %q: want a one-word name and a one-line doc (got %q)", k.Name, k.Doc)
		}
		f := Fault{Kind: k.Name}
		if f.Graceful() != k.Graceful {
			t.Errorf("%s: Graceful() %v, declared %v", k.Name, f.Graceful(), k.Graceful)
		}
		if k.Graceful {
			graceful++
		}
		if _, err := Parse("f.toml", []byte(faultDrill(k.Name))); err != nil {
			t.Errorf("%s: %v", k.Name, err)
		}
	}
	if graceful == 0 || graceful == len(FaultKinds) {
		t.Errorf("%d of %d kinds graceful: both ways should be declared", graceful, len(FaultKinds))
	}
	if _, err := Parse("f.toml", []byte(faultDrill("reboot"))); err == nil || !strings.Contains(err.Error(), "f.toml:7: faults[0].kind") {
		t.Errorf("an unknown fault kind: %v", err)
	}
}

func faultDrill(kind string) string {
	return `name = "f"
duration = "1m"
source = { rate = "1/s" }
[[partners]]
name = "p"
[[faults]]
kind = "` + kind + `"
at = "10s"
`
}
