package fakepartner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stormdrill/stormdrill/model/seed"
)

// Server defaults and limits.
const (
	DefaultMaxBodyBytes   = 1 << 20
	DefaultMaxConns       = 4096
	DefaultReadTimeout    = 30 * time.Second
	DefaultTimeoutHoldMax = 60 * time.Second
	DefaultMaxAcceptedIDs = 1_000_000 // about 100 bytes each (a 128-bit hash, not the id): ~100 MB at most
	MaxAlerts             = 10_000    // alerts kept; later ones are counted, not kept
	MaxAlertBodyBytes     = 64 << 10  // one alert's body
	MaxAlertFieldBytes    = 200       // an alert's reason and partner are kept clipped to this: ~5 MB for MaxAlerts
	MaxControlBodyBytes   = 16 << 10  // one control request
	MaxManualOutages      = 16        // per cohort at a time
	MaxIDBytes            = 512       // Idempotency-Key
	maxHeaderBytes        = 64 << 10
)

// Header names the partner reads.
const (
	HeaderIdempotencyKey = "Idempotency-Key"
	HeaderAttempt        = "X-Attempt"
)

// ServerOptions configures a Server. Zero fields take the defaults above.
type ServerOptions struct {
	// Start is the wall-clock instant of drill time 0; zero means Now() at
	// NewServer. SetStart moves it.
	Start time.Time
	// Now is the wall clock; nil means time.Now. Tests inject a fake one.
	Now func() time.Time
	// Speed divides every drill time to place it on the wall clock:
	// scripted outage starts and lengths, flap periods, latencies, a
	// manual outage's for and period (the control API speaks drill time
	// too) and Retry-After, which goes out as wall time (see
	// WallClock.RetryAfterSeconds). 0 means 1.
	Speed          float64
	MaxBodyBytes   int64         // request body limit; 413 beyond it
	MaxConns       int           // open connections; more wait in Accept
	ReadTimeout    time.Duration // whole request read, default 30s
	WriteTimeout   time.Duration // 0: none (latency and holds are bounded by TimeoutHoldMax)
	TimeoutHoldMax time.Duration // longest a `timeout` outage (or any latency) holds a request
	MaxAcceptedIDs int           // accepted delivery ids remembered for duplicates
	// Seed: each subscriber's stream is derived from it, and so is, with
	// the Idempotency-Key, which deliveries carry bad data (Spec.BadData).
	Seed uint64
	// OnAttempt, if set, is called once per partner request when it has
	// been answered (or dropped), from the request's goroutine.
	OnAttempt func(Attempt)
	// ControlToken, when set, is required as "Authorization: Bearer TOKEN"
	// on the control API, the alert sink and the dead-letter endpoint (see
	// guardControl); it is what lets Serve take a non-loopback listener.
	ControlToken string
	// ControlHosts are Host names (or host:port) accepted by the control
	// API besides loopback ones when no token is set (with a token, the
	// Host is not checked), and in an Origin.
	ControlHosts []string

	// External mode. KeyHeader and AttemptHeader name the headers that
	// identify an attempt ("" means Idempotency-Key and X-Attempt).
	KeyHeader, AttemptHeader string
	// Observe, if set, is called once for every request to a partner path
	// when it ends (from the request's goroutine).
	Observe func(Observation)
	// OnDeadLetter, if set, serves POST /dead-letters: the system under
	// drill reports each dead letter there.
	OnDeadLetter func(DeadLetter)
	// RunID is the run id an external harness puts into its delivery ids
	// ("evt-RUNID-000123:acme-0"). Which deliveries carry bad data is
	// decided from the id without it, so that an external run picks the
	// ones a simulation or a live run of the same drill and seed picks.
	RunID string
	// Script, if set, is asked once per request before the partner's
	// behaviour: it can force an answer or drop a committed one (verify).
	Script func(cohort string, member int, key string) Scripted
}

// Server plays cohorts of fake partners over HTTP on one listener:
// /p/<cohort>/<member> (or /p/<cohort> for member 0), an alert sink at
// /alerts and a control API under /control/.
type Server struct {
	opts    ServerOptions
	now     func() time.Time
	speed   float64
	cohorts []*cohort
	byName  map[string]*cohort
	mux     *http.ServeMux

	startMu sync.Mutex
	start   time.Time

	idsMu sync.Mutex
	ids   *idSet

	requests requestCounts // for Collector

	alertsMu      sync.Mutex
	alerts        []ReceivedAlert
	alertsDropped int64

	refusedMu sync.Mutex
	refused   ReportRefusal // reports to /alerts and /dead-letters refused

	httpMu    sync.Mutex
	http      []*http.Server // Serve's, and ServeRefusing's
	closing   chan struct{}
	closeOnce sync.Once
}

type cohort struct {
	index    int
	spec     Spec
	dataSeed uint64 // DataSeed(opts.Seed, spec.Name)

	subsMu sync.Mutex
	subs   []*subscriber // created on first request

	mu     sync.Mutex // guards manual, scriptCut and stats
	manual []manualOutage
	// scriptCut, when scriptCutSet, is the drill time at which
	// DELETE /control/outage ended the script: scripted outages that had
	// started by then are over; later ones still happen.
	scriptCut    time.Duration
	scriptCutSet bool
	stats        PartnerStats

	inFlight atomic.Int64 // requests being served now
}

// subscriber is one member's Behaviour, stepped under mu by concurrent
// requests.
type subscriber struct {
	mu sync.Mutex
	b  Behaviour
}

// SubscriberRand returns the random stream of one subscriber derived from a
// drill seed. The stream depends only on the seed, the cohort's name and the
// member, so adding a cohort reshuffles no other stream, and it is the
// stream the simulator gives the same subscriber ("partner/COHORT-MEMBER"):
// a live run's partners draw the simulation's latencies, transient errors
// and per-call faults, call for call, as long as the calls reach each
// subscriber in the same order.
func SubscriberRand(drillSeed uint64, cohort string, member int) *rand.Rand {
	return seed.NewRand(drillSeed, "partner/"+cohort+"-"+strconv.Itoa(member))
}

// NewServer validates the specs and returns a server for them; it does not
// listen until Serve.
func NewServer(specs []Spec, opts ServerOptions) (*Server, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if !(opts.Speed > 0) {
		if opts.Speed != 0 {
			return nil, fmt.Errorf("speed must be greater than 0 (got %v)", opts.Speed)
		}
		opts.Speed = 1
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if opts.MaxConns <= 0 {
		opts.MaxConns = DefaultMaxConns
	}
	if opts.ReadTimeout <= 0 {
		opts.ReadTimeout = DefaultReadTimeout
	}
	if opts.TimeoutHoldMax <= 0 {
		opts.TimeoutHoldMax = DefaultTimeoutHoldMax
	}
	if opts.MaxAcceptedIDs <= 0 {
		opts.MaxAcceptedIDs = DefaultMaxAcceptedIDs
	}
	if opts.Start.IsZero() {
		opts.Start = opts.Now()
	}
	s := &Server{
		opts: opts, now: opts.Now, speed: opts.Speed, start: opts.Start,
		byName: map[string]*cohort{}, ids: newIDSet(opts.MaxAcceptedIDs),
		closing: make(chan struct{}),
	}
	var errs []error
	for i := range specs {
		if err := specs[i].Validate(); err != nil {
			errs = append(errs, err)
			continue
		}
		if _, dup := s.byName[specs[i].Name]; dup {
			errs = append(errs, fmt.Errorf("partner %q: name used twice", specs[i].Name))
			continue
		}
		c := &cohort{index: len(s.cohorts), spec: specs[i], subs: make([]*subscriber, specs[i].Count),
			dataSeed: DataSeed(opts.Seed, specs[i].Name)}
		c.spec.Outages = append([]Outage(nil), specs[i].Outages...) // the caller may reuse its slice
		c.stats = PartnerStats{Partner: c.spec.Name, ByStatus: map[int]int64{}, ByAttempt: make([]int64, MaxAttemptBucket)}
		c.stats.Latency = make([]LatencyBucket, len(LatencyBucketBounds)+1)
		for j, b := range LatencyBucketBounds {
			c.stats.Latency[j].UpTo = b
		}
		s.cohorts = append(s.cohorts, c)
		s.byName[c.spec.Name] = c
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/p/{cohort}", s.handlePartner)
	mux.HandleFunc("/p/{cohort}/{member}", s.handlePartner)
	mux.HandleFunc("POST /alerts", s.guardReport(s.handleAlert))
	mux.HandleFunc("GET /control/partners", s.guardControl(s.handleControlPartners))
	mux.HandleFunc("POST /control/outage", s.guardControl(s.handleStartOutage))
	mux.HandleFunc("DELETE /control/outage", s.guardControl(s.handleEndOutage))
	if opts.OnDeadLetter != nil {
		mux.HandleFunc("POST /dead-letters", s.guardReport(s.handleDeadLetter))
	}
	s.mux = mux
	return s, nil
}

// Handler returns the server's HTTP handler (for httptest).
func (s *Server) Handler() http.Handler { return s.mux }

// SetStart sets the wall-clock instant of drill time 0.
func (s *Server) SetStart(t time.Time) {
	s.startMu.Lock()
	s.start = t
	s.startMu.Unlock()
}

// DrillTime is the drill time at wall time t: (t - Start) × Speed.
func (s *Server) DrillTime(t time.Time) time.Duration {
	s.startMu.Lock()
	start := s.start
	s.startMu.Unlock()
	return time.Duration(float64(t.Sub(start)) * s.speed)
}

// wall converts a drill duration to wall time.
func (s *Server) wall(d time.Duration) time.Duration { return time.Duration(float64(d) / s.speed) }

// since is the drill time elapsed between the wall instants began and now.
func (s *Server) since(began, now time.Time) time.Duration {
	return time.Duration(float64(now.Sub(began)) * s.speed)
}

// Serve serves on l (see Listen) until Close. It returns
// http.ErrServerClosed after Close. A listener on a non-loopback address
// is refused unless ServerOptions.ControlToken is set.
func (s *Server) Serve(l net.Listener) error {
	if a, ok := l.Addr().(*net.TCPAddr); ok && !a.IP.IsLoopback() && s.opts.ControlToken == "" {
		l.Close()
		return fmt.Errorf("partner server: %s is not a loopback address and no control token is set", a)
	}
	hs := s.newHTTPServer()
	if !s.track(hs) {
		l.Close()
		return http.ErrServerClosed
	}
	return hs.Serve(newLimitListener(l, s.opts.MaxConns))
}

func (s *Server) newHTTPServer() *http.Server {
	return &http.Server{
		Handler:           s.mux,
		ReadTimeout:       s.opts.ReadTimeout,
		ReadHeaderTimeout: s.opts.ReadTimeout,
		WriteTimeout:      s.opts.WriteTimeout,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    maxHeaderBytes,
	}
}

// untrack drops hs from the servers Close closes, once it has shut down.
func (s *Server) untrack(hs *http.Server) {
	s.httpMu.Lock()
	defer s.httpMu.Unlock()
	for i, h := range s.http {
		if h == hs {
			s.http = append(s.http[:i], s.http[i+1:]...)
			return
		}
	}
}

// track adds hs to the servers Close closes; false if closed already.
func (s *Server) track(hs *http.Server) bool {
	s.httpMu.Lock()
	defer s.httpMu.Unlock()
	select {
	case <-s.closing:
		return false
	default:
	}
	s.http = append(s.http, hs)
	return true
}

// Close stops serving, ends held requests and closes every connection.
func (s *Server) Close() error {
	s.closeOnce.Do(func() { close(s.closing) })
	s.httpMu.Lock()
	hss := s.http
	s.http = nil
	s.httpMu.Unlock()
	var errs []error
	for _, hs := range hss {
		errs = append(errs, hs.Close())
	}
	return errors.Join(errs...)
}

func (c *cohort) subscriber(member int, seed uint64) *subscriber {
	c.subsMu.Lock()
	defer c.subsMu.Unlock()
	if sub := c.subs[member]; sub != nil {
		return sub
	}
	sub := &subscriber{}
	sub.b.init(&c.spec, SubscriberRand(seed, c.spec.Name, member), c.dataSeed)
	c.subs[member] = sub
	return sub
}

// faultAt returns the outage governing member at wall time now: a manual
// outage first, then the script.
func (s *Server) faultAt(c *cohort, member int, now time.Time) (Outage, bool) {
	c.mu.Lock()
	for _, m := range c.manual {
		if m.o.Governs(member, s.since(m.began, now)) {
			c.mu.Unlock()
			return m.o, true
		}
	}
	cut := NoCut
	if c.scriptCutSet {
		cut = c.scriptCut
	}
	c.mu.Unlock()
	if o := Governing(c.spec.Outages, member, s.DrillTime(now), cut); o != nil {
		return *o, true
	}
	return Outage{}, false
}

// outcome is how one request to a partner ended, for the counters.
type outcome struct {
	status    int // 0 when not answered
	reset     bool
	held      bool
	abandoned bool
	commit    bool // the partner processed the delivery successfully
	// External mode: the outage kind in force, the Retry-After sent, and
	// whether a committed answer was dropped (DropAnswer).
	fault, retryAfter string
	dropped           bool
}

func (s *Server) handlePartner(w http.ResponseWriter, r *http.Request) {
	arrived := s.now()
	c := s.byName[r.PathValue("cohort")]
	if c == nil {
		writeJSONError(w, http.StatusNotFound, fmt.Sprintf("no partner %q", r.PathValue("cohort")))
		return
	}
	member := 0
	if m := r.PathValue("member"); m != "" {
		n, err := strconv.Atoi(m)
		if err != nil || n < 0 || n >= c.spec.Count {
			writeJSONError(w, http.StatusNotFound, fmt.Sprintf("partner %q has members 0..%d, not %q", c.spec.Name, c.spec.Count-1, m))
			return
		}
		member = n
	}
	id := r.Header.Get(s.keyHeader())
	attempt, _ := strconv.Atoi(r.Header.Get(s.attemptHeader()))
	inFlight := int(c.inFlight.Add(1))
	defer c.inFlight.Add(-1)
	if len(id) > MaxIDBytes {
		s.finish(c, member, id, attempt, arrived, outcome{status: http.StatusBadRequest}, inFlight)
		writeJSONError(w, http.StatusBadRequest, fmt.Sprintf("%s is longer than %d bytes", HeaderIdempotencyKey, MaxIDBytes))
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, s.opts.MaxBodyBytes)
	if _, err := io.Copy(io.Discard, r.Body); err != nil {
		status := http.StatusBadRequest
		if mbe := (*http.MaxBytesError)(nil); errors.As(err, &mbe) {
			status = http.StatusRequestEntityTooLarge
		}
		s.finish(c, member, id, attempt, arrived, outcome{status: status}, inFlight)
		writeJSONError(w, status, "reading the body: "+err.Error())
		return
	}
	// ReadTimeout bounds reading the request; past it the connection's read
	// deadline would cancel the request context and cut latencies and holds
	// short, so clear it once the body is in.
	_ = http.NewResponseController(w).SetReadDeadline(time.Time{})
	fault := s.faultLabel(c, member, arrived)
	out := s.serveCall(w, r, c, member, id, arrived)
	s.finish(c, member, id, attempt, arrived, out, inFlight)
	s.requests.add(requestKey{cohort: c.index, status: out.statusLabel(), fault: fault}, s.now().Sub(arrived))
}

// serveCall asks the subscriber's Behaviour how to answer one request, at
// the drill time it arrived, then waits the answer's latency on the real
// clock and writes it (or resets the connection, or holds it and never
// answers). id is the Idempotency-Key: it decides bad data as Sim.BeginKey
// does; without one, bad data is drawn per call.
func (s *Server) serveCall(w http.ResponseWriter, r *http.Request, c *cohort, member int, id string, arrived time.Time) (out outcome) {
	ctx := r.Context()
	now := s.DrillTime(arrived)
	var fault *Outage
	if o, ok := s.faultAt(c, member, arrived); ok {
		fault = &o
		defer func() { out.fault = o.Kind.String() }()
	}
	var sc Scripted
	if s.opts.Script != nil {
		if sc = s.opts.Script(c.spec.Name, member, id); sc.Status != 0 {
			if sc.RetryAfter != "" {
				w.Header().Set("Retry-After", sc.RetryAfter)
			}
			writeJSONError(w, sc.Status, "scripted answer")
			return outcome{status: sc.Status, retryAfter: sc.RetryAfter}
		}
	}
	var d Delivery
	if id != "" {
		d = Delivery{Draw: DataDraw(c.dataSeed, KeyHash(s.withoutRunID(id))), Keyed: true}
	}
	sub := c.subscriber(member, s.opts.Seed)
	clock := s.clock()
	sub.mu.Lock()
	call := sub.b.Begin(now, d, fault, clock)
	sub.mu.Unlock()

	if call.NoAnswer {
		s.wait(ctx, s.opts.TimeoutHoldMax)
		hijackClose(w, false) // never answer: drop the connection
		return outcome{held: true}
	}
	latency := s.wall(call.Latency - call.Dribble) // a dribble's body comes after
	began := time.Now()
	answered := s.wait(ctx, latency)
	if call.NeedsFinish() {
		if !answered {
			// The caller left, but the write still lands when the
			// Behaviour says it does, and later calls conflict with it.
			s.wait(context.Background(), latency-time.Since(began))
		}
		sub.mu.Lock()
		sub.b.Finish(&call, now+call.Latency)
		sub.mu.Unlock()
	}
	if !answered {
		// The partner finishes the work regardless, so a hidden success is
		// still a success.
		return outcome{abandoned: true, commit: call.Processed}
	}
	res := call.Result
	switch {
	case call.AckLost:
		// lost-ack: the delivery is recorded; its answer never leaves.
		if hijackClose(w, true) {
			return outcome{commit: true, reset: true, dropped: true}
		}
	case call.Wire == WireEmpty, call.Wire == WireGarbage, call.Wire == WireTruncated, res.Kind == ResultRefused:
		// A request that reaches a refused partner came on a connection
		// opened before the refusal: close it with no answer, the nearest
		// the server can do (see ServeRefusing).
		if writeBroken(w, call.Wire) {
			return outcome{reset: true}
		}
		writeJSONError(w, http.StatusServiceUnavailable, "broken answer (connection could not be hijacked)")
		return outcome{status: http.StatusServiceUnavailable}
	}
	if res.Kind == ResultReset {
		if !hijackClose(w, true) {
			writeJSONError(w, http.StatusServiceUnavailable, "reset (connection could not be hijacked)")
			return outcome{status: http.StatusServiceUnavailable}
		}
		return outcome{reset: true}
	}
	if res.RetryAfter != "" {
		w.Header().Set("Retry-After", res.RetryAfter)
	}
	if call.Processed && sc.DropAnswer && cutAnswer(w) {
		return outcome{commit: true, reset: true, dropped: true}
	}
	if res.Status >= 300 && res.Status < 400 {
		w.Header().Set("Location", "/moved")
	}
	if call.Wire == WireDribble {
		if !s.dribble(ctx, w, res.Status, s.wall(call.Dribble)) {
			return outcome{abandoned: true, commit: call.Processed}
		}
		return outcome{status: res.Status, commit: call.Processed, retryAfter: res.RetryAfter}
	}
	if res.Status == http.StatusOK {
		writeJSON(w, res.Status, map[string]any{"ok": true})
	} else {
		writeJSONError(w, res.Status, http.StatusText(res.Status))
	}
	return outcome{status: res.Status, commit: call.Processed, retryAfter: res.RetryAfter}
}

// clock places drill time on the wall clock.
func (s *Server) clock() WallClock {
	s.startMu.Lock()
	defer s.startMu.Unlock()
	return WallClock{Epoch: s.start, Speed: s.speed}
}

// finish counts one request.
func (s *Server) finish(c *cohort, member int, id string, attempt int, arrived time.Time, out outcome, inFlight int) {
	done := s.now()
	dup, evicted := false, -1
	if s.opts.OnAttempt != nil {
		// Deferred first, so it runs last: after c.mu is released.
		defer func() {
			s.opts.OnAttempt(Attempt{Cohort: c.spec.Name, Member: member, ID: id, Ordinal: attempt, Arrived: arrived, Answered: done,
				Status: out.status, Reset: out.reset, AckLost: out.dropped, Held: out.held, Abandoned: out.abandoned, Duplicate: dup})
		}()
	}
	if out.commit && id != "" {
		s.idsMu.Lock()
		dup, evicted = s.ids.add(newIDKey(c.index, id))
		s.idsMu.Unlock()
	}
	if evicted >= 0 && evicted != c.index {
		o := s.cohorts[evicted]
		o.mu.Lock()
		o.stats.Evicted++
		o.mu.Unlock()
	}
	s.observe(c, member, id, attempt, arrived, done, out, dup, inFlight)
	c.mu.Lock()
	defer c.mu.Unlock()
	st := &c.stats
	st.Requests++
	if out.status != 0 {
		st.ByStatus[out.status]++
	}
	switch {
	case out.reset:
		st.Resets++
	case out.held:
		st.Held++
	}
	if out.abandoned {
		st.Abandoned++
	}
	if out.commit {
		switch {
		case id == "":
			st.NoKey++
		case dup:
			st.Duplicates++
		default:
			st.Accepted++
		}
	}
	if evicted == c.index {
		st.Evicted++
	}
	st.ByAttempt[min(max(attempt, 1), MaxAttemptBucket)-1]++
	took := s.since(arrived, done) // drill time, as every figure the server reports
	b := len(LatencyBucketBounds)
	for i, ub := range LatencyBucketBounds {
		if took <= ub {
			b = i
			break
		}
	}
	st.Latency[b].Count++
	if st.FirstSeen.IsZero() {
		st.FirstSeen = arrived
	}
	if arrived.After(st.LastSeen) {
		st.LastSeen = arrived
	}
}
