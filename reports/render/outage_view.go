package render

import "github.com/stormdrill/stormdrill/reports"

// maxOutageLines bounds the outage sentences of the first screen; the
// Outages table lists every outage.
const maxOutageLines = 5

// outageLines is one sentence per outage, what it did: "acme unavailable
// 20m: 1,234 retries, drained 4m46s after it ended, 0 dead letters". A
// figure the run did not measure is "unknown".
func outageLines(s *reports.Summary) (lines []string, omitted int) {
	for i, o := range s.Outages {
		if i >= maxOutageLines {
			return lines, len(s.Outages) - i
		}
		what := reports.OneLine(o.Partner) + " " + reports.OneLine(o.Kind)
		if o.Manual {
			what += " (manual)"
		}
		what += " " + reports.FormatDuration(o.EndS-o.StartS) + " (" + reports.FormatDuration(o.StartS) + "–" + reports.FormatDuration(o.EndS) + ")"
		retries, dead := "retries unknown", "dead letters unknown"
		if o.Retries != nil {
			retries = reports.GroupDigits(*o.Retries) + plural(*o.Retries, " retry", " retries")
		}
		if o.DeadLetters != nil {
			dead = reports.GroupDigits(*o.DeadLetters) + plural(*o.DeadLetters, " dead letter", " dead letters")
		}
		drain := "not drained when the drill ended"
		if o.DrainTimeS != nil {
			drain = "drained " + reports.FormatDuration(*o.DrainTimeS) + " after it ended"
		}
		lines = append(lines, what+": "+retries+", "+drain+", "+dead)
	}
	return lines, 0
}

func plural(n int64, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
