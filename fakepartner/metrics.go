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

// requestCounts counts requests by partner, status and fault for the
// Prometheus collector.
type requestCounts struct {
	mu sync.Mutex
	n  map[requestKey]int64
}

func (rc *requestCounts) add(k requestKey) {
	rc.mu.Lock()
	if rc.n == nil {
		rc.n = map[requestKey]int64{}
	}
	rc.n[k]++
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

// Collector returns a Prometheus collector of what the partners received:
//
//	stormdrill_partner_requests_total{partner, status, fault}
//
// partner is the cohort; status the HTTP status answered, or reset,
// no-answer (a timeout outage held the request) or abandoned (the caller
// left first); fault the outage kind in force, or none.
func (s *Server) Collector() prometheus.Collector { return &partnerCollector{s: s} }

var partnerRequestsDesc = prometheus.NewDesc("stormdrill_partner_requests_total",
	"Requests the fake partners received, by partner (cohort), status answered and the outage kind in force.",
	[]string{"partner", "status", "fault"}, nil)

type partnerCollector struct{ s *Server }

func (pc *partnerCollector) Describe(ch chan<- *prometheus.Desc) { ch <- partnerRequestsDesc }

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
	s.requests.mu.Unlock()
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
