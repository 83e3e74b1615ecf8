package fakepartner

import (
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stormdrill/stormdrill/model/seed"
)

// What each fault kind does to a call in simulation: the answer the caller
// sees, how the server is to write it, whether the partner recorded the
// delivery, and how long the call takes.
func TestFaultKindsSim(t *testing.T) {
	lat := 40 * ms
	tests := []struct {
		o         Outage
		kind      ResultKind
		status    int
		wire      Wire
		processed bool
		latency   time.Duration
	}{
		{Outage{Kind: OutageEmpty}, ResultReset, 0, WireEmpty, false, FastAnswerLatency},
		{Outage{Kind: OutageGarbage}, ResultReset, 0, WireGarbage, false, FastAnswerLatency},
		{Outage{Kind: OutageTruncated}, ResultReset, 0, WireTruncated, false, FastAnswerLatency},
		{Outage{Kind: OutageDribble, DribbleOver: 3 * time.Second}, ResultOK, 200, WireDribble, true, lat + 3*time.Second},
		{Outage{Kind: OutageRefused}, ResultRefused, 0, WireNormal, false, FastAnswerLatency},
		{Outage{Kind: OutageLostAck}, ResultReset, 0, WireDropAnswer, true, lat},
		{Outage{Kind: OutageRedirect}, ResultHTTP, http.StatusTemporaryRedirect, WireNormal, false, FastAnswerLatency},
		{Outage{Kind: OutageEmpty, AnswerAfter: &Dist{Value: 2 * time.Second}}, ResultReset, 0, WireEmpty, false, 2 * time.Second},
	}
	for _, tt := range tests {
		o := tt.o
		o.Start, o.For = 10*time.Second, 10*time.Second
		spec := Spec{Name: "acme", Count: 1, Latency: Dist{Value: lat}, Outages: []Outage{o}}
		if err := spec.Validate(); err != nil {
			t.Fatalf("%s: %v", o.Kind, err)
		}
		sim := NewSim(&spec, 0, SubscriberRand(1, "acme", 0))
		before := sim.BeginKey(5*time.Second, 1)
		if r := sim.Finish(&before, 5*time.Second+before.Latency); r.Kind != ResultOK || before.Wire != WireNormal {
			t.Errorf("%s: before the outage %+v, wire %d", o.Kind, r, before.Wire)
		}
		c := sim.BeginKey(12*time.Second, 2)
		r := sim.Finish(&c, 12*time.Second+c.Latency)
		if r.Kind != tt.kind || r.Status != tt.status || c.Wire != tt.wire || c.Processed != tt.processed || c.Latency != tt.latency {
			t.Errorf("%s: result %+v wire %d processed %v latency %v; want %v %d wire %d processed %v latency %v",
				o.Kind, r, c.Wire, c.Processed, c.Latency, tt.kind, tt.status, tt.wire, tt.processed, tt.latency)
		}
		if c.AckLost != (o.Kind == OutageLostAck) {
			t.Errorf("%s: AckLost %v", o.Kind, c.AckLost)
		}
	}
}

// A lost ack drops only a success: a call the partner fails anyway is
// answered as usual, and nothing is recorded for it.
func TestLostAckKeepsFailures(t *testing.T) {
	spec := Spec{Name: "acme", Count: 1, Latency: Dist{Value: ms}, PermanentErrors: 1,
		Outages: []Outage{{For: time.Hour, Kind: OutageLostAck}}}
	sim := NewSim(&spec, 0, SubscriberRand(1, "acme", 0))
	c := sim.BeginKey(time.Second, 7)
	if r := sim.Finish(&c, time.Second+c.Latency); r.Status != http.StatusUnprocessableEntity || c.AckLost || c.Processed {
		t.Errorf("bad data under lost-ack: %+v, ack lost %v, processed %v; want a 422 answered", r, c.AckLost, c.Processed)
	}
}

// Per-call faults strike about their probability of the calls outside
// outages, none inside one, and draw nothing for a cohort without them.
func TestCallFaults(t *testing.T) {
	spec := Spec{Name: "acme", Count: 1, Latency: Dist{Value: ms},
		CallFaults: []CallFault{{Kind: OutageLostAck, P: 0.1}, {Kind: OutageEmpty, P: 0.2}},
		Outages:    []Outage{{Start: time.Hour, For: time.Hour, Kind: OutageUnavailable}}}
	if err := spec.Validate(); err != nil {
		t.Fatal(err)
	}
	const n = 20000
	count := func(from time.Duration) (lost, empty, ok, other int) {
		sim := NewSim(&spec, 0, SubscriberRand(3, "acme", 0))
		for i := range n {
			at := from + time.Duration(i)*time.Millisecond/10
			c := sim.BeginKey(at, uint64(i))
			r := sim.Finish(&c, at+c.Latency)
			switch {
			case c.AckLost:
				lost++
			case c.Wire == WireEmpty:
				empty++
			case r.Kind == ResultOK:
				ok++
			default:
				other++
			}
		}
		return
	}
	lost, empty, ok, other := count(0)
	near := func(got int, p float64) bool { return math.Abs(float64(got)/n-p) < 0.015 }
	if !near(lost, 0.1) || !near(empty, 0.2) || !near(ok, 0.7) || other != 0 {
		t.Errorf("of %d calls: %d lost acks, %d empty, %d ok, %d other; want about 10%%, 20%%, 70%%, none", n, lost, empty, ok, other)
	}
	if lost, empty, ok, other := count(time.Hour); lost+empty+ok != 0 || other != n {
		t.Errorf("inside the outage: %d lost acks, %d empty, %d ok; want every call 503", lost, empty, ok)
	}
	// Without per-call faults the stream is the one it always was.
	plain := Spec{Name: "acme", Count: 1, Latency: Dist{Kind: DistUniform, Min: ms, Max: 9 * ms}}
	withNone := plain
	withNone.CallFaults = []CallFault{{Kind: OutageEmpty, P: 0}}
	a, b := NewSim(&plain, 0, SubscriberRand(3, "acme", 0)), NewSim(&withNone, 0, SubscriberRand(3, "acme", 0))
	for i := range 50 {
		at := time.Duration(i) * time.Second
		ca, cb := a.BeginKey(at, 1), b.BeginKey(at, 1)
		if ca.Latency != cb.Latency {
			return // the extra draw shifted b's stream, as a cohort with faults does
		}
	}
	t.Error("a cohort with a per-call fault table drew the same latencies as one without: no draw was made")
}

// A served subscriber draws from the simulator's stream for it, so live
// and simulated partners agree call for call.
func TestSubscriberRandIsTheSimulatorsStream(t *testing.T) {
	a, b := SubscriberRand(42, "acme", 3), seed.NewRand(42, "partner/acme-3")
	for i := range 100 {
		if x, y := a.Uint64(), b.Uint64(); x != y {
			t.Fatalf("draw %d: %d, simulator %d", i, x, y)
		}
	}
	if SubscriberRand(42, "acme", 3).Uint64() == SubscriberRand(42, "acme", 4).Uint64() {
		t.Error("two members drew the same first number")
	}
}

// In simulation a per-call fault at probability 1 answers every call as
// the outage of its kind does: the same result, wire form, record and lost
// ack; every per-call kind is checked.
func TestCallFaultsMatchOutages(t *testing.T) {
	for _, name := range PerCallKindNames() {
		kind, err := ParseOutageKind(name)
		if err != nil {
			t.Fatal(err)
		}
		perCall := Spec{Name: "acme", Count: 1, Latency: Dist{Value: ms}, CallFaults: []CallFault{{Kind: kind, P: 1}}}
		outage := Spec{Name: "acme", Count: 1, Latency: Dist{Value: ms}, Outages: []Outage{{For: time.Hour, Kind: kind}}}
		if kind == OutageDribble {
			perCall.DribbleOver, outage.Outages[0].DribbleOver = time.Second, time.Second
		}
		for _, s := range []*Spec{&perCall, &outage} {
			if err := s.Validate(); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		}
		a, b := NewSim(&perCall, 0, SubscriberRand(1, "acme", 0)), NewSim(&outage, 0, SubscriberRand(1, "acme", 0))
		for i := range 20 {
			at := time.Minute + time.Duration(i)*time.Second
			ca, cb := a.BeginKey(at, uint64(i)), b.BeginKey(at, uint64(i))
			ra, rb := a.Finish(&ca, at+ca.Latency), b.Finish(&cb, at+cb.Latency)
			if ra.Kind != rb.Kind || ra.Status != rb.Status || ca.Wire != cb.Wire || ca.Processed != cb.Processed ||
				ca.AckLost != cb.AckLost || ca.NoAnswer != cb.NoAnswer {
				t.Fatalf("%s call %d: per call %+v (wire %d, processed %v, ack lost %v), outage %+v (wire %d, processed %v, ack lost %v)",
					name, i, ra, ca.Wire, ca.Processed, ca.AckLost, rb, cb.Wire, cb.Processed, cb.AckLost)
			}
			if ra.Kind == ResultOK && kind != OutageDribble {
				t.Fatalf("%s call %d: succeeded", name, i)
			}
		}
	}
}

func TestCallFaultsValidate(t *testing.T) {
	for _, tt := range []struct {
		spec Spec
		want string
	}{
		{Spec{CallFaults: []CallFault{{Kind: OutageSlow, P: 0.1}}}, "slow cannot strike single calls"},
		{Spec{CallFaults: []CallFault{{Kind: OutageRefused, P: 0.1}}}, "refused cannot strike single calls"},
		{Spec{CallFaults: []CallFault{{Kind: OutageEmpty, P: 1.5}}}, "faults.empty must be a probability"},
		{Spec{CallFaults: []CallFault{{Kind: OutageEmpty, P: 0.6}, {Kind: OutageGarbage, P: 0.6}}}, "add up to 1.2"},
		{Spec{CallFaults: []CallFault{{Kind: OutageDribble, P: 0.1}}}, "dribble_over"},
		{Spec{DribbleOver: time.Second}, "dribble_over"},
	} {
		s := tt.spec
		s.Name, s.Count, s.Latency = "acme", 1, Dist{Value: ms}
		if err := s.Validate(); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: %v; want an error with %q", tt.spec.CallFaults, err, tt.want)
		}
	}
	o := Outage{For: time.Second, Kind: OutageRefused, Members: 1}
	if err := o.Validate(2); err == nil || !strings.Contains(err.Error(), "whole cohort") {
		t.Errorf("refused for one member of two: %v", err)
	}
	o = Outage{For: time.Second, Kind: OutageDribble}
	if err := o.Validate(1); err == nil || !strings.Contains(err.Error(), "dribble_over") {
		t.Errorf("dribble without dribble_over: %v", err)
	}
	o = Outage{For: time.Second, Kind: OutageEmpty, DribbleOver: time.Second}
	if err := o.Validate(1); err == nil || !strings.Contains(err.Error(), "applies only to kind dribble") {
		t.Errorf("dribble_over on an empty outage: %v", err)
	}
}

// rawPost sends one request with a real client and reads the whole
// answer, returning the status (0 when none) and the error the client met,
// in the request or in the body.
func rawPost(c *http.Client, url, id string) (status int, header http.Header, err error) {
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader("{}"))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set(HeaderIdempotencyKey, id)
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	return resp.StatusCode, resp.Header, err
}

// Over HTTP, with Go's own client on loopback, each fault kind gives the
// error the simulation's answer stands for.
func TestServerFaultKinds(t *testing.T) {
	noFollow := func(timeout time.Duration) *http.Client {
		c := client(timeout)
		c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
		return c
	}
	// What a call gets from each kind, as a scripted outage (below, for the
	// kinds without a longer case of their own) and as a per-call fault at
	// probability 1 (after): a per-call kind without a case here fails, so
	// a new one gets one.
	perCall := map[string]func(t *testing.T, s *Server, base string){
		"timeout": func(t *testing.T, _ *Server, base string) {
			_, _, err := rawPost(noFollow(300*time.Millisecond), base+"/p/acme", "d1")
			var ne net.Error
			if !errors.As(err, &ne) || !ne.Timeout() {
				t.Errorf("error %v, want the client's timeout", err)
			}
		},
		"reset": func(t *testing.T, _ *Server, base string) {
			if _, _, err := rawPost(noFollow(5*time.Second), base+"/p/acme", "d1"); !errors.Is(err, syscall.ECONNRESET) {
				t.Errorf("error %v, want connection reset by peer", err)
			}
		},
		"empty": func(t *testing.T, s *Server, base string) {
			if _, _, err := rawPost(noFollow(5*time.Second), base+"/p/acme", "d1"); !errors.Is(err, io.EOF) {
				t.Errorf("error %v, want EOF (closed with no answer)", err)
			}
			waitFor(t, func() bool { return statsOf(s, "acme").Resets == 1 })
		},
		"garbage": func(t *testing.T, _ *Server, base string) {
			if _, _, err := rawPost(noFollow(5*time.Second), base+"/p/acme", "d1"); err == nil || !strings.Contains(err.Error(), "malformed HTTP") {
				t.Errorf("error %v, want a malformed HTTP response", err)
			}
		},
		"truncated": func(t *testing.T, s *Server, base string) {
			status, _, err := rawPost(noFollow(5*time.Second), base+"/p/acme", "d1")
			if status != http.StatusOK || !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Errorf("status %d, body error %v; want 200 and unexpected EOF in the body", status, err)
			}
			waitFor(t, func() bool { return statsOf(s, "acme").Resets == 1 })
			if st := statsOf(s, "acme"); st.Accepted != 0 {
				t.Errorf("a truncated answer recorded the delivery: %+v", st)
			}
		},
		"dribble": func(t *testing.T, s *Server, base string) {
			began := time.Now()
			status, _, err := rawPost(noFollow(5*time.Second), base+"/p/acme", "d1")
			if took := time.Since(began); status != http.StatusOK || err != nil || took < 400*time.Millisecond {
				t.Errorf("status %d, %v after %v; want 200 after at least the 400ms dribble_over", status, err, took)
			}
		},
		"lost-ack": func(t *testing.T, s *Server, base string) {
			if _, _, err := rawPost(noFollow(5*time.Second), base+"/p/acme", "d1"); !errors.Is(err, syscall.ECONNRESET) {
				t.Errorf("error %v, want connection reset by peer", err)
			}
			waitFor(t, func() bool { return statsOf(s, "acme").Accepted == 1 })
		},
		"redirect": func(t *testing.T, _ *Server, base string) {
			status, h, err := rawPost(noFollow(5*time.Second), base+"/p/acme", "d1")
			if status != http.StatusTemporaryRedirect || err != nil || h.Get("Location") == "" {
				t.Errorf("status %d, %v, Location %q; want 307 with a Location, not followed", status, err, h.Get("Location"))
			}
		},
	}
	hour := time.Hour
	for _, name := range []string{"empty", "garbage", "truncated", "redirect"} {
		t.Run(name, func(t *testing.T) {
			kind, err := ParseOutageKind(name)
			if err != nil {
				t.Fatal(err)
			}
			s, base, _ := startServer(t, []Spec{quickSpec("acme", Outage{For: hour, Kind: kind})}, ServerOptions{})
			perCall[name](t, s, base)
		})
	}
	t.Run("dribble", func(t *testing.T) {
		spec := quickSpec("acme", Outage{For: hour, Kind: OutageDribble, DribbleOver: 600 * time.Millisecond})
		s, base, _ := startServer(t, []Spec{spec}, ServerOptions{})
		began := time.Now()
		status, _, err := rawPost(noFollow(5*time.Second), base+"/p/acme", "d1")
		if took := time.Since(began); status != http.StatusOK || err != nil || took < 600*time.Millisecond {
			t.Errorf("patient client: status %d, %v after %v; want 200 after at least 600ms", status, err, took)
		}
		// A client whose timeout falls inside the body times out there,
		// after the 200 arrived; the partner has the delivery.
		status, _, err = rawPost(noFollow(300*time.Millisecond), base+"/p/acme", "d2")
		var ne net.Error
		if status != http.StatusOK || !errors.As(err, &ne) || !ne.Timeout() {
			t.Errorf("impatient client: status %d, %v; want 200 and then a timeout in the body", status, err)
		}
		waitFor(t, func() bool { st := statsOf(s, "acme"); return st.Abandoned == 1 && st.Accepted == 2 })
	})
	t.Run("lost-ack", func(t *testing.T) {
		var mu sync.Mutex
		var acks []Attempt
		s, base, clock := startServer(t, []Spec{quickSpec("acme", Outage{For: hour, Kind: OutageLostAck})}, ServerOptions{
			OnAttempt: func(a Attempt) { mu.Lock(); acks = append(acks, a); mu.Unlock() }})
		_, _, err := rawPost(noFollow(5*time.Second), base+"/p/acme", "d1")
		if !errors.Is(err, syscall.ECONNRESET) {
			t.Errorf("error %v, want connection reset by peer", err)
		}
		waitFor(t, func() bool { return statsOf(s, "acme").Accepted == 1 })
		clock.Set(t0.Add(2 * hour))
		if status, _, err := rawPost(noFollow(5*time.Second), base+"/p/acme", "d1"); status != http.StatusOK || err != nil {
			t.Fatalf("retry after the outage: %d, %v", status, err)
		}
		waitFor(t, func() bool { return statsOf(s, "acme").Duplicates == 1 })
		mu.Lock()
		defer mu.Unlock()
		if len(acks) != 2 || !acks[0].AckLost || !acks[0].Reset || acks[1].AckLost || !acks[1].Duplicate {
			t.Errorf("attempt records %+v: want the first an ack lost, the second a duplicate", acks)
		}
	})
	for _, name := range PerCallKindNames() {
		t.Run("per-call "+name, func(t *testing.T) {
			check, ok := perCall[name]
			if !ok {
				t.Fatalf("no per-call case for %s", name)
			}
			kind, err := ParseOutageKind(name)
			if err != nil {
				t.Fatal(err)
			}
			spec := quickSpec("acme")
			spec.Count = 1
			spec.CallFaults = []CallFault{{Kind: kind, P: 1}}
			if kind == OutageDribble {
				spec.DribbleOver = 400 * time.Millisecond
			}
			s, base, _ := startServer(t, []Spec{spec}, ServerOptions{TimeoutHoldMax: 2 * time.Second})
			check(t, s, base)
		})
	}
}

// A cohort with a refused outage, served on a listener of its own, refuses
// connections while the outage lasts and serves before and after it; the
// other cohorts, on the main listener, are not touched.
func TestServeRefusing(t *testing.T) {
	refused := quickSpec("acme", Outage{Start: time.Hour, For: time.Hour, Kind: OutageRefused})
	s, base, clock := startServer(t, []Spec{refused, quickSpec("beta")}, ServerOptions{})
	if !s.Refuses("acme") || s.Refuses("beta") {
		t.Fatalf("Refuses: acme %v, beta %v", s.Refuses("acme"), s.Refuses("beta"))
	}
	l, err := ListenLoopback("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.ServeRefusing("acme", l) }()
	own := "http://" + l.Addr().String()
	c := &http.Client{Timeout: 5 * time.Second} // keep-alive, as the dispatcher's
	if status, _, err := rawPost(c, own+"/p/acme", "d1"); status != http.StatusOK || err != nil {
		t.Fatalf("before the outage: %d, %v", status, err)
	}
	clock.Set(t0.Add(90 * time.Minute))
	waitFor(t, func() bool {
		_, _, err := rawPost(c, own+"/p/acme", "d2")
		return errors.Is(err, syscall.ECONNREFUSED)
	})
	if status, _, err := rawPost(c, base+"/p/beta", "d3"); status != http.StatusOK || err != nil {
		t.Errorf("beta during acme's refusal: %d, %v", status, err)
	}
	clock.Set(t0.Add(3 * time.Hour))
	waitFor(t, func() bool {
		status, _, err := rawPost(c, own+"/p/acme", "d4")
		return status == http.StatusOK && err == nil
	})
	s.Close()
	select {
	case err := <-done:
		if !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("ServeRefusing returned %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Error("ServeRefusing did not return after Close")
	}
}

// The control API starts any kind by hand, dribble with its dribble_over,
// and refuses a dribble without one.
func TestControlAPIFaultKinds(t *testing.T) {
	_, base, _ := startServer(t, []Spec{quickSpec("acme")}, ServerOptions{})
	if status, v := doJSON(t, http.MethodPost, base+"/control/outage", `{"partner":"acme","kind":"dribble","for":"30s"}`); status != 400 || !strings.Contains(fmt.Sprint(v["error"]), "dribble_over") {
		t.Errorf("dribble without dribble_over: %d %v, want 400 naming dribble_over", status, v)
	}
	if status, v := doJSON(t, http.MethodPost, base+"/control/outage", `{"partner":"acme","kind":"dribble","for":"1h","dribble_over":"300ms"}`); status != 200 {
		t.Fatalf("dribble: %d %v", status, v)
	}
	began := time.Now()
	if status, _, err := rawPost(client(5*time.Second), base+"/p/acme", "d1"); status != 200 || err != nil || time.Since(began) < 300*time.Millisecond {
		t.Errorf("during a manual dribble: %d, %v after %v; want 200 after at least 300ms", status, err, time.Since(began))
	}
}
