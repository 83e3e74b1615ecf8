package fakepartner

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// TestCollectorCountsByPartnerStatusAndFault: member 0 is down
// (unavailable) from 10s to 30s, member 1 is not; requests before, during
// and after, on both, land in their partner × status × fault series.
func TestCollectorCountsByPartnerStatusAndFault(t *testing.T) {
	sec := time.Second
	spec := quickSpec("acme", Outage{Start: 10 * sec, For: 20 * sec, Kind: OutageUnavailable, Members: 1})
	s, base, clock := startServer(t, []Spec{spec, quickSpec("other")}, ServerOptions{})
	c := client(5 * sec)
	post(c, base+"/p/acme/0", "a", "{}") // before: 200, none
	clock.Set(t0.Add(15 * sec))
	post(c, base+"/p/acme/0", "b", "{}") // during: 503, unavailable
	post(c, base+"/p/acme/0", "c", "{}")
	post(c, base+"/p/acme/1", "d", "{}") // the other member: 200, none
	post(c, base+"/p/other/0", "e", "{}")

	reg := prometheus.NewRegistry()
	reg.MustRegister(s.Collector())
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range fams {
		if f.GetName() != "stormdrill_partner_requests_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			l := map[string]string{}
			for _, lp := range m.GetLabel() {
				l[lp.GetName()] = lp.GetValue()
			}
			got[l["partner"]+"/"+l["status"]+"/"+l["fault"]] = m.GetCounter().GetValue()
		}
	}
	want := map[string]float64{"acme/200/none": 2, "acme/503/unavailable": 2, "other/200/none": 1}
	if len(got) != len(want) {
		t.Errorf("series %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v (all: %v)", k, got[k], v, got)
		}
	}
}
