package fakepartner

import "time"

// MaxAttemptBucket is the last per-ordinal bucket: attempts with ordinal
// MaxAttemptBucket or more share it.
const MaxAttemptBucket = 16

// LatencyBucketBounds are the upper bounds of PartnerStats.Latency buckets;
// one more bucket counts everything slower.
var LatencyBucketBounds = [...]time.Duration{
	time.Millisecond, 2 * time.Millisecond, 5 * time.Millisecond,
	10 * time.Millisecond, 20 * time.Millisecond, 50 * time.Millisecond,
	100 * time.Millisecond, 200 * time.Millisecond, 500 * time.Millisecond,
	time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second,
	20 * time.Second, 60 * time.Second,
}

// LatencyBucket counts requests whose handling took at most UpTo of drill
// time (the last bucket has UpTo 0 and counts the rest).
type LatencyBucket struct {
	UpTo  time.Duration `json:"up_to_ns"`
	Count int64         `json:"count"`
}

// PartnerStats is what one cohort observed.
type PartnerStats struct {
	Partner    string        `json:"partner"`
	Requests   int64         `json:"requests"`
	ByStatus   map[int]int64 `json:"by_status"` // answered requests by HTTP status
	Resets     int64         `json:"resets"`    // connections reset on purpose
	Held       int64         `json:"held"`      // requests held by a timeout outage
	Abandoned  int64         `json:"abandoned"` // the caller left before the answer
	Accepted   int64         `json:"accepted"`  // distinct delivery ids processed successfully
	Duplicates int64         `json:"duplicates"`
	NoKey      int64         `json:"no_key"`  // successful requests without Idempotency-Key
	Evicted    int64         `json:"evicted"` // accepted ids forgotten to bound memory
	// ByAttempt[i] counts requests with X-Attempt i+1; the last bucket
	// holds every ordinal from MaxAttemptBucket up; ordinal 0 or missing is
	// counted in the first.
	ByAttempt []int64         `json:"by_attempt"`
	Latency   []LatencyBucket `json:"latency"`
	FirstSeen time.Time       `json:"first_seen,omitzero"`
	LastSeen  time.Time       `json:"last_seen,omitzero"`
}

// Stats returns each cohort's counters, in the order of the specs.
func (s *Server) Stats() []PartnerStats {
	out := make([]PartnerStats, len(s.cohorts))
	for i, c := range s.cohorts {
		c.mu.Lock()
		out[i] = c.snapshot()
		c.mu.Unlock()
	}
	return out
}

// Accepted reports whether the cohort has accepted the delivery id (and still
// remembers it).
func (s *Server) Accepted(partner, id string) bool {
	c := s.byName[partner]
	if c == nil {
		return false
	}
	s.idsMu.Lock()
	defer s.idsMu.Unlock()
	return s.ids.has(newIDKey(c.index, id))
}

func (c *cohort) snapshot() PartnerStats {
	st := c.stats
	st.ByStatus = make(map[int]int64, len(c.stats.ByStatus))
	for k, v := range c.stats.ByStatus {
		st.ByStatus[k] = v
	}
	st.ByAttempt = append([]int64(nil), c.stats.ByAttempt...)
	st.Latency = append([]LatencyBucket(nil), c.stats.Latency...)
	return st
}
