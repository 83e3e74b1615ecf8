package sim

import (
	"bytes"
	"testing"
)

// The partner fault kinds in a simulated drill (testdata/faults.toml), each
// kind in a cohort of its own, as a scripted outage and as a per-call
// probability (cohorts pc-*): each cohort's attempts end as its kind says,
// lost acks come back as duplicates that duplicates_beyond_in_flight leaves
// out, a redirect dead-letters as permanent, and nothing is lost.
func TestFaultKindsDrill(t *testing.T) {
	d := loadDrill(t, "testdata/faults.toml", nil)
	run := runDrill(t, d)
	s := run.Summary
	codes := map[string]map[string]int64{}
	deadLetters := map[string]int64{}
	for _, c := range s.Cohorts {
		codes[c.Name] = c.StatusCodes
		deadLetters[c.Name] = c.DeadLettered
		t.Logf("%-12s %v", c.Name, c.StatusCodes)
	}
	t.Logf("duplicates %d, lost acks %d, dead letters %v", *s.Duplicates, s.LostAcks, s.DeadLetterReasons)
	if s.Deliveries.Lost != 0 || s.Deliveries.Pending != 0 {
		t.Errorf("deliveries %+v: want none lost or pending", s.Deliveries)
	}
	// Each cohort's fault shows as the outcome the caller classes it by;
	// the outages' at least 20 times, the per-call faults on about their
	// share of the cohort's attempts.
	attempts := func(cohort string) (n int64) {
		for _, k := range codes[cohort] {
			n += k
		}
		return n
	}
	for _, tt := range []struct {
		cohort, outcome string
		share           float64 // per call: the probability; 0 for an outage
	}{
		{"lostack", "reset", 0}, {"redirect", "307", 0}, {"refused", "refused", 0}, {"dribble", "timeout", 0},
		{"empty", "reset", 0}, {"garbage", "reset", 0}, {"truncated", "reset", 0},
		{"pc-lostack", "reset", 0.2}, {"pc-redirect", "307", 0.1}, {"pc-dribble", "timeout", 0.2},
		{"pc-empty", "reset", 0.2}, {"pc-garbage", "reset", 0.2}, {"pc-truncated", "reset", 0.2},
	} {
		n, all := codes[tt.cohort][tt.outcome], attempts(tt.cohort)
		if others := all - n - codes[tt.cohort]["200"]; others != 0 {
			t.Errorf("%s: %d attempts ended otherwise than 200 or %s: %v", tt.cohort, others, tt.outcome, codes[tt.cohort])
		}
		if tt.share == 0 {
			if n < 20 {
				t.Errorf("%s: %d attempts ended %s, want at least 20", tt.cohort, n, tt.outcome)
			}
			continue
		}
		if f := float64(n) / float64(all); f < 0.6*tt.share || f > 1.4*tt.share {
			t.Errorf("%s: %d of %d attempts ended %s (%.3f), want about %v", tt.cohort, n, all, tt.outcome, f, tt.share)
		}
	}
	// Only redirects dead-letter, as permanent, one for each 307.
	redirects := codes["redirect"]["307"] + codes["pc-redirect"]["307"]
	if s.DeadLetterReasons["permanent"] != redirects || s.Deliveries.DeadLettered != redirects ||
		deadLetters["redirect"]+deadLetters["pc-redirect"] != redirects {
		t.Errorf("dead letters %v (by cohort %v); want %d permanent, from the redirect cohorts only", s.DeadLetterReasons, deadLetters, redirects)
	}
	// Every reset of a lost-ack cohort is a lost ack.
	if n := codes["lostack"]["reset"] + codes["pc-lostack"]["reset"]; s.LostAcks != n {
		t.Errorf("%d lost acks, %d resets in the lost-ack cohorts; want one for each", s.LostAcks, n)
	}
	// Every duplicate comes from a lost ack or a dribble the timeout hid:
	// those of lost acks are not beyond the attempts whose outcome the
	// dispatcher never learned; those of timeouts are.
	timeouts := codes["dribble"]["timeout"] + codes["pc-dribble"]["timeout"]
	beyond, _, err := s.Metric("duplicates_beyond_in_flight")
	if err != nil {
		t.Fatal(err)
	}
	if *s.Duplicates < s.LostAcks || *s.Duplicates > s.LostAcks+timeouts || beyond != float64(*s.Duplicates-s.LostAcks) {
		t.Errorf("duplicates %d, lost acks %d, dribble timeouts %d, beyond in flight %v: want lost acks ≤ duplicates ≤ lost acks + timeouts, beyond = duplicates − lost acks",
			*s.Duplicates, s.LostAcks, timeouts, beyond)
	}
	if *s.Duplicates == s.LostAcks {
		t.Error("no dribble duplicate: the timeout-hidden successes are not exercised")
	}
	// The per-call draws come from the seed: the same summary again.
	if again := runDrill(t, loadDrill(t, "testdata/faults.toml", nil)); !bytes.Equal(summaryJSON(t, run), summaryJSON(t, again)) {
		t.Error("the same seed gave a different summary.json")
	}
}
