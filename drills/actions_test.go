package drills

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// actionBase is a small valid drill with an outage and dead letters to
// replay (testdata/actions-base.toml, which the simulator's tests run): 4
// attempts and no breaker, so the outage's deliveries run out.
func actionBase(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "actions-base.toml"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestActionErrors: every wrong action is refused at its line, naming the
// key and saying what is wrong.
func TestActionErrors(t *testing.T) {
	cases := []struct{ name, text, prefix, msg string }{
		{"unknown kind", "[[actions]]\nkind = \"dlq-replai\"\nat = \"1m\"\n", "bad.toml:19: actions[0].kind:", "did you mean dlq-replay"},
		{"no at", "[[actions]]\nkind = \"pause-source\"\nfor = \"1m\"\n", "bad.toml:18: actions[0].at:", "required"},
		{"at after the drill", "[[actions]]\nkind = \"dlq-replay\"\nat = \"17m\"\nreason = \"max-attempts\"\n", "bad.toml:20: actions[0].at:", "outside the drill"},
		{"unknown reason", "[[actions]]\nkind = \"dlq-replay\"\nat = \"5m\"\nreason = \"max-attempt\"\n", "bad.toml:21: actions[0].reason:", "not a dead-letter reason"},
		{"reason the drill never produces", "[[actions]]\nkind = \"dlq-replay\"\nat = \"5m\"\nreason = \"circuit-open\"\n", "bad.toml:21: actions[0].reason:", "never dead-letters"},
		{"no selection", "[[actions]]\nkind = \"dlq-replay\"\nat = \"5m\"\n", "bad.toml:18: actions[0].reason:", "give reason, cohort or both"},
		{"unknown cohort", "[[actions]]\nkind = \"dlq-replay\"\nat = \"5m\"\ncohort = \"acme\"\n", "bad.toml:21: actions[0].cohort:", "names no partner cohort"},
		{"batch too big", "[[actions]]\nkind = \"dlq-replay\"\nat = \"5m\"\ncohort = \"down\"\nbatch = 20000\n", "bad.toml:22: actions[0].batch:", "between 1 and 10000"},
		{"rate too slow", "[[actions]]\nkind = \"dlq-replay\"\nat = \"5m\"\ncohort = \"down\"\nrate = \"1/d\"\n", "bad.toml:22: actions[0].rate:", "bad rate unit"},
		{"rate below an hour", "[[actions]]\nkind = \"dlq-replay\"\nat = \"5m\"\ncohort = \"down\"\nrate = \"0.5/h\"\n", "bad.toml:22: actions[0].rate:", "one batch an hour"},
		{"key of another kind", "[[actions]]\nkind = \"pause-source\"\nat = \"1m\"\nfor = \"1m\"\nbatch = 5\n", "bad.toml:22: actions[0].batch:", "does not apply"},
		{"outage-end with no outage in force", "[[actions]]\nkind = \"outage-end\"\nat = \"4m\"\ncohort = \"down\"\n", "bad.toml:20: actions[0].at:", "no outage of cohort \"down\" is in force at 4m0s"},
		{"outage-end of a missing outage", "[[actions]]\nkind = \"outage-end\"\nat = \"2m\"\ncohort = \"down\"\noutage = 2\n", "bad.toml:22: actions[0].outage:", "has 1 outages"},
		{"pause with no for", "[[actions]]\nkind = \"pause-source\"\nat = \"1m\"\n", "bad.toml:18: actions[0].for:", "required"},
		{"pause after the source", "[[actions]]\nkind = \"pause-source\"\nat = \"7m\"\nfor = \"1m\"\n", "bad.toml:20: actions[0].at:", "not before duration"},
		{"the same outage ended twice", "[[actions]]\nkind = \"outage-end\"\nat = \"2m\"\ncohort = \"down\"\n[[actions]]\nkind = \"outage-end\"\nat = \"2m30s\"\ncohort = \"down\"\n", "bad.toml:24: actions[1].at:", "same outage as actions[0]"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("bad.toml", []byte(actionBase(t)+c.text))
			if err == nil {
				t.Fatal("no error")
			}
			es, ok := AsErrors(err)
			if !ok || len(es) == 0 {
				t.Fatalf("error %T is not Errors: %v", err, err)
			}
			first := es[0].Error()
			if !strings.HasPrefix(first, c.prefix) || !strings.Contains(first, c.msg) {
				t.Errorf("first error\n  %s\nwant prefix %q containing %q; all:\n%v", first, c.prefix, c.msg, err)
			}
		})
	}
}
