package external

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/stormdrill/stormdrill/reports"
)

// Late injection: a run is flagged when the injector's lateness p99 is
// above both lateFloor and lateShare of the healthy latency p50, since
// every latency is measured from the schedule the lateness moved.
const (
	lateFloor = 100 * time.Millisecond
	lateShare = 0.1
)

// unidentified counts things the harness could not tie to anything it
// issued: when the first came, and the first few names seen.
type unidentified struct {
	n       int64
	firstAt int64 // drill ns; meaningful when n > 0
	samples []string
}

// maxSamples bounds the names a finding quotes.
const maxSamples = 3

func (u *unidentified) add(at int64, name string) {
	if u.n == 0 || at < u.firstAt {
		u.firstAt = at
	}
	u.n++
	if name != "" && len(u.samples) < maxSamples {
		u.samples = append(u.samples, name)
	}
}

func (u *unidentified) firstAtS() *float64 {
	v := max(0, float64(u.firstAt)/1e9)
	return &v
}

// findingCounts is what assemble counted for the findings.
type findingCounts struct {
	refused, refusedSeen int64
	noKey, badKey        unidentified
	unknownDead          unidentified
	unidentCohorts       map[int]bool
}

// findings lists what the harness saw go wrong outside the policy under
// test (the kinds of reports.FindingKinds).
func findings(h *harness, st *injectStats, s *reports.Summary, c findingCounts) []reports.Finding {
	var out []reports.Finding
	if cr := st.crash; cr != nil {
		at := cr.at.Seconds()
		msg := fmt.Sprintf("the system exited on its own (%s); the drill ended there, with %s deliveries unresolved", cr.status, groupCount(s.Deliveries.Pending))
		if len(cr.tail) > 0 {
			msg += "; its last lines below"
		}
		out = append(out, reports.Finding{Kind: reports.FindingSystemExited, Count: 1, FirstAtS: &at,
			Message: msg,
			Detail:  cr.tail})
	}
	if st.refusedEvents > 0 {
		at := st.firstRefusalAt.Seconds()
		msg := fmt.Sprintf("the ingest refused %d of %d events (%d deliveries never taken by the system; first: %v)",
			st.refusedEvents, st.events, c.refused, st.firstRefusal)
		if c.refusedSeen > 0 {
			msg += fmt.Sprintf("; %d deliveries of refused events reached the partners anyway, and count as created", c.refusedSeen)
		}
		out = append(out, reports.Finding{Kind: reports.FindingIngestRefused, Count: st.refusedEvents, FirstAtS: &at, Message: msg})
	}
	cohorts := cohortNames(h, c.unidentCohorts)
	if c.noKey.n > 0 {
		out = append(out, reports.Finding{Kind: reports.FindingUnidentified, Count: c.noKey.n, FirstAtS: c.noKey.firstAtS(),
			Message: fmt.Sprintf("%d attempts could not be identified: they carried no %s header (at %s); amplification and duplicates are unknown",
				c.noKey.n, keyHeader(h), cohorts)})
	}
	if c.badKey.n > 0 {
		out = append(out, reports.Finding{Kind: reports.FindingUnknownKeys, Count: c.badKey.n, FirstAtS: c.badKey.firstAtS(),
			Message: fmt.Sprintf("%d attempts could not be identified: their %s named no delivery of this run, as when a system changes the key on retries (at %s); amplification and duplicates are unknown",
				c.badKey.n, keyHeader(h), cohorts),
			Detail: quoted("key", c.badKey.samples)})
	}
	if c.unknownDead.n > 0 {
		out = append(out, reports.Finding{Kind: reports.FindingUnknownDeadLetters, Count: c.unknownDead.n, FirstAtS: c.unknownDead.firstAtS(),
			Message: fmt.Sprintf("%d dead letters named no delivery of this run", c.unknownDead.n),
			Detail:  quoted("id", c.unknownDead.samples)})
	}
	if rr := h.srv.ReportsRefused(); rr.Count > 0 {
		at := max(0, rr.FirstAt.Sub(h.start).Seconds())
		out = append(out, reports.Finding{Kind: reports.FindingReportsRefused, Count: rr.Count, FirstAtS: &at,
			Message: fmt.Sprintf("the partner server refused %d dead letters or alerts the system posted (first: %s)", rr.Count, rr.First)})
	}
	if st.deadLetterListError != nil {
		out = append(out, reports.Finding{Kind: reports.FindingDeadLetterListError, Count: 1,
			Message: st.deadLetterListError.Error()})
	}
	if l := s.Lateness; l != nil {
		limit := max(lateFloor.Seconds(), lateShare*s.HealthyLatencyS.P50)
		if l.P99 > limit {
			out = append(out, reports.Finding{Kind: reports.FindingLateInjection, Count: 1,
				Message: fmt.Sprintf("the injector's lateness p99 was %s, above %s (the larger of %s and %.0f%% of the healthy p50): latencies measured from the schedule mean little; run on a less loaded machine or at a lower rate",
					reports.FormatDuration(l.P99), reports.FormatDuration(limit), reports.FormatDuration(lateFloor.Seconds()), lateShare*100)})
		}
	}
	return out
}

func keyHeader(h *harness) string {
	if h.sys.KeyHeader != "" {
		return h.sys.KeyHeader
	}
	return "Idempotency-Key"
}

// cohortNames lists the cohorts in set, for a message.
func cohortNames(h *harness, set map[int]bool) string {
	var names []string
	for ci := range set {
		if ci < len(h.specs) {
			names = append(names, h.specs[ci].Name)
		}
	}
	sort.Strings(names)
	if len(names) == 0 {
		return "paths of no known subscriber"
	}
	return strings.Join(names, ", ")
}

func quoted(what string, samples []string) []string {
	var out []string
	for _, s := range samples {
		out = append(out, fmt.Sprintf("%s %q", what, s))
	}
	return out
}

func groupCount(n int64) string { return reports.FormatValue(reports.Count, float64(n)) }
