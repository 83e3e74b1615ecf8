package fakepartner

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stormdrill/stormdrill/internal/testsuite"
)

// fakeClock is a settable wall clock for drill time; sleeps stay real.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// startServer serves specs on 127.0.0.1:0 and returns the base URL.
func startServer(t *testing.T, specs []Spec, opts ServerOptions) (*Server, string, *fakeClock) {
	t.Helper()
	clock := &fakeClock{t: t0}
	if opts.Now == nil {
		opts.Now = clock.Now
		opts.Start = t0
	}
	s, err := NewServer(specs, opts)
	if err != nil {
		t.Fatalf("NewServer: %v", err)
	}
	l, err := ListenLoopback("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(l) }()
	t.Cleanup(func() {
		s.Close()
		if err := <-done; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve returned %v", err)
		}
	})
	return s, "http://" + l.Addr().String(), clock
}

// client makes fresh connections, so a reset or a hold cannot leak into the
// next request and the transport never replays a request.
func client(timeout time.Duration) *http.Client {
	return &http.Client{Timeout: timeout, Transport: &http.Transport{DisableKeepAlives: true}}
}

type answer struct {
	status     int
	retryAfter string
	err        error
}

func post(c *http.Client, url, id string, body string) answer {
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return answer{err: err}
	}
	if id != "" {
		req.Header.Set(HeaderIdempotencyKey, id)
	}
	req.Header.Set(HeaderAttempt, "1")
	resp, err := c.Do(req)
	if err != nil {
		return answer{err: err}
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	return answer{status: resp.StatusCode, retryAfter: resp.Header.Get("Retry-After")}
}

func quickSpec(name string, outages ...Outage) Spec {
	return Spec{Name: name, Count: 2, Latency: Dist{Value: time.Millisecond}, Outages: outages}
}

func statsOf(s *Server, name string) PartnerStats {
	for _, st := range s.Stats() {
		if st.Partner == name {
			return st
		}
	}
	return PartnerStats{}
}

// An unavailable window answers 503 inside it and 200 on both sides; Speed
// divides the script.
func TestServerUnavailableWindow(t *testing.T) {
	sec := time.Second
	tests := []struct {
		name   string
		speed  float64
		wall   time.Duration // wall time after Start
		member int
		status int
	}{
		{"before the window", 1, 9 * sec, 0, 200},
		{"inside the window", 1, 15 * sec, 0, 503},
		{"member 1 is not hit", 1, 15 * sec, 1, 200},
		{"window end is outside", 1, 30 * sec, 0, 200},
		// speed 10: the 10s..30s window is 1s..3s of wall time
		{"speed 10 inside", 10, 2 * sec, 0, 503},
		{"speed 10 after", 10, 3 * sec, 0, 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := quickSpec("acme", Outage{Start: 10 * sec, For: 20 * sec, Kind: OutageUnavailable, Members: 1})
			s, base, clock := startServer(t, []Spec{spec}, ServerOptions{Speed: tt.speed})
			clock.Set(t0.Add(tt.wall))
			a := post(client(5*sec), fmt.Sprintf("%s/p/acme/%d", base, tt.member), "d1", "{}")
			if a.err != nil || a.status != tt.status {
				t.Fatalf("got %d, %v; want %d", a.status, a.err, tt.status)
			}
			if st := statsOf(s, "acme"); st.Requests != 1 || st.ByStatus[tt.status] != 1 {
				t.Errorf("stats %+v", st)
			}
		})
	}
}

func TestServerThrottle(t *testing.T) {
	for _, tt := range []struct {
		name, retryAfter string
		check            func(string) error
	}{
		{"delta-seconds", "5", func(v string) error {
			if v != "5" {
				return fmt.Errorf("want 5")
			}
			return nil
		}},
		{"http-date 30s after the response", "date:30s", func(v string) error {
			at, err := http.ParseTime(v)
			if err != nil || !at.Equal(t0.Add(45*time.Second)) { // clock at Start+15s
				return fmt.Errorf("parses to %v, %v; want %v", at, err, t0.Add(45*time.Second))
			}
			return nil
		}},
		{"garbage", "garbage", func(v string) error {
			if _, err := http.ParseTime(v); err == nil || v == "" {
				return fmt.Errorf("want an unparseable, non-empty value")
			}
			return nil
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			spec := quickSpec("acme", Outage{Start: 10 * time.Second, For: 20 * time.Second, Kind: OutageThrottle, RetryAfter: tt.retryAfter})
			_, base, clock := startServer(t, []Spec{spec}, ServerOptions{})
			clock.Set(t0.Add(15 * time.Second))
			a := post(client(5*time.Second), base+"/p/acme", "d1", "{}")
			if a.err != nil || a.status != 429 {
				t.Fatalf("got %d, %v; want 429", a.status, a.err)
			}
			if err := tt.check(a.retryAfter); err != nil {
				t.Errorf("Retry-After %q: %v", a.retryAfter, err)
			}
		})
	}
}

func TestServerReset(t *testing.T) {
	spec := quickSpec("acme", Outage{For: time.Hour, Kind: OutageReset})
	s, base, _ := startServer(t, []Spec{spec}, ServerOptions{})
	a := post(client(5*time.Second), base+"/p/acme", "d1", "{}")
	if a.err == nil {
		t.Fatalf("got status %d, want a connection error", a.status)
	}
	if !errors.Is(a.err, syscall.ECONNRESET) {
		t.Errorf("error %v, want connection reset by peer", a.err)
	}
	// The handler counts the reset after closing the connection: the
	// client may see the reset first.
	waitFor(t, func() bool { return statsOf(s, "acme").Resets == 1 })
	if st := statsOf(s, "acme"); st.Resets != 1 || st.Accepted != 0 {
		t.Errorf("stats %+v, want 1 reset, nothing accepted", st)
	}
}

func TestServerTimeoutHolds(t *testing.T) {
	spec := quickSpec("acme", Outage{For: time.Hour, Kind: OutageTimeout})
	s, base, _ := startServer(t, []Spec{spec}, ServerOptions{TimeoutHoldMax: 2 * time.Second})

	// The client gives up first: it sees its own timeout.
	began := time.Now()
	a := post(client(200*time.Millisecond), base+"/p/acme", "d1", "{}")
	var ne net.Error
	if a.err == nil || !errors.As(a.err, &ne) || !ne.Timeout() {
		t.Fatalf("got %d, %v; want a client timeout", a.status, a.err)
	}
	if took := time.Since(began); took < 200*time.Millisecond {
		t.Errorf("answered after %v, before the client's timeout", took)
	}
	// The server notices the client left and releases the request.
	waitFor(t, func() bool { return statsOf(s, "acme").Held == 1 })

	// A patient client is cut off at TimeoutHoldMax without an answer.
	began = time.Now()
	a = post(client(10*time.Second), base+"/p/acme", "d2", "{}")
	if a.err == nil {
		t.Fatalf("got status %d, want no answer", a.status)
	}
	if took := time.Since(began); took < 2*time.Second || took > 5*time.Second {
		t.Errorf("held %v, want about TimeoutHoldMax (2s)", took)
	}
	waitFor(t, func() bool { return statsOf(s, "acme").Held == 2 })
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	testsuite.WaitFor(t, "the partner's stats", time.Minute, cond)
}

func TestServerDuplicates(t *testing.T) {
	s, base, _ := startServer(t, []Spec{quickSpec("acme"), quickSpec("beta")}, ServerOptions{})
	c := client(5 * time.Second)
	for _, step := range []struct{ path, id string }{
		{"/p/acme", "evt-1:acme-0"},   // accepted
		{"/p/acme", "evt-1:acme-0"},   // duplicate
		{"/p/acme/1", "evt-2:acme-1"}, // accepted
		{"/p/acme/0", "evt-1:acme-0"}, // duplicate again
		{"/p/acme", ""},               // no key: not deduplicated
		{"/p/beta", "evt-1:acme-0"},   // same id at another cohort: its own set
	} {
		if a := post(c, base+step.path, step.id, "{}"); a.err != nil || a.status != 200 {
			t.Fatalf("%s %s: %d, %v", step.path, step.id, a.status, a.err)
		}
	}
	st := statsOf(s, "acme")
	if st.Accepted != 2 || st.Duplicates != 2 || st.NoKey != 1 || st.Requests != 5 || st.ByAttempt[0] != 5 {
		t.Errorf("acme stats %+v, want 2 accepted, 2 duplicates, 1 without key, 5 first attempts", st)
	}
	if st := statsOf(s, "beta"); st.Accepted != 1 || st.Duplicates != 0 {
		t.Errorf("beta stats %+v, want 1 accepted", st)
	}
	if !s.Accepted("acme", "evt-2:acme-1") || s.Accepted("beta", "evt-2:acme-1") {
		t.Error("Accepted lookups wrong")
	}
}

// OnAttempt reports each request once, with its member, id, ordinal,
// status, answer time and whether it was a duplicate.
func TestServerOnAttempt(t *testing.T) {
	var mu sync.Mutex
	var got []Attempt
	opts := ServerOptions{OnAttempt: func(a Attempt) {
		mu.Lock()
		got = append(got, a)
		mu.Unlock()
	}}
	_, base, _ := startServer(t, []Spec{quickSpec("acme", Outage{Kind: OutageUnavailable, For: time.Hour, Members: 1})}, opts)
	c := client(5 * time.Second)
	post(c, base+"/p/acme/0", "evt-1:acme-0", "{}") // member 0: down, 503
	post(c, base+"/p/acme/1", "evt-1:acme-1", "{}")
	post(c, base+"/p/acme/1", "evt-1:acme-1", "{}") // duplicate
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 3 {
		t.Fatalf("%d attempts reported, want 3: %+v", len(got), got)
	}
	if a := got[0]; a.Cohort != "acme" || a.Member != 0 || a.ID != "evt-1:acme-0" || a.Status != 503 || a.Duplicate || a.Answered.Before(a.Arrived) {
		t.Errorf("first attempt %+v", a)
	}
	if a := got[1]; a.Member != 1 || a.Status != 200 || a.Duplicate {
		t.Errorf("second attempt %+v", a)
	}
	if a := got[2]; a.Status != 200 || !a.Duplicate {
		t.Errorf("third attempt %+v, want a duplicate", a)
	}
}

// Errors drawn from the spec's rates.
func TestServerErrorRates(t *testing.T) {
	perm := quickSpec("perm")
	perm.PermanentErrors = 1
	trans := quickSpec("trans")
	trans.TransientErrors = 1
	s, base, _ := startServer(t, []Spec{perm, trans}, ServerOptions{})
	c := client(5 * time.Second)
	if a := post(c, base+"/p/perm", "x", "{}"); a.status != 422 {
		t.Errorf("perm: %d, %v; want 422", a.status, a.err)
	}
	if a := post(c, base+"/p/trans", "x", "{}"); a.status != 503 {
		t.Errorf("trans: %d, %v; want 503", a.status, a.err)
	}
	if st := statsOf(s, "perm"); st.Accepted != 0 {
		t.Errorf("a 422 was accepted: %+v", st)
	}
}

func TestServerBodyLimitAndRouting(t *testing.T) {
	s, base, _ := startServer(t, []Spec{quickSpec("acme")}, ServerOptions{MaxBodyBytes: 100})
	c := client(5 * time.Second)
	tests := []struct {
		name, path, id, body string
		status               int
	}{
		{"body at the limit", "/p/acme", "a", strings.Repeat("x", 100), 200},
		{"body over the limit", "/p/acme", "b", strings.Repeat("x", 101), 413},
		{"unknown partner", "/p/nobody", "c", "{}", 404},
		{"member out of range", "/p/acme/2", "d", "{}", 404},
		{"member not a number", "/p/acme/x", "e", "{}", 404},
		{"key too long", "/p/acme", strings.Repeat("k", MaxIDBytes+1), "{}", 400},
	}
	for _, tt := range tests {
		if a := post(c, base+tt.path, tt.id, tt.body); a.err != nil || a.status != tt.status {
			t.Errorf("%s: %d, %v; want %d", tt.name, a.status, a.err, tt.status)
		}
	}
	if st := statsOf(s, "acme"); st.ByStatus[413] != 1 || st.Accepted != 1 {
		t.Errorf("stats %+v, want one 413 and one accepted", st)
	}
}

func TestServerRejectWhenBusy(t *testing.T) {
	spec := quickSpec("acme")
	spec.Latency = Dist{Value: 300 * time.Millisecond}
	spec.Concurrency, spec.RejectWhenBusy = 1, true
	s, base, clock := startServer(t, []Spec{spec}, ServerOptions{})
	c := client(5 * time.Second)
	first := make(chan answer)
	go func() { first <- post(c, base+"/p/acme", "a", "{}") }()
	// The drill clock stands still, so the first call holds member 0's one
	// server for good once it has begun.
	testsuite.WaitFor(t, "the first call in service", time.Minute, func() bool {
		co := s.cohorts[0]
		co.subsMu.Lock()
		sub := co.subs[0]
		co.subsMu.Unlock()
		if sub == nil {
			return false
		}
		sub.mu.Lock()
		defer sub.mu.Unlock()
		return sub.b.earliestFree() > s.DrillTime(clock.Now())
	})
	if a := post(c, base+"/p/acme", "b", "{}"); a.status != 503 {
		t.Errorf("second while busy: %d, %v; want 503", a.status, a.err)
	}
	if a := post(c, base+"/p/acme/1", "c", "{}"); a.status != 200 {
		t.Errorf("another member has its own capacity: %d, %v; want 200", a.status, a.err)
	}
	if a := <-first; a.status != 200 {
		t.Errorf("first: %d, %v; want 200", a.status, a.err)
	}
}

func TestServerQueuesWhenBusy(t *testing.T) {
	spec := quickSpec("acme")
	spec.Latency = Dist{Value: 200 * time.Millisecond}
	spec.Concurrency = 1
	_, base, _ := startServer(t, []Spec{spec}, ServerOptions{})
	c := client(5 * time.Second)
	began := time.Now()
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Go(func() {
			if a := post(c, base+"/p/acme", fmt.Sprint(i), "{}"); a.status != 200 {
				t.Errorf("call %d: %d, %v", i, a.status, a.err)
			}
		})
	}
	wg.Wait()
	if took := time.Since(began); took < 400*time.Millisecond {
		t.Errorf("two calls on one server took %v, want at least 400ms (queued)", took)
	}
}

// Two calls read the same version; the second write conflicts.
func TestServerContended(t *testing.T) {
	spec := quickSpec("acme")
	spec.Latency = Dist{}
	spec.Contended = true
	spec.NetworkDelay = Dist{Value: 150 * time.Millisecond}
	s, base, clock := startServer(t, []Spec{spec}, ServerOptions{})
	c := client(5 * time.Second)
	results := make(chan int, 2)
	for i := range 2 {
		go func() { results <- post(c, base+"/p/acme", fmt.Sprint(i), "{}").status }()
	}
	got := map[int]int{<-results: 1}
	got[<-results]++
	if got[200] != 1 || got[409] != 1 {
		t.Errorf("statuses %v, want one 200 and one 409", got)
	}
	// Alone, a later call succeeds: it reads the row after both writes
	// landed (the drill clock is a fake one; move it on).
	clock.Set(t0.Add(time.Second))
	if a := post(c, base+"/p/acme", "2", "{}"); a.status != 200 {
		t.Errorf("later call: %d", a.status)
	}
	if st := statsOf(s, "acme"); st.ByStatus[409] != 1 || st.Accepted != 2 {
		t.Errorf("stats %+v", st)
	}
}

func doJSON(t *testing.T, method, url, body string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := client(5 * time.Second).Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	var v map[string]any
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&v); err != nil {
		t.Fatalf("%s %s: decoding: %v", method, url, err)
	}
	return resp.StatusCode, v
}

func TestServerControlAPI(t *testing.T) {
	_, base, clock := startServer(t, []Spec{quickSpec("acme")}, ServerOptions{})
	c := client(5 * time.Second)
	bad := []struct{ name, body string }{
		{"unknown partner", `{"partner":"nobody","kind":"unavailable","for":"30s"}`},
		{"unknown kind", `{"partner":"acme","kind":"down","for":"30s"}`},
		{"missing for", `{"partner":"acme","kind":"unavailable"}`},
		{"for without unit", `{"partner":"acme","kind":"unavailable","for":"30"}`},
		{"flap without period", `{"partner":"acme","kind":"flap","for":"30s"}`},
		{"too many members", `{"partner":"acme","kind":"unavailable","for":"30s","members":3}`},
		{"unknown field", `{"partner":"acme","kind":"unavailable","for":"30s","forever":true}`},
		{"not JSON", `partner=acme`},
	}
	for _, tt := range bad {
		if status, v := doJSON(t, http.MethodPost, base+"/control/outage", tt.body); status != 400 || v["error"] == "" {
			t.Errorf("%s: %d %v, want 400 with an error message", tt.name, status, v)
		}
	}

	if status, v := doJSON(t, http.MethodPost, base+"/control/outage", `{"partner":"acme","kind":"unavailable","for":"30s"}`); status != 200 {
		t.Fatalf("start outage: %d %v", status, v)
	}
	if a := post(c, base+"/p/acme", "a", "{}"); a.status != 503 {
		t.Errorf("during the manual outage: %d, want 503", a.status)
	}
	status, v := doJSON(t, http.MethodGet, base+"/control/partners", "")
	partners, _ := v["partners"].([]any)
	if status != 200 || len(partners) != 1 {
		t.Fatalf("partners: %d %v", status, v)
	}
	p0 := partners[0].(map[string]any)
	active, _ := p0["active"].([]any)
	if len(active) != 1 || active[0].(map[string]any)["kind"] != "unavailable" {
		t.Errorf("active outages %v, want the manual unavailable one", active)
	}
	if n := p0["stats"].(map[string]any)["by_status"].(map[string]any)["503"]; n != 1.0 {
		t.Errorf("503 count in control API %v, want 1", n)
	}

	if status, v := doJSON(t, http.MethodDelete, base+"/control/outage?partner=acme", ""); status != 200 || v["ended"] != 1.0 {
		t.Errorf("end outage: %d %v", status, v)
	}
	if a := post(c, base+"/p/acme", "b", "{}"); a.status != 200 {
		t.Errorf("after ending the outage: %d, want 200", a.status)
	}
	if status, _ := doJSON(t, http.MethodDelete, base+"/control/outage?partner=nobody", ""); status != 400 {
		t.Errorf("end outage of unknown partner: %d, want 400", status)
	}

	// A manual outage ends by itself after its length (drill time; at speed 1, wall time).
	doJSON(t, http.MethodPost, base+"/control/outage", `{"partner":"acme","kind":"throttle","for":"10s","retry_after":"7"}`)
	if a := post(c, base+"/p/acme", "c", "{}"); a.status != 429 || a.retryAfter != "7" {
		t.Errorf("manual throttle: %d %q", a.status, a.retryAfter)
	}
	clock.Set(t0.Add(10 * time.Second))
	if a := post(c, base+"/p/acme", "d", "{}"); a.status != 200 {
		t.Errorf("after the manual outage's length: %d, want 200", a.status)
	}
}

func TestServerAlerts(t *testing.T) {
	s, base, clock := startServer(t, []Spec{quickSpec("acme")}, ServerOptions{})
	clock.Set(t0.Add(time.Minute))
	if status, _ := doJSON(t, http.MethodPost, base+"/alerts", `{"count":3,"reason":"max-attempts","partner":"acme","oldest_s":12.5}`); status != 202 {
		t.Fatalf("alert: %d", status)
	}
	for _, body := range []string{
		`{"reason":"x"}`,            // no count
		`{"count":-1}`,              // negative count
		`{"count":1,"oldest_s":-2}`, // negative age
		`[1,2]`,                     // not an object
		`{"count":1,"extra":true}`,  // unknown field
		`{"count":1,"reason":"` + strings.Repeat("x", MaxAlertBodyBytes) + `"}`, // too large
	} {
		if status, _ := doJSON(t, http.MethodPost, base+"/alerts", body); status != 400 {
			t.Errorf("alert %.40s: %d, want 400", body, status)
		}
	}
	got := s.Alerts()
	want := ReceivedAlert{At: t0.Add(time.Minute), Count: 3, Reason: "max-attempts", Partner: "acme", OldestS: 12.5}
	if len(got) != 1 || got[0] != want {
		t.Errorf("alerts %+v, want [%+v]", got, want)
	}
}

func TestNewServerRefusesBadSpecs(t *testing.T) {
	tests := []struct {
		name  string
		specs []Spec
		opts  ServerOptions
		want  string
	}{
		{"invalid spec", []Spec{{Name: "a"}}, ServerOptions{}, "count must be"},
		{"duplicate names", []Spec{quickSpec("a"), quickSpec("a")}, ServerOptions{}, "name used twice"},
		{"negative speed", []Spec{quickSpec("a")}, ServerOptions{Speed: -1}, "speed must be"},
	}
	for _, tt := range tests {
		if _, err := NewServer(tt.specs, tt.opts); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want %q", tt.name, err, tt.want)
		}
	}
}

func TestListenLoopback(t *testing.T) {
	tests := []struct {
		addr string
		ok   bool
	}{
		{"127.0.0.1:0", true},
		{"localhost:0", true},
		{"[::1]:0", true}, // may fail on hosts without IPv6; then skipped below
		{":0", false},     // all interfaces
		{"0.0.0.0:0", false},
		{"10.1.2.3:0", false},
		{"example.com:80", false},
		{"127.0.0.1", false}, // no port
	}
	for _, tt := range tests {
		l, err := ListenLoopback(tt.addr)
		if tt.ok && err != nil && strings.Contains(tt.addr, "::1") {
			continue
		}
		if (err == nil) != tt.ok {
			t.Errorf("ListenLoopback(%q): %v, want ok=%v", tt.addr, err, tt.ok)
		}
		if l != nil {
			l.Close()
		}
	}
}

// A non-loopback listen is opt-in: without a token it is refused by
// CheckListen, before anything is bound; with a valid token it is allowed.
// Nothing here binds a socket.
func TestCheckListen(t *testing.T) {
	const tok = "0123456789abcdef0123"
	tests := []struct {
		addr, token string
		want        string // "" ok; else a piece of the error
		bind        string // the address to bind when ok
	}{
		{"127.0.0.1:8080", "", "", "127.0.0.1:8080"},
		{"localhost:0", "", "", "127.0.0.1:0"},
		{"[::1]:9", "", "", "[::1]:9"},
		{"127.0.0.1:8080", tok, "", "127.0.0.1:8080"},
		{"0.0.0.0:8080", "", "not a loopback address", ""},
		{":8080", "", "not a loopback address", ""},
		{"[::]:8080", "", "not a loopback address", ""},
		{"192.0.2.10:8080", "", "not a loopback address", ""},
		{"partner.example:8080", "", "not a loopback address", ""},
		{"0.0.0.0:8080", tok, "", "0.0.0.0:8080"},
		{"192.0.2.10:8080", tok, "", "192.0.2.10:8080"},
		{"partner.example:8080", tok, "", "partner.example:8080"},
		{"0.0.0.0:8080", "short", "16 to 256 characters", ""},
		{"127.0.0.1:8080", "short", "16 to 256 characters", ""},
		{"0.0.0.0:8080", "has a space in it, 16+", "printable ASCII", ""},
		{"0.0.0.0", tok, "missing port", ""},
	}
	for _, tt := range tests {
		got, err := CheckListen(tt.addr, tt.token)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("CheckListen(%q, %q): %v, want ok", tt.addr, tt.token, err)
		case tt.want == "" && got != tt.bind:
			t.Errorf("CheckListen(%q, %q) = %q, want %q", tt.addr, tt.token, got, tt.bind)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("CheckListen(%q, %q): %v, want an error with %q", tt.addr, tt.token, err, tt.want)
		}
	}
	// The refusal names the way out.
	_, err := CheckListen("0.0.0.0:8080", "")
	if err == nil || !strings.Contains(err.Error(), TokenEnv) || !strings.Contains(err.Error(), "--token") {
		t.Errorf("refusal %v should name --token and $%s", err, TokenEnv)
	}
}

// fakeAddrListener claims a non-loopback address without binding one.
type fakeAddrListener struct{ net.Listener }

func (fakeAddrListener) Addr() net.Addr {
	return &net.TCPAddr{IP: net.ParseIP("192.0.2.10"), Port: 8080}
}

// Serve itself refuses a non-loopback listener when no token is set, so no
// caller can skip the check; with a token it serves.
func TestServeRefusesRemoteWithoutToken(t *testing.T) {
	inner, err := ListenLoopback("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewServer([]Spec{quickSpec("acme")}, ServerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Serve(fakeAddrListener{inner}); err == nil || !strings.Contains(err.Error(), "no control token") {
		t.Fatalf("Serve on a non-loopback listener without a token: %v, want a refusal", err)
	}
	if _, err := inner.Accept(); err == nil {
		t.Error("the refused listener was left open")
	}
	inner, err = ListenLoopback("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s, err = NewServer([]Spec{quickSpec("acme")}, ServerOptions{ControlToken: "0123456789abcdef0123"})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(fakeAddrListener{inner}) }()
	a := post(client(5*time.Second), "http://"+inner.Addr().String()+"/p/acme", "evt-1:acme-0", "{}")
	s.Close()
	if err := <-done; !errors.Is(err, http.ErrServerClosed) {
		t.Errorf("Serve with a token returned %v", err)
	}
	if a.status != 200 {
		t.Errorf("partner call through the tokened server: %d %v, want 200", a.status, a.err)
	}
}

// With MaxConns 1 a second connection is not accepted until the first closes.
func TestLimitListener(t *testing.T) {
	inner, err := ListenLoopback("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := newLimitListener(inner, 1)
	defer l.Close()
	accepted := make(chan net.Conn, 2)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	for range 2 {
		c, err := net.Dial("tcp", inner.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
	}
	first := <-accepted
	select {
	case <-accepted:
		t.Fatal("second connection accepted while the first is open")
	case <-time.After(100 * time.Millisecond):
	}
	first.Close()
	select {
	case c := <-accepted:
		c.Close()
	case <-time.After(2 * time.Second):
		t.Fatal("second connection not accepted after the first closed")
	}
}

func TestIDSetEvicts(t *testing.T) {
	s := newIDSet(2)
	steps := []struct {
		key     idKey
		seen    bool
		evicted int
	}{
		{newIDKey(0, "a"), false, -1},
		{newIDKey(1, "a"), false, -1}, // another cohort: another key
		{newIDKey(0, "a"), true, -1},
		{newIDKey(0, "b"), false, 0}, // full: forgets cohort 0's "a"
		{newIDKey(0, "a"), false, 1}, // "a" was forgotten; now cohort 1's "a" goes
	}
	for i, st := range steps {
		if seen, ev := s.add(st.key); seen != st.seen || ev != st.evicted {
			t.Errorf("step %d %v: seen %v evicted %d; want %v %d", i, st.key, seen, ev, st.seen, st.evicted)
		}
	}
	if len(s.members) != 2 {
		t.Errorf("%d members, want 2", len(s.members))
	}
}

// Flap follows the drill clock's phase; slow multiplies the real latency.
func TestServerFlapAndSlow(t *testing.T) {
	sec := time.Second
	flap := quickSpec("flap", Outage{For: time.Hour, Kind: OutageFlap, Period: 10 * sec})
	slow := quickSpec("slow", Outage{For: time.Hour, Kind: OutageSlow, Factor: 4})
	slow.Latency = Dist{Value: 50 * time.Millisecond}
	_, base, clock := startServer(t, []Spec{flap, slow}, ServerOptions{})
	c := client(5 * sec)
	for _, st := range []struct {
		at     time.Duration
		status int
	}{
		{2 * sec, 503},  // down half of the first period
		{7 * sec, 200},  // up half
		{12 * sec, 503}, // down again
	} {
		clock.Set(t0.Add(st.at))
		if a := post(c, base+"/p/flap", "x", "{}"); a.status != st.status {
			t.Errorf("flap at %v: %d, %v; want %d", st.at, a.status, a.err, st.status)
		}
	}
	began := time.Now()
	if a := post(c, base+"/p/slow", "x", "{}"); a.status != 200 {
		t.Errorf("slow: %d, %v", a.status, a.err)
	}
	if took := time.Since(began); took < 200*time.Millisecond {
		t.Errorf("slow call took %v, want at least 4 × 50ms", took)
	}
}

// TestServerSpeedOneTimeUnit: at speed 60 everything the control API reads
// and writes is drill time, and a Retry-After of D drill seconds goes out
// as D/60 wall seconds, rounded up, because the caller sleeps on the wall
// clock.
func TestServerSpeedOneTimeUnit(t *testing.T) {
	const speed = 60
	scripted := Outage{Start: 10 * time.Minute, For: 20 * time.Minute, Kind: OutageThrottle, RetryAfter: "120"}
	s, base, clock := startServer(t, []Spec{quickSpec("acme", scripted), quickSpec("beta")}, ServerOptions{Speed: speed})
	c := client(5 * time.Second)

	// Drill time 15m (15 wall seconds after start): inside the throttle.
	clock.Set(t0.Add(15 * time.Second))
	if a := post(c, base+"/p/acme", "a", "{}"); a.status != 429 || a.retryAfter != "2" {
		t.Errorf("throttled at speed %d: %d, Retry-After %q; want 429 and 2 (120 drill seconds / %d)", speed, a.status, a.retryAfter, speed)
	}
	if got := s.DrillTime(clock.Now()); got != 15*time.Minute {
		t.Fatalf("drill time %v, want 15m", got)
	}

	// A manual outage of 60 drill seconds, asking for 5 drill seconds of
	// Retry-After, lasts one wall second, and its Retry-After rounds up
	// to one wall second.
	if status, v := doJSON(t, http.MethodPost, base+"/control/outage", `{"partner":"beta","kind":"throttle","for":"60s","retry_after":"5"}`); status != 200 {
		t.Fatalf("start outage: %d %v", status, v)
	} else if at, err := time.Parse(time.RFC3339Nano, fmt.Sprint(v["ends_at"])); err != nil || !at.Equal(clock.Now().Add(time.Second)) {
		t.Errorf("ends_at %v (%v): want the wall instant one second from now", v["ends_at"], err)
	}
	if a := post(c, base+"/p/beta", "b", "{}"); a.status != 429 || a.retryAfter != "1" {
		t.Errorf("manual throttle: %d, Retry-After %q; want 429 and 1", a.status, a.retryAfter)
	}
	clock.Set(clock.Now().Add(500 * time.Millisecond)) // 30 drill seconds in
	_, v := doJSON(t, http.MethodGet, base+"/control/partners", "")
	if dt, _ := v["drill_time_s"].(float64); math.Abs(dt-15*60-30) > 1e-6 {
		t.Errorf("drill_time_s %v, want %v", v["drill_time_s"], 15*60+30)
	}
	ends := map[string]float64{}
	for _, p := range v["partners"].([]any) {
		pm := p.(map[string]any)
		for _, a := range pm["active"].([]any) {
			ends[pm["name"].(string)] = a.(map[string]any)["ends_in_s"].(float64)
		}
	}
	// acme's throttle ends at drill 30m: 14m30s of drill time from now;
	// beta's manual one 30 drill seconds from now.
	if math.Abs(ends["acme"]-870) > 1e-6 || math.Abs(ends["beta"]-30) > 1e-6 {
		t.Errorf("ends_in_s %v: want acme 870 and beta 30 (drill seconds, as drill_time_s)", ends)
	}
	clock.Set(clock.Now().Add(500 * time.Millisecond)) // 60 drill seconds in: over
	if a := post(c, base+"/p/beta", "c", "{}"); a.status != 200 {
		t.Errorf("after 60 drill seconds (one wall second): %d, want 200", a.status)
	}
}

// FuzzCheckListen: any address and token are answered without a panic, and
// an address accepted without a token is one to bind on loopback.
func FuzzCheckListen(f *testing.F) {
	for _, s := range []string{"127.0.0.1:0", "localhost:8080", "[::1]:9", "0.0.0.0:8080", ":80", "[::]:1", "host.example:8080", "127.0.0.1", "[::1", "%zz:1"} {
		f.Add(s, "")
		f.Add(s, "0123456789abcdef")
	}
	f.Fuzz(func(t *testing.T, addr, token string) {
		bind, err := CheckListen(addr, token)
		if err != nil {
			return
		}
		if token != "" && CheckToken(token) != nil {
			t.Fatalf("CheckListen(%q, %q) accepted an invalid token", addr, token)
		}
		if token == "" {
			host, _, err := net.SplitHostPort(bind)
			if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
				t.Fatalf("CheckListen(%q, \"\") = %q: not a loopback address", addr, bind)
			}
		}
	})
}

// Regression: a scripted lost answer was a connection closed before any
// byte, which Go's http.Transport resends by itself on a reused connection
// for a request with an Idempotency-Key, once for every reused connection
// it can try: verify then saw the resends (same key) and never the
// system's own retry. A cut answer reaches the caller as an error, once.
func TestScriptedLostAnswerIsNotResentByTheTransport(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]int{}
	opts := ServerOptions{
		// Counted here, on arrival, before the answer is cut: by the time
		// the call fails, every request it made has been counted.
		Script: func(_ string, _ int, key string) Scripted {
			mu.Lock()
			seen[key]++
			mu.Unlock()
			return Scripted{DropAnswer: strings.HasPrefix(key, "lost")}
		},
	}
	_, base, _ := startServer(t, []Spec{quickSpec("acme")}, opts)
	// Keep-alive, as a system under drill: warm answers leave connections
	// idle for the transport to reuse.
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 8}}
	defer c.CloseIdleConnections()
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() { defer wg.Done(); post(c, base+"/p/acme", "warm-"+strconv.Itoa(i), "{}") }()
	}
	wg.Wait()
	for i := range 3 {
		key := "lost-" + strconv.Itoa(i)
		if a := post(c, base+"/p/acme", key, "{}"); a.err == nil {
			t.Fatalf("%s: status %d, want an error (the answer was cut)", key, a.status)
		}
		mu.Lock()
		n := seen[key]
		mu.Unlock()
		if n != 1 {
			t.Errorf("%s reached the partner %d times in one call, want once", key, n)
		}
	}
}
