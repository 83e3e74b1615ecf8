package dispatcher

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stormdrill/stormdrill/model"
	"github.com/stormdrill/stormdrill/model/runtime/queue"
)

func ingestConfig(st queue.Store) Config {
	c := Defaults()
	c.Store, c.Owner = st, "test"
	c.PartnersURL = "http://127.0.0.1:9"
	c.Partners = []Partner{{Name: "acme", Members: 2, URL: "/p/acme/{member}", Policy: model.DefaultPolicySettings()}, {Name: "solo", URL: "http://127.0.0.1:9/solo", Policy: model.DefaultPolicySettings()}}
	return c
}

func post(t *testing.T, h http.Handler, body string) *httptest.ResponseRecorder {
	t.Helper()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, localRequest(http.MethodPost, "/events", strings.NewReader(body)))
	return w
}

// localRequest is a request as a local client sends it: to a loopback
// Host, with a JSON body.
func localRequest(method, path string, body io.Reader) *http.Request {
	r := httptest.NewRequest(method, path, body)
	r.Host = "127.0.0.1:8081"
	if body != nil {
		r.Header.Set("Content-Type", "application/json")
	}
	return r
}

// The ingest refuses what a web page on this machine could send, as the
// partner's control API does: a foreign Origin (403), a body that is not
// JSON (415, a form post needs no preflight) and a foreign Host (421, DNS
// rebinding); nothing of a refused event is stored.
func TestIngestRefusesWebPages(t *testing.T) {
	st := queue.NewMemory()
	in, err := NewIngest(ingestConfig(st), 10)
	if err != nil {
		t.Fatal(err)
	}
	const body = `{"event_id":"e1","deliveries":[{"id":"e1:solo","url":"http://127.0.0.1:9/solo"}]}`
	for _, c := range []struct {
		name   string
		change func(r *http.Request)
		want   int
	}{
		{"foreign Origin", func(r *http.Request) { r.Header.Set("Origin", "http://evil.example") }, http.StatusForbidden},
		{"cross-site fetch", func(r *http.Request) { r.Header.Set("Sec-Fetch-Site", "cross-site") }, http.StatusForbidden},
		{"text/plain body", func(r *http.Request) { r.Header.Set("Content-Type", "text/plain") }, http.StatusUnsupportedMediaType},
		{"no content type", func(r *http.Request) { r.Header.Del("Content-Type") }, http.StatusUnsupportedMediaType},
		{"foreign Host", func(r *http.Request) { r.Host = "evil.example" }, http.StatusMisdirectedRequest},
	} {
		r := localRequest(http.MethodPost, "/events", strings.NewReader(body))
		c.change(r)
		w := httptest.NewRecorder()
		in.ServeHTTP(w, r)
		if w.Code != c.want {
			t.Errorf("%s: %d, want %d", c.name, w.Code, c.want)
		}
	}
	if _, err := st.Get(context.Background(), "e1:solo"); err == nil {
		t.Fatal("a refused event was stored")
	}
	if w := post(t, in, body); w.Code != http.StatusAccepted {
		t.Fatalf("a local JSON post: %d %s", w.Code, w.Body)
	}
}

// TestIngest: an event's deliveries are stored under the endpoint their
// URL names, with the event's creation time; a second POST of the same
// event adds nothing; bad bodies get 422; a full queue 503 with a
// Retry-After, and nothing stored.
func TestIngest(t *testing.T) {
	st := queue.NewMemory()
	in, err := NewIngest(ingestConfig(st), 4)
	if err != nil {
		t.Fatal(err)
	}
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	ev := `{"event_id":"e1","created":"2026-01-02T03:04:05Z","deliveries":[` +
		`{"id":"e1:acme-1","url":"http://127.0.0.1:9/p/acme/1"},{"id":"e1:solo","url":"http://127.0.0.1:9/solo"}],"payload":{"a":1}}`
	if w := post(t, in, ev); w.Code != http.StatusAccepted {
		t.Fatalf("POST: %d %s", w.Code, w.Body)
	}
	if w := post(t, in, ev); w.Code != http.StatusAccepted || !strings.Contains(w.Body.String(), "0 deliveries enqueued, 2 already known") {
		t.Fatalf("POST again: %d %s", w.Code, w.Body)
	}
	d, err := st.Get(context.Background(), "e1:acme-1")
	if err != nil {
		t.Fatal(err)
	}
	if d.Partner != "acme-1" || d.Cohort != "acme" || d.Event != "e1" || !d.Created.Equal(created) || string(d.Payload) != `{"a":1}` {
		t.Errorf("stored %+v", d)
	}
	if d, err := st.Get(context.Background(), "e1:solo"); err != nil || d.Partner != "solo" {
		t.Errorf("solo: %+v %v", d, err)
	}
	for _, bad := range []string{
		`not json`,
		`{"deliveries":[{"id":"x","url":"http://127.0.0.1:9/solo"}]}`,
		`{"event_id":"e2","deliveries":[]}`,
		`{"event_id":"e2","deliveries":[{"id":"","url":"http://127.0.0.1:9/solo"}]}`,
		`{"event_id":"e2","deliveries":[{"id":"x","url":"http://127.0.0.1:9/p/acme/2"}]}`,
	} {
		if w := post(t, in, bad); w.Code != http.StatusUnprocessableEntity {
			t.Errorf("%s: %d, want 422", bad, w.Code)
		}
	}
	// Two waiting, capacity 4: an event of three more does not fit.
	full := `{"event_id":"e3","deliveries":[{"id":"e3:acme-0","url":"http://127.0.0.1:9/p/acme/0"},{"id":"e3:acme-1","url":"http://127.0.0.1:9/p/acme/1"},{"id":"e3:solo","url":"http://127.0.0.1:9/solo"}]}`
	w := post(t, in, full)
	if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") == "" {
		t.Fatalf("full queue: %d, Retry-After %q", w.Code, w.Header().Get("Retry-After"))
	}
	if _, err := st.Get(context.Background(), "e3:acme-0"); err == nil {
		t.Error("a refused event was stored")
	}
	rw := httptest.NewRecorder()
	in.ServeHTTP(rw, localRequest(http.MethodGet, "/healthz", nil))
	if rw.Code != http.StatusOK {
		t.Errorf("healthz: %d", rw.Code)
	}
	rw = httptest.NewRecorder()
	in.ServeHTTP(rw, localRequest(http.MethodGet, "/events", nil))
	if rw.Code != http.StatusMethodNotAllowed {
		t.Errorf("GET /events: %d", rw.Code)
	}
	rw = httptest.NewRecorder()
	big := localRequest(http.MethodPost, "/events", strings.NewReader(strings.Repeat(" ", MaxIngestBody+10)+"{}"))
	in.ServeHTTP(rw, big)
	if rw.Code != http.StatusRequestEntityTooLarge && rw.Code != http.StatusUnprocessableEntity {
		t.Errorf("oversized body: %d", rw.Code)
	}
}

// FuzzIngestDecode: any body is refused with an error or decoded into an
// event whose every delivery has an id and a configured endpoint.
func FuzzIngestDecode(f *testing.F) {
	f.Add(`{"event_id":"e","deliveries":[{"id":"e:solo","url":"http://127.0.0.1:9/solo"}]}`)
	f.Add(`{"event_id":"e","created":"bad","deliveries":null}`)
	f.Add(`[]`)
	in, err := NewIngest(ingestConfig(queue.NewMemory()), 10)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body string) {
		ev, ts, err := in.Decode(strings.NewReader(body))
		if err != nil {
			return
		}
		if ev.EventID == "" || len(ts) != len(ev.Deliveries) || len(ts) == 0 {
			t.Fatalf("decoded %+v %+v", ev, ts)
		}
		for i, d := range ev.Deliveries {
			if d.ID == "" || ts[i].Endpoint == "" {
				t.Fatalf("delivery %d %+v -> %+v", i, d, ts[i])
			}
		}
	})
}
