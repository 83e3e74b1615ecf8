package fakepartner

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// controlReq sends one request with the given headers and returns its status.
func controlReq(t *testing.T, method, url, body string, hdr map[string]string) int {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := client(5 * time.Second).Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	return resp.StatusCode
}

// A browser page cannot drive the control API: a cross-origin text/plain
// form post, a foreign Host (DNS rebinding), a foreign Origin, a cross-site
// fetch are all refused with a 4xx, and none of them starts an outage.
func TestControlAPIRefusesCrossSite(t *testing.T) {
	_, base, _ := startServer(t, []Spec{quickSpec("acme")}, ServerOptions{})
	c := client(5 * time.Second)
	body := `{"partner":"acme","kind":"unavailable","for":"30s"}`
	json := "application/json"
	for _, tt := range []struct {
		name, method, path, body string
		hdr                      map[string]string
		want                     int
	}{
		{"cross-origin text/plain", "POST", "/control/outage", body, map[string]string{"Content-Type": "text/plain", "Origin": "http://evil.example"}, 403},
		{"same-origin text/plain", "POST", "/control/outage", body, map[string]string{"Content-Type": "text/plain"}, 415},
		{"no content type", "POST", "/control/outage", body, nil, 415},
		{"form", "POST", "/control/outage", body, map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, 415},
		{"foreign Host", "POST", "/control/outage", body, map[string]string{"Content-Type": json, "Host": "evil.example:8080"}, 421},
		{"foreign Host, no port", "POST", "/control/outage", body, map[string]string{"Content-Type": json, "Host": "rebind.example"}, 421},
		{"foreign Origin", "POST", "/control/outage", body, map[string]string{"Content-Type": json, "Origin": "https://evil.example"}, 403},
		{"null Origin", "POST", "/control/outage", body, map[string]string{"Content-Type": json, "Origin": "null"}, 403},
		{"cross-site fetch", "POST", "/control/outage", body, map[string]string{"Content-Type": json, "Sec-Fetch-Site": "cross-site"}, 403},
		{"DELETE, foreign Host", "DELETE", "/control/outage?partner=acme", "", map[string]string{"Content-Type": json, "Host": "evil.example"}, 421},
		{"DELETE, text/plain", "DELETE", "/control/outage?partner=acme", "", map[string]string{"Content-Type": "text/plain"}, 415},
		{"GET partners, foreign Host", "GET", "/control/partners", "", map[string]string{"Host": "evil.example"}, 421},
		{"alert, cross-origin text/plain", "POST", "/alerts", `{"count":1}`, map[string]string{"Content-Type": "text/plain", "Origin": "http://evil.example"}, 403},
		{"alert, foreign Host", "POST", "/alerts", `{"count":1}`, map[string]string{"Content-Type": json, "Host": "evil.example"}, 421},
		// What is allowed: loopback names, with or without a port, and a
		// loopback Origin.
		{"loopback", "POST", "/control/outage", body, map[string]string{"Content-Type": "application/json; charset=utf-8"}, 200},
		{"localhost Host and Origin", "GET", "/control/partners", "", map[string]string{"Host": "localhost:9", "Origin": "http://localhost:9"}, 200},
		{"IPv6 loopback Host", "GET", "/control/partners", "", map[string]string{"Host": "[::1]:9"}, 200},
	} {
		if got := controlReq(t, tt.method, base+tt.path, tt.body, tt.hdr); got != tt.want {
			t.Errorf("%s: status %d, want %d", tt.name, got, tt.want)
		}
		if tt.want >= 400 && tt.path == "/control/outage" {
			// A refused request changed nothing.
			if a := post(c, base+"/p/acme", "x", "{}"); a.status != 200 {
				t.Fatalf("%s: a refused request started an outage (partner answered %d)", tt.name, a.status)
			}
		}
	}
}

// With a token, every control, alert and dead-letter request needs it: none
// gets 401, a wrong one 401, the right one 2xx. The token replaces the
// loopback-Host check (a remote caller names the server by another name),
// and is checked first, so an unauthenticated request learns nothing else.
// The partner paths stay open.
func TestControlAPIToken(t *testing.T) {
	const tok = "s3cret-0123456789abcdef"
	var dead []DeadLetter
	var mu sync.Mutex
	_, base, _ := startServer(t, []Spec{quickSpec("acme")}, ServerOptions{ControlToken: tok,
		OnDeadLetter: func(d DeadLetter) { mu.Lock(); dead = append(dead, d); mu.Unlock() }})
	json := "application/json"
	outage := `{"partner":"acme","kind":"unavailable","for":"1s","members":1}`
	for _, ep := range []struct{ method, path, body string }{
		{"GET", "/control/partners", ""},
		{"POST", "/control/outage", outage},
		{"DELETE", "/control/outage?partner=acme", ""},
		{"POST", "/alerts", `{"count":1,"reason":"max-attempts"}`},
		{"POST", "/dead-letters", `{"id":"evt-1:acme-0","reason":"max-attempts","attempts":3}`},
	} {
		for _, tt := range []struct {
			name string
			hdr  map[string]string
			ok   bool
		}{
			{"no token", map[string]string{"Content-Type": json}, false},
			{"no token, text/plain", map[string]string{"Content-Type": "text/plain"}, false},
			{"wrong token", map[string]string{"Content-Type": json, "Authorization": "Bearer " + tok[:len(tok)-1] + "x"}, false},
			{"token without Bearer", map[string]string{"Content-Type": json, "Authorization": tok}, false},
			{"Basic", map[string]string{"Content-Type": json, "Authorization": "Basic " + tok}, false},
			{"token, remote Host", map[string]string{"Content-Type": json, "Authorization": "Bearer " + tok, "Host": "partner.internal:8080"}, true},
			{"token", map[string]string{"Content-Type": json, "Authorization": "Bearer " + tok}, true},
		} {
			got := controlReq(t, ep.method, base+ep.path, ep.body, tt.hdr)
			if want := 401; !tt.ok && got != want {
				t.Errorf("%s %s, %s: status %d, want %d", ep.method, ep.path, tt.name, got, want)
			}
			if tt.ok && (got < 200 || got > 299) {
				t.Errorf("%s %s, %s: status %d, want 2xx", ep.method, ep.path, tt.name, got)
			}
			if tt.ok && ep.method == "POST" && ep.path == "/control/outage" {
				// One outage at a time: end it before the next case starts one.
				controlReq(t, "DELETE", base+"/control/outage?partner=acme", "", map[string]string{"Content-Type": json, "Authorization": "Bearer " + tok})
			}
		}
	}
	mu.Lock()
	if len(dead) != 2 {
		t.Errorf("%d dead letters recorded, want the 2 sent with the token", len(dead))
	}
	mu.Unlock()
	// The token does not lift the cross-site checks.
	if got := controlReq(t, "POST", base+"/control/outage", outage, map[string]string{"Content-Type": json, "Authorization": "Bearer " + tok, "Origin": "https://evil.example"}); got != 403 {
		t.Errorf("foreign Origin with the token: %d, want 403", got)
	}
	// The partner paths need no token.
	c := client(5 * time.Second)
	for _, path := range []string{"/p/acme", "/p/acme/0"} {
		if a := post(c, base+path, "evt-2:acme-0", "{}"); a.err != nil || a.status != 200 {
			t.Errorf("partner path %s without the token: %d %v, want 200", path, a.status, a.err)
		}
	}
}

// ControlHosts admits, without a token, the name a loopback listener is
// reached by (a port forward, a proxy); other names stay refused.
func TestControlHosts(t *testing.T) {
	_, base, _ := startServer(t, []Spec{quickSpec("acme")}, ServerOptions{ControlHosts: []string{"drill.internal"}})
	for _, tt := range []struct {
		host string
		want int
	}{{"drill.internal:8080", 200}, {"other.internal", 421}} {
		if got := controlReq(t, "GET", base+"/control/partners", "", map[string]string{"Host": tt.host}); got != tt.want {
			t.Errorf("Host %s: status %d, want %d", tt.host, got, tt.want)
		}
	}
}

// Guard guards a handler (the /metrics listener) the same way.
func TestGuard(t *testing.T) {
	const tok = "metrics-token-0123456789"
	h := Guard(tok, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(204) }))
	for _, tt := range []struct {
		auth string
		want int
	}{{"", 401}, {"Bearer nope", 401}, {"Bearer " + tok, 204}} {
		r := httptest.NewRequest("GET", "/metrics", nil)
		if tt.auth != "" {
			r.Header.Set("Authorization", tt.auth)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != tt.want {
			t.Errorf("Authorization %q: %d, want %d", tt.auth, w.Code, tt.want)
		}
		if tt.want == 401 && !strings.Contains(w.Body.String(), `"error"`) {
			t.Errorf("401 body %q is not a JSON error", w.Body.String())
		}
	}
	// Without a token: open to a local client, closed to a web page (a
	// foreign Host, as DNS rebinding sends, or a foreign Origin).
	open := Guard("", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(204) }))
	for _, tt := range []struct {
		name, host, origin string
		want               int
	}{
		{"local", "127.0.0.1:9464", "", 204},
		{"localhost", "localhost:9464", "", 204},
		{"foreign Host", "evil.example:9464", "", 421},
		{"foreign Origin", "127.0.0.1:9464", "http://evil.example", 403},
	} {
		r := httptest.NewRequest("GET", "/metrics", nil)
		r.Host = tt.host
		if tt.origin != "" {
			r.Header.Set("Origin", tt.origin)
		}
		w := httptest.NewRecorder()
		open.ServeHTTP(w, r)
		if w.Code != tt.want {
			t.Errorf("without a token, %s: %d, want %d", tt.name, w.Code, tt.want)
		}
	}
}

// DELETE /control/outage ends the scripted outage in force too; a later
// scripted outage still happens.
func TestEndOutageEndsScripted(t *testing.T) {
	sec := time.Second
	spec := quickSpec("acme",
		Outage{Start: 0, For: time.Hour, Kind: OutageUnavailable},
		Outage{Start: 2 * time.Hour, For: time.Hour, Kind: OutageUnavailable})
	_, base, clock := startServer(t, []Spec{spec}, ServerOptions{})
	c := client(5 * time.Second)
	clock.Set(t0.Add(10 * sec))
	if a := post(c, base+"/p/acme", "a", "{}"); a.status != 503 {
		t.Fatalf("in the scripted outage: %d, want 503", a.status)
	}
	status, v := doJSON(t, http.MethodDelete, base+"/control/outage?partner=acme", "")
	if status != 200 || v["ended_scripted"] != 1.0 || v["ended"] != 1.0 {
		t.Fatalf("end outage: %d %v, want one scripted outage ended", status, v)
	}
	if a := post(c, base+"/p/acme", "b", "{}"); a.status != 200 {
		t.Errorf("after ending the scripted outage: %d, want 200", a.status)
	}
	_, v = doJSON(t, http.MethodGet, base+"/control/partners", "")
	if active := v["partners"].([]any)[0].(map[string]any)["active"].([]any); len(active) != 0 {
		t.Errorf("active outages after DELETE: %v, want none", active)
	}
	clock.Set(t0.Add(2*time.Hour + sec))
	if a := post(c, base+"/p/acme", "c", "{}"); a.status != 503 {
		t.Errorf("in the later scripted outage: %d, want 503", a.status)
	}
}

// Alerts keep their text fields clipped, so MaxAlerts alerts of the largest
// body stay small.
func TestAlertFieldsClipped(t *testing.T) {
	s, base, _ := startServer(t, []Spec{quickSpec("acme")}, ServerOptions{})
	long := strings.Repeat("r", 30<<10)
	if status, _ := doJSON(t, http.MethodPost, base+"/alerts", fmt.Sprintf(`{"count":1,"reason":%q,"partner":%q}`, long, long)); status != 202 {
		t.Fatalf("alert: %d", status)
	}
	a := s.Alerts()
	if len(a) != 1 || len(a[0].Reason) > MaxAlertFieldBytes || len(a[0].Partner) > MaxAlertFieldBytes {
		t.Fatalf("kept alert fields of %d and %d bytes, want at most %d", len(a[0].Reason), len(a[0].Partner), MaxAlertFieldBytes)
	}
}

// The accepted-id set holds hashes, not ids: 200,000 distinct 512-byte ids
// take far less than the ~100 MB the ids themselves would.
func TestIDSetMemory(t *testing.T) {
	const n = 200_000
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	set := newIDSet(n)
	pad := strings.Repeat("k", MaxIDBytes-12)
	for i := 0; i < n; i++ {
		set.add(newIDKey(0, fmt.Sprintf("%s%012d", pad, i)))
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	perID := float64(after.HeapAlloc-min(after.HeapAlloc, before.HeapAlloc)) / n
	if perID > 150 {
		t.Errorf("%.0f bytes per remembered id, want at most 150 (DefaultMaxAcceptedIDs × this is the ceiling)", perID)
	}
	if !set.has(newIDKey(0, fmt.Sprintf("%s%012d", pad, n-1))) || set.has(newIDKey(1, fmt.Sprintf("%s%012d", pad, n-1))) {
		t.Error("membership is wrong")
	}
	runtime.KeepAlive(set)
}

// The control API holds an outage to the drill format's rules: a flap
// period under fakepartner.MinFlapPeriod (the drill's minimum) and an
// outage in force while another is, manual or scripted, are refused; after
// DELETE the next one starts.
func TestControlAPIAppliesTheDrillRules(t *testing.T) {
	spec := quickSpec("acme")
	spec.Outages = []Outage{{Kind: OutageUnavailable, Start: time.Hour, For: time.Minute}}
	_, base, _ := startServer(t, []Spec{spec}, ServerOptions{})
	js := map[string]string{"Content-Type": "application/json"}
	for _, c := range []struct {
		name, body string
		want       int
	}{
		{"flap period of 2ns", `{"partner":"acme","kind":"flap","for":"10s","period":"2ns"}`, 400},
		{"dribble over more than 1000h", `{"partner":"acme","kind":"dribble","for":"10s","dribble_over":"1001h"}`, 400},
		{"first outage", `{"partner":"acme","kind":"unavailable","for":"10s"}`, 200},
		{"overlapping outage", `{"partner":"acme","kind":"timeout","for":"10s"}`, 409},
		{"overlapping the scripted outage", `{"partner":"acme","kind":"timeout","for":"2h"}`, 409},
	} {
		if c.name == "overlapping the scripted outage" {
			controlReq(t, "DELETE", base+"/control/outage?partner=acme", "", js)
		}
		if got := controlReq(t, "POST", base+"/control/outage", c.body, js); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
}

// A system under drill reports dead letters and alerts as JSON whether or
// not it says so: /dead-letters and /alerts take the body as JSON with any
// Content-Type (none, text/plain, curl's form type), and ignore a dead
// letter's fields of its own; what they cannot take is answered 400 and
// counted, so that a run can show the reports it lost. A cross-site page
// is still refused by its Origin.
func TestReportsTakeJSONWithoutContentType(t *testing.T) {
	var mu sync.Mutex
	var dead []DeadLetter
	s, base, _ := startServer(t, []Spec{quickSpec("acme")}, ServerOptions{
		OnDeadLetter: func(d DeadLetter) { mu.Lock(); dead = append(dead, d); mu.Unlock() }})
	for i, hdr := range []map[string]string{nil, {"Content-Type": "text/plain"}, {"Content-Type": "application/x-www-form-urlencoded"}, {"Content-Type": "application/json"}} {
		body := fmt.Sprintf(`{"id":"evt-%d:acme-0","reason":"max-attempts","attempts":3,"queue":"webhooks"}`, i)
		if got := controlReq(t, "POST", base+"/dead-letters", body, hdr); got != http.StatusAccepted {
			t.Errorf("dead letter with %v: status %d, want 202", hdr, got)
		}
		if got := controlReq(t, "POST", base+"/alerts", `{"count":2,"reason":"max-attempts"}`, hdr); got != http.StatusAccepted {
			t.Errorf("alert with %v: status %d, want 202", hdr, got)
		}
	}
	mu.Lock()
	if len(dead) != 4 || dead[3].ID != "evt-3:acme-0" || dead[3].Attempts != 3 {
		t.Errorf("dead letters %+v, want the 4 sent", dead)
	}
	mu.Unlock()
	if rr := s.ReportsRefused(); rr.Count != 0 {
		t.Fatalf("refused %+v before any bad report", rr)
	}
	if got := controlReq(t, "POST", base+"/dead-letters", `{"reason":"max-attempts"}`, nil); got != http.StatusBadRequest {
		t.Errorf("dead letter without an id: status %d, want 400", got)
	}
	if got := controlReq(t, "POST", base+"/alerts", `{"reason":"max-attempts"}`, nil); got != http.StatusBadRequest {
		t.Errorf("alert without a count: status %d, want 400", got)
	}
	if got := controlReq(t, "POST", base+"/dead-letters", `{"id":"evt-9:acme-0"}`, map[string]string{"Content-Type": "text/plain", "Origin": "http://evil.example"}); got != http.StatusForbidden {
		t.Errorf("cross-site dead letter: status %d, want 403", got)
	}
	rr := s.ReportsRefused()
	if rr.Count != 3 || !strings.Contains(rr.First, "POST /dead-letters answered 400: id must be") {
		t.Errorf("refused %+v, want 3, the first a dead letter without an id", rr)
	}
}
