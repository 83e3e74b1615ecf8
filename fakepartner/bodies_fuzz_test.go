package fakepartner

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// FuzzDeadLetterAndAlertBodies posts arbitrary bodies to /dead-letters and
// /alerts, what a system under drill sends the harness: each is accepted
// or refused with a 4xx, never a 5xx or a panic, and what is kept holds
// the documented bounds.
func FuzzDeadLetterAndAlertBodies(f *testing.F) {
	for _, s := range []string{
		`{"id":"evt-1:acme-0","reason":"max-attempts","attempts":3}`,
		`{"id":"  ","attempts":-1}`,
		`{"count":2,"reason":"max-attempts","partner":"acme","oldest_s":1.5}`,
		`{"count":-1}`, `{"count":1,"oldest_s":-0}`, `{"count":1}{"count":2}`,
		`{"id":"x","extra":1}`, `[]`, `null`, ``, `{"id":"` + strings.Repeat("k", MaxIDBytes+1) + `"}`,
	} {
		f.Add(s)
	}
	var mu sync.Mutex
	var dead []DeadLetter
	s, err := NewServer([]Spec{quickSpec("acme")}, ServerOptions{OnDeadLetter: func(d DeadLetter) {
		mu.Lock()
		dead = append(dead, d)
		mu.Unlock()
	}})
	if err != nil {
		f.Fatal(err)
	}
	h := s.Handler()
	f.Fuzz(func(t *testing.T, body string) {
		for _, path := range []string{"/dead-letters", "/alerts"} {
			r := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
			r.Host = "127.0.0.1:8080"
			r.Header.Set("Content-Type", "application/json")
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code >= 500 || (w.Code >= 300 && w.Code < 400) {
				t.Fatalf("POST %s %q: %d", path, body, w.Code)
			}
		}
		mu.Lock()
		for _, d := range dead {
			if d.ID == "" || len(d.ID) > MaxIDBytes || d.Attempts < 0 || len(d.Reason) > 200 {
				t.Fatalf("kept dead letter %+v", d)
			}
		}
		dead = dead[:0]
		mu.Unlock()
		for _, a := range s.Alerts() {
			if a.Count < 0 || !(a.OldestS >= 0) || len(a.Reason) > MaxAlertFieldBytes || len(a.Partner) > MaxAlertFieldBytes {
				t.Fatalf("kept alert %+v", a)
			}
		}
	})
}
