package fakepartner

import (
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// requestKey labels one count of stormdrill_partner_requests_total. Its
// values are bounded: cohorts by the drill, statuses by HTTP, faults by
// the outage kinds.
type requestKey struct {
	cohort int
	status string // "200", "503", …, or reset, no-answer, abandoned
	fault  string // the outage kind in force, or none
}

// requestCounts counts requests by partner, status and fault, and their
// response times by partner, for the Prometheus collector.
type requestCounts struct {
	mu      sync.Mutex
	n       map[requestKey]int64
	latency map[int]*latencyHist // by cohort
}

// latencyBuckets are the upper bounds of the response-time histogram, in
// wall seconds: 1 ms to about 65 s.
var latencyBuckets = prometheus.ExponentialBuckets(0.001, 2, latencyBucketCount)

const latencyBucketCount = 17

// latencyHist is one cohort's response-time histogram: counts per bucket
// (not cumulative; the last is +Inf), the sum and the count.
type latencyHist struct {
	counts [latencyBucketCount + 1]uint64
	sum    float64
	n      uint64
}

func (rc *requestCounts) add(k requestKey, took time.Duration) {
	secs := max(took, 0).Seconds()
	i := sort.SearchFloat64s(latencyBuckets, secs)
	rc.mu.Lock()
	if rc.n == nil {
		rc.n = map[requestKey]int64{}
		rc.latency = map[int]*latencyHist{}
	}
	rc.n[k]++
	h := rc.latency[k.cohort]
	if h == nil {
		h = &latencyHist{}
		rc.latency[k.cohort] = h
	}
	h.counts[i]++
	h.sum += secs
	h.n++
	rc.mu.Unlock()
}

// statusLabel is how an outcome shows in the status label.
func (o outcome) statusLabel() string {
	switch {
	case o.reset:
		return "reset"
	case o.held:
		return "no-answer"
	case o.abandoned || o.status == 0:
		return "abandoned"
	}
	return strconv.Itoa(o.status)
}

// faultLabel is the outage kind in force for the subscriber when the
// request arrived, or "none".
func (s *Server) faultLabel(c *cohort, member int, arrived time.Time) string {
	if o, ok := s.faultAt(c, member, arrived); ok {
		return o.Kind.String()
	}
	return "none"
}

// Collector returns a Prometheus collector of what the partners received,
// times in wall seconds:
//
//	stormdrill_partner_requests_total{partner, status, fault}
//	stormdrill_partner_response_seconds{partner}    histogram: arrival → answer
//	stormdrill_partner_outage_subscribers{partner}  subscribers with an outage in force now
//
// partner is the cohort; status the HTTP status answered, or reset,
// no-answer (a timeout outage held the request) or abandoned (the caller
// left first), as the dispatcher's status label; fault the outage kind in
// force, or none.
func (s *Server) Collector() prometheus.Collector { return &partnerCollector{s: s} }

var (
	partnerRequestsDesc = prometheus.NewDesc("stormdrill_partner_requests_total",
		"Requests the fake partners received, by partner (cohort), status answered and the outage kind in force.",
		[]string{"partner", "status", "fault"}, nil)
	partnerLatencyDesc = prometheus.NewDesc("stormdrill_partner_response_seconds",
		"Time in seconds from a request's arrival to its answer (or reset, or the caller leaving), by partner (cohort).",
		[]string{"partner"}, nil)
	partnerOutageDesc = prometheus.NewDesc("stormdrill_partner_outage_subscribers",
		"Subscribers of the partner (cohort) with an outage in force now, scripted or set through the control API; 0 when none.",
		[]string{"partner"}, nil)
)

type partnerCollector struct{ s *Server }

func (pc *partnerCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- partnerRequestsDesc
	ch <- partnerLatencyDesc
	ch <- partnerOutageDesc
}

func (pc *partnerCollector) Collect(ch chan<- prometheus.Metric) {
	s := pc.s
	s.requests.mu.Lock()
	keys := make([]requestKey, 0, len(s.requests.n))
	for k := range s.requests.n {
		keys = append(keys, k)
	}
	counts := make([]int64, len(keys))
	for i, k := range keys {
		counts[i] = s.requests.n[k]
	}
	hists := make([]latencyHist, len(s.cohorts))
	for c, h := range s.requests.latency {
		hists[c] = *h
	}
	s.requests.mu.Unlock()
	now := s.now()
	for i, c := range s.cohorts {
		h := hists[i]
		buckets := make(map[float64]uint64, len(latencyBuckets))
		var cum uint64
		for b, upTo := range latencyBuckets {
			cum += h.counts[b]
			buckets[upTo] = cum
		}
		ch <- prometheus.MustNewConstHistogram(partnerLatencyDesc, h.n, h.sum, buckets, c.spec.Name)
		affected := 0
		for m := range c.spec.Count {
			if _, ok := s.faultAt(c, m, now); ok {
				affected++
			}
		}
		ch <- prometheus.MustNewConstMetric(partnerOutageDesc, prometheus.GaugeValue, float64(affected), c.spec.Name)
	}
	order := make([]int, len(keys))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool {
		ka, kb := keys[order[a]], keys[order[b]]
		if ka.cohort != kb.cohort {
			return ka.cohort < kb.cohort
		}
		if ka.status != kb.status {
			return ka.status < kb.status
		}
		return ka.fault < kb.fault
	})
	for _, i := range order {
		k := keys[i]
		ch <- prometheus.MustNewConstMetric(partnerRequestsDesc, prometheus.CounterValue, float64(counts[i]),
			s.cohorts[k.cohort].spec.Name, k.status, k.fault)
	}
}
