package drills

import (
	"bytes"
	"testing"
)

// The partner fault kinds in a simulated drill (testdata/faults.toml):
// each cohort's attempts end as the kind says, lost acks come back as
// duplicates that duplicates_beyond_in_flight leaves out, a redirect
// dead-letters as permanent, and nothing is lost.
func TestFaultKindsDrill(t *testing.T) {
	d := loadDrill(t, "testdata/faults.toml", nil)
	run := runDrill(t, d)
	s := run.Summary
	codes := map[string]map[string]int64{}
	for _, c := range s.Cohorts {
		codes[c.Name] = c.StatusCodes
		t.Logf("%-9s %v", c.Name, c.StatusCodes)
	}
	t.Logf("duplicates %d, lost acks %d, dead letters %v", s.Duplicates, s.LostAcks, s.DeadLetterReasons)
	if s.Deliveries.Lost != 0 {
		t.Errorf("lost %d", s.Deliveries.Lost)
	}
	if n := codes["lostack"]["reset"]; n < 20 || s.LostAcks != n {
		t.Errorf("lostack: %d resets, %d lost acks; want at least 20, every reset a lost ack", n, s.LostAcks)
	}
	if n := codes["redirect"]["307"]; n < 20 || s.DeadLetterReasons["permanent"] != n {
		t.Errorf("redirect: %d answers 307, %d permanent dead letters; want at least 20, one for each", n, s.DeadLetterReasons["permanent"])
	}
	if n := codes["refused"]["refused"]; n < 20 {
		t.Errorf("refused: %d refused attempts, want at least 20", n)
	}
	// Every dribbled attempt in the window outlasts the timeout; the
	// partner has the delivery, so its later success is a duplicate.
	timeouts := codes["dribble"]["timeout"]
	if timeouts < 20 {
		t.Errorf("dribble: %d timeouts, want at least 20", timeouts)
	}
	// broken: a tenth of the calls each, all seen as resets.
	calls := int64(0)
	for _, n := range codes["broken"] {
		calls += n
	}
	if r := codes["broken"]["reset"]; float64(r) < 0.2*float64(calls) || float64(r) > 0.4*float64(calls) {
		t.Errorf("broken: %d resets of %d attempts, want about 30%%", r, calls)
	}
	// Every duplicate comes from a lost ack or a dribble the timeout hid:
	// those of lost acks are not beyond the attempts whose outcome the
	// dispatcher never learned; those of timeouts are.
	beyond, _, err := s.Metric("duplicates_beyond_in_flight")
	if err != nil {
		t.Fatal(err)
	}
	if s.Duplicates < s.LostAcks || s.Duplicates > s.LostAcks+timeouts || beyond != float64(s.Duplicates-s.LostAcks) {
		t.Errorf("duplicates %d, lost acks %d, dribble timeouts %d, beyond in flight %v: want lost acks ≤ duplicates ≤ lost acks + timeouts, beyond = duplicates − lost acks",
			s.Duplicates, s.LostAcks, timeouts, beyond)
	}
	if s.Duplicates == s.LostAcks {
		t.Error("no dribble duplicate: the timeout-hidden successes are not exercised")
	}
	// The per-call draws come from the seed: the same summary again.
	if again := runDrill(t, loadDrill(t, "testdata/faults.toml", nil)); !bytes.Equal(summaryJSON(t, run), summaryJSON(t, again)) {
		t.Error("the same seed gave a different summary.json")
	}
}
