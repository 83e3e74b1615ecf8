package fakepartner

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// Report reaches the dead-letter and alert sinks, with the token where the
// server requires one, and says when it was refused.
func TestReport(t *testing.T) {
	const tok = "s3cret-0123456789abcdef"
	var dead []DeadLetter
	var mu sync.Mutex
	srv, base, _ := startServer(t, []Spec{quickSpec("acme")}, ServerOptions{ControlToken: tok,
		OnDeadLetter: func(d DeadLetter) { mu.Lock(); dead = append(dead, d); mu.Unlock() }})
	c := &http.Client{Timeout: 5 * time.Second}
	if err := Report(c, base+"/dead-letters", tok, DeadLetter{ID: "evt-1:acme-0", Reason: "max-attempts", Attempts: 3}); err != nil {
		t.Fatal(err)
	}
	if err := Report(c, base+"/alerts", tok, map[string]any{"count": 1, "reason": "max-attempts", "partner": "acme"}); err != nil {
		t.Fatal(err)
	}
	if err := Report(c, base+"/dead-letters", "", DeadLetter{ID: "evt-2:acme-0", Reason: "permanent"}); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("a report without the token: %v, want a 401 error", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(dead) != 1 || dead[0].ID != "evt-1:acme-0" || dead[0].Reason != "max-attempts" || dead[0].Attempts != 3 {
		t.Errorf("dead letters recorded: %+v, want the one sent with the token", dead)
	}
	if a := srv.Alerts(); len(a) != 1 || a[0].Count != 1 || a[0].Partner != "acme" {
		t.Errorf("alerts recorded: %+v", a)
	}
}
