package fakepartner

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
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
	if problems, err := lintRegistry(reg); err != nil || len(problems) > 0 {
		t.Errorf("metric lint: %v %v", err, problems)
	}
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	latency := map[string]uint64{}
	outage := map[string]float64{}
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			l := map[string]string{}
			for _, lp := range m.GetLabel() {
				l[lp.GetName()] = lp.GetValue()
			}
			switch f.GetName() {
			case "stormdrill_partner_requests_total":
				got[l["partner"]+"/"+l["status"]+"/"+l["fault"]] = m.GetCounter().GetValue()
			case "stormdrill_partner_response_seconds":
				latency[l["partner"]] = m.GetHistogram().GetSampleCount()
			case "stormdrill_partner_outage_subscribers":
				outage[l["partner"]] = m.GetGauge().GetValue()
			}
		}
	}
	// Every request has its response time; one subscriber of acme is down
	// now (drill time 15s), none of other.
	if latency["acme"] != 4 || latency["other"] != 1 {
		t.Errorf("response-time histogram counts %v, want acme 4, other 1", latency)
	}
	if outage["acme"] != 1 || outage["other"] != 0 || len(outage) != 2 {
		t.Errorf("outage gauge %v, want acme 1, other 0", outage)
	}
	clock.Set(t0.Add(40 * sec))
	if fams, err = reg.Gather(); err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() == "stormdrill_partner_outage_subscribers" && f.GetMetric()[0].GetGauge().GetValue() != 0 {
			t.Errorf("acme's outage gauge reads %v after the outage ended", f.GetMetric()[0].GetGauge().GetValue())
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

// lintRegistry runs Prometheus' metric lint (promtool check metrics) on
// what reg gathers.
func lintRegistry(reg *prometheus.Registry) ([]promlint.Problem, error) {
	fams, err := reg.Gather()
	if err != nil {
		return nil, err
	}
	return promlint.NewWithMetricFamilies(fams).Lint()
}
