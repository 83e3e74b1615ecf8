package drills

import (
	"strings"
	"testing"
)

// TestSpeedWarnings: a live drill warns when its speed makes the wire's
// whole wall seconds stretch a throttle's Retry-After by more than half;
// a speed that divides it, a simulation and an HTTP-date stay quiet.
func TestSpeedWarnings(t *testing.T) {
	drill := func(head, retryAfter string) *Drill {
		d, err := Parse("w.toml", []byte(head+`
name = "w"
duration = "1m"
[source]
rate = "1/s"
[[partners]]
name = "busy"
count = 1
  [[partners.outages]]
  start = "0s"
  for = "30s"
  kind = "throttle"
  retry_after = "`+retryAfter+`"
`))
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	for _, tc := range []struct {
		head, retryAfter string
		want             string // "" none
	}{
		{"mode = \"live\"\nspeed = 60", "5", "goes out as 1 wall second, which the dispatcher waits as 60 drill seconds"},
		{"mode = \"live\"\nspeed = 30", "35", "goes out as 2 wall seconds, which the dispatcher waits as 60 drill seconds"},
		{"mode = \"live\"\nspeed = 5", "5", ""},        // exact
		{"mode = \"live\"\nspeed = 20", "50", ""},      // 60 for 50: within half
		{"mode = \"live\"\nspeed = 60", "date:5s", ""}, // a date is exact
		{"", "5", ""}, // the simulation has no wire
	} {
		ws := drill(tc.head, tc.retryAfter).SpeedWarnings()
		switch {
		case tc.want == "" && len(ws) != 0:
			t.Errorf("%q, retry_after %q: warned %q", tc.head, tc.retryAfter, ws)
		case tc.want != "" && (len(ws) != 1 || !strings.Contains(ws[0], tc.want) || !strings.HasPrefix(ws[0], "partners[0].outages[0].retry_after: ")):
			t.Errorf("%q, retry_after %q: warnings %q, want one saying %q", tc.head, tc.retryAfter, ws, tc.want)
		}
	}
}
