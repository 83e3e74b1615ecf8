package render

import (
	"fmt"
	"sort"
	"strings"

	"github.com/stormdrill/stormdrill/reports"
)

// maxFaultySides bounds the faulty cohorts shown side by side in the
// headline; the cohorts table lists them all.
const maxFaultySides = 4

// sideView is one column of the "faulty against healthy" headline: a
// faulty cohort, the healthy cohorts together, or the whole pipeline.
type sideView struct {
	Label         string
	Subscribers   string
	Amplification string
	DeadLetters   string // total and split by reason: "1,377 (permanent 1,377)"
	Drain         string // "4m46s", "not drained", "—" (no outage)
	OldestAge     string // max age of the oldest waiting delivery, "—" if not measured
	P99           string
	Attempts      string
	StatusCodes   string // "200: 7,001 · 503: 1,200"
}

// cohortSides builds the headline columns: each faulty cohort (up to
// maxFaultySides), the healthy cohorts together, then the pipeline totals.
// Without cohorts it is the pipeline alone.
func cohortSides(s *reports.Summary) (sides []sideView, faultyOmitted int) {
	var healthy []reports.Cohort
	faulty := 0
	for _, c := range s.Cohorts {
		if !c.Faulty {
			healthy = append(healthy, c)
			continue
		}
		faulty++
		if faulty > maxFaultySides {
			faultyOmitted++
			continue
		}
		sides = append(sides, cohortSide(s, reports.OneLine(c.Name)+" (faulty)", []reports.Cohort{c}))
	}
	if len(healthy) > 0 && faulty > 0 {
		sides = append(sides, cohortSide(s, "healthy", healthy))
	}
	pipe := sideView{
		Label:         "pipeline",
		Subscribers:   "—",
		Amplification: reports.RatioText(s.Amplification),
		DeadLetters:   deadLetterText(s.DeadLetterReasons, s.Deliveries.DeadLettered),
		Drain:         "—",
		OldestAge:     reports.FormatDuration(max(s.OldestReadyAgeMaxS, s.OldestDelayedAgeMaxS)),
		P99:           "—",
		Attempts:      reports.GroupDigits(s.Attempts.Total),
		StatusCodes:   "—",
	}
	var subs int
	codes := map[string]int64{}
	for _, c := range s.Cohorts {
		subs += c.Subscribers
		for k, n := range c.StatusCodes {
			codes[k] += n
		}
	}
	if subs > 0 {
		pipe.Subscribers = reports.GroupDigits(int64(subs))
	}
	if len(codes) > 0 {
		pipe.StatusCodes = statusCodeText(codes)
	}
	if len(s.Outages) > 0 {
		pipe.Drain = drainText(s)
	}
	return append(sides, pipe), faultyOmitted
}

// cohortSide sums cohorts into one column. Amplification is attempts ÷
// deliveries that made an attempt, recovered from each cohort's figure.
func cohortSide(s *reports.Summary, label string, cs []reports.Cohort) sideView {
	var subs int
	var attempts, dlq int64
	var attempted float64
	reasons := map[string]int64{}
	codes := map[string]int64{}
	var oldest *float64
	unknown := false // a cohort's amplification could not be measured
	names := map[string]bool{}
	p99 := "—"
	for _, c := range cs {
		names[c.Name] = true
		subs += c.Subscribers
		attempts += c.Attempts
		dlq += c.DeadLettered
		if c.Amplification == nil {
			unknown = true
		} else if *c.Amplification > 0 {
			attempted += float64(c.Attempts) / *c.Amplification
		}
		for k, n := range c.DeadLetters {
			reasons[k] += n
		}
		for k, n := range c.StatusCodes {
			codes[k] += n
		}
		if c.OldestAgeMaxS != nil && (oldest == nil || *c.OldestAgeMaxS > *oldest) {
			v := *c.OldestAgeMaxS
			oldest = &v
		}
	}
	// The healthy side's latency is the healthy-subscriber latency the
	// gates read; a faulty cohort's is its own.
	switch {
	case !cs[0].Faulty && s.HealthyLatencyS.Count > 0:
		p99 = reports.FormatDuration(s.HealthyLatencyS.P99)
	case cs[0].Faulty && len(cs) == 1 && cs[0].LatencyS.Count > 0:
		p99 = reports.FormatDuration(cs[0].LatencyS.P99)
	}
	v := sideView{
		Label:         label,
		Subscribers:   reports.GroupDigits(int64(subs)),
		Amplification: "—",
		DeadLetters:   deadLetterText(reasons, dlq),
		Drain:         "—",
		OldestAge:     "—",
		P99:           p99,
		Attempts:      reports.GroupDigits(attempts),
		StatusCodes:   "—",
	}
	switch {
	case unknown:
		v.Amplification = reports.Unknown
	case attempted > 0:
		v.Amplification = reports.FormatValue(reports.Ratio, float64(attempts)/attempted)
	}
	if oldest != nil {
		v.OldestAge = reports.FormatDuration(*oldest)
	}
	if len(codes) > 0 {
		v.StatusCodes = statusCodeText(codes)
	}
	// Drain time belongs to the cohorts an outage hits.
	worst, any, drained := 0.0, false, true
	for _, o := range s.Outages {
		if !names[o.Partner] {
			continue
		}
		any = true
		if o.DrainTimeS == nil {
			drained = false
			continue
		}
		worst = max(worst, *o.DrainTimeS)
	}
	switch {
	case any && !drained:
		v.Drain = "not drained"
	case any:
		v.Drain = reports.FormatDuration(worst)
	}
	return v
}

// drainText is the pipeline's drain time (the slowest outage) or why there
// is none.
func drainText(s *reports.Summary) string {
	if d, ok, _ := s.Metric("drain_time"); ok {
		return reports.FormatDuration(d)
	}
	return reports.NotApplicable(s, "drain_time")
}

// deadLetterText is a dead-letter total split by reason, largest first:
// "1,377 (permanent 1,377)"; "0" without dead letters.
func deadLetterText(byReason map[string]int64, total int64) string {
	if total == 0 {
		for _, n := range byReason {
			total += n
		}
	}
	if total == 0 {
		return "0"
	}
	rows, omitted := reasonRows(byReason, total)
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].n > rows[j].n })
	parts := make([]string, 0, len(rows))
	for _, r := range rows {
		parts = append(parts, r.Reason+" "+r.Count)
	}
	if omitted > 0 {
		parts = append(parts, fmt.Sprintf("%d more reasons", omitted))
	}
	if len(parts) == 0 {
		return reports.GroupDigits(total)
	}
	return reports.GroupDigits(total) + " (" + strings.Join(parts, ", ") + ")"
}

// maxStatusCodes bounds the status codes named in one cell.
const maxStatusCodes = 12

// statusCodeText lists status-code counts, codes in ascending order and
// the no-answer kinds ("reset", "timeout") last: "200: 7,001 · 503: 1,200".
func statusCodeText(codes map[string]int64) string {
	keys := make([]string, 0, len(codes))
	for k := range codes {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		ni, nj := isNumeric(keys[i]), isNumeric(keys[j])
		if ni != nj {
			return ni
		}
		return keys[i] < keys[j]
	})
	var parts []string
	for i, k := range keys {
		if i >= maxStatusCodes {
			parts = append(parts, fmt.Sprintf("%d more", len(keys)-i))
			break
		}
		parts = append(parts, reports.OneLine(k)+": "+reports.GroupDigits(codes[k]))
	}
	return strings.Join(parts, " · ")
}

func isNumeric(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// cohortLine is one side in a line, as the terminal prints it: a faulty
// cohort leads with its amplification and drain time; the healthy cohorts
// with amplification and latency against the SLO; the pipeline with its
// totals.
func cohortLine(s *reports.Summary, sd sideView) string {
	var parts []string
	switch {
	case strings.HasSuffix(sd.Label, "(faulty)"):
		parts = append(parts, "amplification "+sd.Amplification, "drain time "+sd.Drain)
		if sd.OldestAge != "—" {
			parts = append(parts, "oldest age "+sd.OldestAge)
		}
		parts = append(parts, "DLQ "+sd.DeadLetters)
	case sd.Label == "pipeline":
		parts = append(parts, "amplification "+sd.Amplification)
		if len(s.Cohorts) == 0 || !anyFaulty(s) {
			parts = append(parts, "healthy p99 "+healthyP99Text(s))
			if len(s.Outages) > 0 {
				parts = append(parts, "drain time "+sd.Drain)
			}
		}
		parts = append(parts, "DLQ "+sd.DeadLetters, "lost "+reports.GroupDigits(s.Deliveries.Lost))
	default:
		parts = append(parts, "amplification "+sd.Amplification, "p99 "+healthyP99Text(s), "DLQ "+sd.DeadLetters)
	}
	label := sd.Label
	if sd.Label == "healthy" {
		label = fmt.Sprintf("healthy (%s subscribers)", sd.Subscribers)
	}
	return label + ": " + strings.Join(parts, " · ")
}

func anyFaulty(s *reports.Summary) bool {
	for _, c := range s.Cohorts {
		if c.Faulty {
			return true
		}
	}
	return false
}

// healthyP99Text is the healthy p99 with the SLO beside it.
func healthyP99Text(s *reports.Summary) string {
	p99 := "n/a"
	if s.HealthyLatencyS.Count > 0 {
		p99 = reports.FormatDuration(s.HealthyLatencyS.P99)
	}
	if s.SLOS > 0 {
		p99 += " (SLO " + reports.FormatDuration(s.SLOS) + ")"
	}
	return p99
}
