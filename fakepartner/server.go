package fakepartner

import (
	"context"
	"encoding/json"
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

// MaxAttemptBucket is the last per-ordinal bucket: attempts with ordinal
// MaxAttemptBucket or more share it.
const MaxAttemptBucket = 16

// LatencyBucketBounds are the upper bounds of PartnerStats.Latency buckets;
// one more bucket counts everything slower.
var LatencyBucketBounds = [...]time.Duration{
	time.Millisecond, 2 * time.Millisecond, 5 * time.Millisecond,
	10 * time.Millisecond, 20 * time.Millisecond, 50 * time.Millisecond,
	100 * time.Millisecond, 200 * time.Millisecond, 500 * time.Millisecond,
	time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second,
	20 * time.Second, 60 * time.Second,
}

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

// Attempt is one request to a partner as the server saw it.
type Attempt struct {
	Cohort   string
	Member   int
	ID       string // Idempotency-Key ("" if none)
	Ordinal  int    // X-Attempt (0 if none)
	Arrived  time.Time
	Answered time.Time // when the server answered, reset or gave up on it
	Status   int       // HTTP status answered; 0 if none
	Reset    bool      // the connection was reset, closed or broken on purpose (reset, empty, garbage, truncated, lost-ack)
	AckLost  bool      // lost-ack: the delivery was recorded and its answer dropped
	// Refused: the caller's connection was refused. The partner never
	// sees such an attempt; the caller reports it (a live run reads the
	// dispatcher's refused events into these records).
	Refused   bool
	Held      bool // a timeout outage held it and never answered
	Abandoned bool // the caller left before the answer
	Duplicate bool // a success for a delivery id already accepted
}

// ReceivedAlert is one alert posted to /alerts.
type ReceivedAlert struct {
	At      time.Time `json:"at"`
	Count   int       `json:"count"`
	Reason  string    `json:"reason"`
	Partner string    `json:"partner"`
	OldestS float64   `json:"oldest_s"`
}

// LatencyBucket counts requests whose handling took at most UpTo of drill
// time (the last bucket has UpTo 0 and counts the rest).
type LatencyBucket struct {
	UpTo  time.Duration `json:"up_to_ns"`
	Count int64         `json:"count"`
}

// PartnerStats is what one cohort observed.
type PartnerStats struct {
	Partner    string        `json:"partner"`
	Requests   int64         `json:"requests"`
	ByStatus   map[int]int64 `json:"by_status"` // answered requests by HTTP status
	Resets     int64         `json:"resets"`    // connections reset on purpose
	Held       int64         `json:"held"`      // requests held by a timeout outage
	Abandoned  int64         `json:"abandoned"` // the caller left before the answer
	Accepted   int64         `json:"accepted"`  // distinct delivery ids processed successfully
	Duplicates int64         `json:"duplicates"`
	NoKey      int64         `json:"no_key"`  // successful requests without Idempotency-Key
	Evicted    int64         `json:"evicted"` // accepted ids forgotten to bound memory
	// ByAttempt[i] counts requests with X-Attempt i+1; the last bucket
	// holds every ordinal from MaxAttemptBucket up; ordinal 0 or missing is
	// counted in the first.
	ByAttempt []int64         `json:"by_attempt"`
	Latency   []LatencyBucket `json:"latency"`
	FirstSeen time.Time       `json:"first_seen,omitzero"`
	LastSeen  time.Time       `json:"last_seen,omitzero"`
}

// ActiveOutage is an outage in force now, as reported by the control API.
type ActiveOutage struct {
	Kind      string  `json:"kind"`
	Manual    bool    `json:"manual"`
	Members   int     `json:"members"`   // 0 = all
	Effective bool    `json:"effective"` // false in a flap's up half
	EndsInS   float64 `json:"ends_in_s"` // drill seconds, like drill_time_s
}

// PartnerState is one cohort in GET /control/partners.
type PartnerState struct {
	Name   string         `json:"name"`
	Count  int            `json:"count"`
	Active []ActiveOutage `json:"active"`
	Stats  PartnerStats   `json:"stats"`
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

type manualOutage struct {
	o     Outage    // Start 0; For and Period are drill time
	began time.Time // wall; the outage is evaluated on drill time since
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

// Stats returns each cohort's counters, in the order of the specs.
func (s *Server) Stats() []PartnerStats {
	out := make([]PartnerStats, len(s.cohorts))
	for i, c := range s.cohorts {
		c.mu.Lock()
		out[i] = c.snapshot()
		c.mu.Unlock()
	}
	return out
}

// Accepted reports whether the cohort has accepted the delivery id (and still
// remembers it).
func (s *Server) Accepted(partner, id string) bool {
	c := s.byName[partner]
	if c == nil {
		return false
	}
	s.idsMu.Lock()
	defer s.idsMu.Unlock()
	return s.ids.has(newIDKey(c.index, id))
}

// Alerts returns the alerts received so far, oldest first.
func (s *Server) Alerts() []ReceivedAlert {
	s.alertsMu.Lock()
	defer s.alertsMu.Unlock()
	return append([]ReceivedAlert(nil), s.alerts...)
}

// AlertsDropped is how many alerts arrived after MaxAlerts were kept.
func (s *Server) AlertsDropped() int64 {
	s.alertsMu.Lock()
	defer s.alertsMu.Unlock()
	return s.alertsDropped
}

func (c *cohort) snapshot() PartnerStats {
	st := c.stats
	st.ByStatus = make(map[int]int64, len(c.stats.ByStatus))
	for k, v := range c.stats.ByStatus {
		st.ByStatus[k] = v
	}
	st.ByAttempt = append([]int64(nil), c.stats.ByAttempt...)
	st.Latency = append([]LatencyBucket(nil), c.stats.Latency...)
	return st
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
	s.requests.add(requestKey{cohort: c.index, status: out.statusLabel(), fault: fault})
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
		d = Delivery{Key: KeyHash(s.withoutRunID(id)), Keyed: true}
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

// wait sleeps d (at most TimeoutHoldMax); false if the caller left or the
// server closed first.
func (s *Server) wait(ctx context.Context, d time.Duration) bool {
	d = min(d, s.opts.TimeoutHoldMax)
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	case <-s.closing:
		return false
	}
}

// answerBody is the body of an answer: what writeJSON writes.
func answerBody(status int) []byte {
	var v any = map[string]any{"ok": true}
	if status != http.StatusOK {
		v = map[string]string{"error": http.StatusText(status)}
	}
	b, _ := json.Marshal(v)
	return append(b, '\n')
}

// dribble writes the headers at once and the body one byte at a time,
// evenly over d; false if the caller left (or the server closed) first.
func (s *Server) dribble(ctx context.Context, w http.ResponseWriter, status int, d time.Duration) bool {
	body := answerBody(status)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	rc := http.NewResponseController(w)
	if rc.Flush() != nil {
		return false
	}
	step := d / time.Duration(len(body))
	for i := range body {
		if !s.wait(ctx, step) {
			return false
		}
		if _, err := w.Write(body[i : i+1]); err != nil || rc.Flush() != nil {
			return false
		}
	}
	return true
}

// writeBroken takes the connection over and ends it the way wire says:
// closed with no answer (empty, and a refused partner's stray request),
// bytes that are not HTTP (garbage) or a 200 whose body stops short of
// its Content-Length (truncated). false if the connection cannot be
// hijacked (HTTP/2).
func writeBroken(w http.ResponseWriter, wire Wire) bool {
	conn, buf, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return false
	}
	defer conn.Close()
	body := answerBody(http.StatusOK)
	switch wire {
	case WireGarbage:
		_, _ = buf.WriteString(GarbageAnswer)
	case WireTruncated:
		// Twice the body promised, half of it sent.
		_, _ = fmt.Fprintf(buf, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", 2*len(body))
		_, _ = buf.Write(body[:len(body)/2])
	}
	_ = buf.Flush() // the caller may be gone; nothing to do
	return true
}

// cutAnswer takes the connection over, sends the first bytes of a status
// line and closes it: the caller gets an error and no answer. Closing
// before any byte would not do for a scripted lost answer (verify): on a
// reused connection, Go's http.Transport resends a request that carries an
// Idempotency-Key by itself, once for every reused connection it can try,
// and those resends, with the same key, could take every dropped answer
// within one attempt of the system's own, whose retry then went unseen.
// An answer cut after its first byte is not resent.
func cutAnswer(w http.ResponseWriter) bool {
	conn, buf, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return false
	}
	defer conn.Close()
	_, _ = buf.WriteString("HTTP/1.1 ")
	_ = buf.Flush() // the caller may be gone; nothing to do
	return true
}

// hijackClose takes the connection over and closes it, with a TCP RST when
// reset is true. It reports false if the connection cannot be hijacked
// (HTTP/2).
func hijackClose(w http.ResponseWriter, reset bool) bool {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return false
	}
	if l, ok := conn.(interface{ SetLinger(int) error }); ok && reset {
		_ = l.SetLinger(0) // linger 0: Close sends RST instead of FIN
	}
	_ = conn.Close()
	return true
}

func (s *Server) handleAlert(w http.ResponseWriter, r *http.Request) {
	var a struct {
		Count   *int     `json:"count"`
		Reason  string   `json:"reason"`
		Partner string   `json:"partner"`
		OldestS *float64 `json:"oldest_s"`
	}
	if err := decodeJSON(w, r, MaxAlertBodyBytes, &a); err != nil {
		s.refuseReport(w, r, err.Error())
		return
	}
	switch {
	case a.Count == nil || *a.Count < 0:
		s.refuseReport(w, r, "count must be present and not negative")
		return
	case a.OldestS != nil && !(*a.OldestS >= 0):
		s.refuseReport(w, r, "oldest_s must not be negative")
		return
	}
	ra := ReceivedAlert{At: s.now(), Count: *a.Count, Reason: clipText(a.Reason, MaxAlertFieldBytes), Partner: clipText(a.Partner, MaxAlertFieldBytes)}
	if a.OldestS != nil {
		ra.OldestS = *a.OldestS
	}
	s.alertsMu.Lock()
	if len(s.alerts) < MaxAlerts {
		s.alerts = append(s.alerts, ra)
	} else {
		s.alertsDropped++
	}
	s.alertsMu.Unlock()
	writeJSON(w, http.StatusAccepted, map[string]any{"ok": true})
}

func (s *Server) handleControlPartners(w http.ResponseWriter, r *http.Request) {
	now := s.now()
	t := s.DrillTime(now)
	out := struct {
		DrillTimeS float64        `json:"drill_time_s"`
		Partners   []PartnerState `json:"partners"`
	}{DrillTimeS: t.Seconds(), Partners: make([]PartnerState, 0, len(s.cohorts))}
	for _, c := range s.cohorts {
		ps := PartnerState{Name: c.spec.Name, Count: c.spec.Count, Active: []ActiveOutage{}}
		c.mu.Lock()
		s.pruneManual(c, now)
		for _, m := range c.manual {
			since := s.since(m.began, now)
			ps.Active = append(ps.Active, ActiveOutage{
				Kind: m.o.Kind.String(), Manual: true, Members: m.o.Members,
				Effective: m.o.EffectiveAt(since), EndsInS: (m.o.End() - since).Seconds(),
			})
		}
		ps.Stats = c.snapshot()
		cut, cutSet := c.scriptCut, c.scriptCutSet
		c.mu.Unlock()
		for i := range c.spec.Outages {
			o := &c.spec.Outages[i]
			if o.ActiveAt(t) && !(cutSet && o.Start <= cut) {
				ps.Active = append(ps.Active, ActiveOutage{
					Kind: o.Kind.String(), Members: o.Members,
					Effective: o.EffectiveAt(t), EndsInS: (o.End() - t).Seconds(),
				})
			}
		}
		out.Partners = append(out.Partners, ps)
	}
	writeJSON(w, http.StatusOK, out)
}

// pruneManual drops c's manual outages that have ended; c.mu must be held.
func (s *Server) pruneManual(c *cohort, now time.Time) {
	kept := c.manual[:0]
	for _, m := range c.manual {
		if s.since(m.began, now) < m.o.End() {
			kept = append(kept, m)
		}
	}
	clear(c.manual[len(kept):])
	c.manual = kept
}

// overlapping says which outage of c, manual or scripted, would be in
// force at once with o started now, by the drill format's rule (one
// outage at a time on a subscriber), or "". c.mu is held.
func (s *Server) overlapping(c *cohort, o Outage, now time.Time) string {
	o.Start = s.DrillTime(now)
	for _, m := range c.manual {
		other := m.o
		other.Start = s.DrillTime(m.began)
		if o.Overlaps(&other) {
			return fmt.Sprintf("partner %q already has a %s outage started by the control API until drill time %v; one outage at a time: end it first (DELETE /control/outage)", c.spec.Name, other.Kind, other.End())
		}
	}
	for i := range c.spec.Outages {
		sc := &c.spec.Outages[i]
		if c.scriptCutSet && sc.Start <= c.scriptCut {
			continue // ended by DELETE /control/outage
		}
		if o.Overlaps(sc) {
			return fmt.Sprintf("partner %q has a scripted %s outage from drill time %v to %v; one outage at a time: end it first, or start this one after it", c.spec.Name, sc.Kind, sc.Start, sc.End())
		}
	}
	return ""
}

// outageRequest is the body of POST /control/outage; durations are drill
// time, like every duration the control API reads or writes.
type outageRequest struct {
	Partner     string  `json:"partner"`
	Kind        string  `json:"kind"`
	For         string  `json:"for"`
	Members     int     `json:"members"`
	RetryAfter  string  `json:"retry_after"`
	Factor      float64 `json:"factor"`
	Period      string  `json:"period"`
	DribbleOver string  `json:"dribble_over"`
}

func (s *Server) handleStartOutage(w http.ResponseWriter, r *http.Request) {
	var req outageRequest
	if err := decodeJSON(w, r, MaxControlBodyBytes, &req); err != nil {
		writeJSONError(w, http.StatusBadRequest, err.Error())
		return
	}
	c := s.byName[req.Partner]
	if c == nil {
		writeJSONError(w, http.StatusBadRequest, fmt.Sprintf("no partner %q", req.Partner))
		return
	}
	kind, err := ParseOutageKind(req.Kind)
	if err != nil {
		writeJSONError(w, http.StatusBadRequest, err.Error())
		return
	}
	o := Outage{Kind: kind, Members: req.Members, RetryAfter: req.RetryAfter, Factor: req.Factor}
	if o.For, err = parseControlDuration("for", req.For); err != nil {
		writeJSONError(w, http.StatusBadRequest, err.Error())
		return
	}
	if req.Period != "" {
		if o.Period, err = parseControlDuration("period", req.Period); err != nil {
			writeJSONError(w, http.StatusBadRequest, err.Error())
			return
		}
	}
	if req.DribbleOver != "" {
		if o.DribbleOver, err = parseControlDuration("dribble_over", req.DribbleOver); err != nil {
			writeJSONError(w, http.StatusBadRequest, err.Error())
			return
		}
	}
	if err := o.Validate(c.spec.Count); err != nil {
		writeJSONError(w, http.StatusBadRequest, err.Error())
		return
	}
	now := s.now()
	c.mu.Lock()
	s.pruneManual(c, now)
	if len(c.manual) >= MaxManualOutages {
		c.mu.Unlock()
		writeJSONError(w, http.StatusBadRequest, fmt.Sprintf("partner %q already has %d manual outages; end them first", c.spec.Name, MaxManualOutages))
		return
	}
	if msg := s.overlapping(c, o, now); msg != "" {
		c.mu.Unlock()
		writeJSONError(w, http.StatusConflict, msg)
		return
	}
	c.manual = append(c.manual, manualOutage{o: o, began: now})
	c.mu.Unlock()
	// ends_at is an instant, so it is on the wall clock: when the outage
	// of o.For drill time will be over.
	writeJSON(w, http.StatusOK, map[string]any{"partner": c.spec.Name, "kind": kind.String(), "ends_at": now.Add(s.wall(o.For))})
}

func (s *Server) handleEndOutage(w http.ResponseWriter, r *http.Request) {
	name := r.URL.Query().Get("partner")
	c := s.byName[name]
	if c == nil {
		writeJSONError(w, http.StatusBadRequest, fmt.Sprintf("no partner %q (give ?partner=NAME)", name))
		return
	}
	now := s.now()
	t := s.DrillTime(now)
	c.mu.Lock()
	s.pruneManual(c, now)
	n := len(c.manual)
	c.manual = nil
	scripted := 0
	for i := range c.spec.Outages {
		o := &c.spec.Outages[i]
		if o.ActiveAt(t) && !(c.scriptCutSet && o.Start <= c.scriptCut) {
			scripted++
		}
	}
	// Scripted outages that have started are over; the script's later
	// outages still happen.
	c.scriptCut, c.scriptCutSet = t, true
	c.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"partner": name, "ended": n + scripted, "ended_manual": n, "ended_scripted": scripted})
}

// parseControlDuration parses a control API duration (drill time).
func parseControlDuration(key, v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 || d > MaxSample {
		return 0, fmt.Errorf("%s: want a positive duration with a unit, like \"30s\" (got %q)", key, v)
	}
	return d, nil
}

// decodeJSON decodes one JSON object of at most limit bytes, refusing
// unknown fields and trailing data.
func decodeJSON(w http.ResponseWriter, r *http.Request, limit int64, v any) error {
	return decodeJSONBody(w, r, limit, v, true)
}

// decodeJSONLoose is decodeJSON that ignores unknown fields.
func decodeJSONLoose(w http.ResponseWriter, r *http.Request, limit int64, v any) error {
	return decodeJSONBody(w, r, limit, v, false)
}

func decodeJSONBody(w http.ResponseWriter, r *http.Request, limit int64, v any, strict bool) error {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, limit))
	if strict {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(v); err != nil {
		if mbe := (*http.MaxBytesError)(nil); errors.As(err, &mbe) {
			return fmt.Errorf("body is larger than %d bytes", limit)
		}
		return fmt.Errorf("bad JSON body: %v", err)
	}
	if dec.More() {
		return errors.New("bad JSON body: more than one value")
	}
	return nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v) // the client may be gone; nothing to do
}

func writeJSONError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": msg})
}
