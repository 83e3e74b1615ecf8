// Command jittersender is a small webhook sender for the tests of
// `stormdrill verify`: its retries are widely jittered (each retry waits a
// delay drawn uniformly from [--retry-min, --retry-max]), and it keeps its
// queue in a journal file, so a SIGKILL and restart keeps every delayed
// delivery's run time.
//
// It takes events over HTTP (POST /events, the body stormdrill's external
// mode sends), POSTs each delivery to its URL with the delivery id as
// Idempotency-Key and the attempt number as X-Attempt, retries 5xx answers
// and lost answers up to --max-attempts, honours a 429's Retry-After, gives
// up on other 4xx at once, and reports each dead letter to
// $STORMDRILL_DEAD_LETTER_URL and an alert to $STORMDRILL_ALERT_URL.
//
// --defect breaks it in one named way:
//   - restart-brings-retries-forward: on start, every delivery waiting
//     out a delay is due at once;
//   - dead-letter-lost-answer: a second attempt whose answer is lost
//     dead-letters the delivery (the partner has processed it by then).
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/stormdrill/stormdrill/fakepartner"
	"github.com/stormdrill/stormdrill/model"
	"github.com/stormdrill/stormdrill/model/runtime/dispatcher"
)

// Limits of the sender.
const (
	maxEventBytes    = 1 << 20
	maxPending       = 100_000 // deliveries held at once
	maxResponseBytes = 64 << 10
	maxDeliveries    = 10_000 // in one event
	maxRetryAfter    = time.Hour
	maxJournalLine   = 1 << 20
	schedulerTick    = 10 * time.Millisecond
)

const (
	defectRestartForward  = "restart-brings-retries-forward"
	defectDeadLetterAfter = "dead-letter-lost-answer"
)

// entry is one line of the journal: a delivery added, its next attempt
// scheduled, or its end.
type entry struct {
	Op       string          `json:"op"` // add | sched | end
	ID       string          `json:"id"`
	URL      string          `json:"url,omitempty"`
	Payload  json.RawMessage `json:"payload,omitempty"`
	Attempts int             `json:"attempts,omitempty"` // attempts made so far
	Due      int64           `json:"due,omitempty"`      // unix nanoseconds of the next attempt
}

type delivery struct {
	id, url  string
	payload  json.RawMessage
	attempts int
	due      time.Time
	inFlight bool
}

type sender struct {
	mu      sync.Mutex
	journal *os.File
	pending map[string]*delivery
	rng     *rand.Rand

	retryMin, retryMax time.Duration
	maxAttempts        int
	defect             string
	client             *http.Client
	reporter           *http.Client
	deadURL, alertURL  string
	token              string
	slots              chan struct{} // bounds attempts in flight
	wg                 sync.WaitGroup
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "jittersender:", err)
		os.Exit(1)
	}
}

func run() error {
	listen := flag.String("listen", os.Getenv("STORMDRILL_INGEST_ADDR"), "ingest address (POST /events)")
	state := flag.String("journal", "", "the queue's journal (default $STORMDRILL_STATE_DIR/jittersender.jsonl)")
	retryMin := flag.Duration("retry-min", 15*time.Second, "shortest retry delay")
	retryMax := flag.Duration("retry-max", 44*time.Second, "longest retry delay")
	maxAttempts := flag.Int("max-attempts", 3, "attempts per delivery")
	timeout := flag.Duration("timeout", 2*time.Second, "timeout of one attempt")
	workers := flag.Int("workers", 32, "attempts in flight at most")
	seed := flag.Uint64("seed", 0, "seed of the retry delays (0: from the clock)")
	defect := flag.String("defect", "", defectRestartForward+" or "+defectDeadLetterAfter)
	flag.Parse()
	switch *defect {
	case "", defectRestartForward, defectDeadLetterAfter:
	default:
		return fmt.Errorf("--defect %q: unknown", *defect)
	}
	if *listen == "" {
		return errors.New("--listen is required (or set STORMDRILL_INGEST_ADDR)")
	}
	if *state == "" {
		dir := os.Getenv("STORMDRILL_STATE_DIR")
		if dir == "" {
			return errors.New("--journal is required (or set STORMDRILL_STATE_DIR)")
		}
		*state = filepath.Join(dir, "jittersender.jsonl")
	}
	if *retryMin <= 0 || *retryMax < *retryMin || *maxAttempts < 1 || *timeout <= 0 || *workers < 1 {
		return errors.New("want 0 < --retry-min <= --retry-max and positive --max-attempts, --timeout, --workers")
	}
	if *seed == 0 {
		*seed = uint64(time.Now().UnixNano())
	}
	s := &sender{
		pending: map[string]*delivery{}, rng: rand.New(rand.NewPCG(*seed, *seed^0x9e3779b97f4a7c15)),
		retryMin: *retryMin, retryMax: *retryMax, maxAttempts: *maxAttempts, defect: *defect,
		client: &http.Client{Timeout: *timeout}, reporter: &http.Client{Timeout: 5 * time.Second},
		deadURL: os.Getenv("STORMDRILL_DEAD_LETTER_URL"), alertURL: os.Getenv("STORMDRILL_ALERT_URL"),
		token: os.Getenv("STORMDRILL_PARTNER_TOKEN"), slots: make(chan struct{}, *workers),
	}
	if err := s.open(*state); err != nil {
		return err
	}
	defer s.journal.Close()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	l, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok\n") })
	mux.HandleFunc("POST /events", s.ingest)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second}
	go func() { _ = srv.Serve(l) }()
	fmt.Printf("jittersender: ready on %s (retries after %v to %v)\n", l.Addr(), *retryMin, *retryMax)

	tick := time.NewTicker(schedulerTick)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			shutdown, cancel := context.WithTimeout(context.Background(), *timeout+5*time.Second)
			defer cancel()
			_ = srv.Shutdown(shutdown)
			s.wg.Wait()
			return nil
		case now := <-tick.C:
			s.dispatchDue(now)
		}
	}
}

// open replays the journal into the pending set, then appends to it.
func (s *sender) open(path string) error {
	if f, err := os.Open(path); err == nil {
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 4096), maxJournalLine)
		for sc.Scan() {
			var e entry
			if json.Unmarshal(sc.Bytes(), &e) != nil {
				continue // a line cut short by a kill
			}
			switch e.Op {
			case "add":
				s.pending[e.ID] = &delivery{id: e.ID, url: e.URL, payload: e.Payload, due: time.Unix(0, e.Due)}
			case "sched":
				if d := s.pending[e.ID]; d != nil {
					d.attempts, d.due = e.Attempts, time.Unix(0, e.Due)
				}
			case "end":
				delete(s.pending, e.ID)
			}
		}
		f.Close()
		if err := sc.Err(); err != nil {
			return fmt.Errorf("reading %s: %w", path, err)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if s.defect == defectRestartForward {
		now := time.Now()
		for _, d := range s.pending {
			if d.attempts > 0 {
				d.due = now
			}
		}
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	s.journal = f
	return nil
}

// write appends one entry; the caller holds s.mu. One write per line, so a
// kill leaves at most the last line cut short.
func (s *sender) write(e entry) error {
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	_, err = s.journal.Write(append(b, '\n'))
	return err
}

func (s *sender) ingest(w http.ResponseWriter, r *http.Request) {
	var ev dispatcher.IngestEvent
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxEventBytes)).Decode(&ev); err != nil {
		http.Error(w, "bad event: "+err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.pending)+len(ev.Deliveries) > maxPending {
		http.Error(w, "queue full", http.StatusServiceUnavailable)
		return
	}
	now := time.Now()
	if len(ev.Deliveries) == 0 || len(ev.Deliveries) > maxDeliveries {
		http.Error(w, fmt.Sprintf("an event needs 1 to %d deliveries", maxDeliveries), http.StatusBadRequest)
		return
	}
	for _, d := range ev.Deliveries {
		if d.ID == "" || d.URL == "" {
			http.Error(w, "every delivery needs an id and a url", http.StatusBadRequest)
			return
		}
	}
	for _, d := range ev.Deliveries {
		if err := s.write(entry{Op: "add", ID: d.ID, URL: d.URL, Payload: ev.Payload, Due: now.UnixNano()}); err != nil {
			http.Error(w, "journal: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		s.pending[d.ID] = &delivery{id: d.ID, url: d.URL, payload: ev.Payload, due: now}
	}
	w.WriteHeader(http.StatusAccepted)
}

// dispatchDue starts an attempt for every due delivery a slot is free for.
func (s *sender) dispatchDue(now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, d := range s.pending {
		if d.inFlight || d.due.After(now) {
			continue
		}
		select {
		case s.slots <- struct{}{}:
		default:
			return
		}
		d.inFlight = true
		d.attempts++
		s.wg.Add(1)
		go func(d *delivery, attempt int) {
			defer s.wg.Done()
			defer func() { <-s.slots }()
			s.attempt(d, attempt)
		}(d, d.attempts)
	}
}

// outcome of one attempt.
type outcome int

const (
	delivered outcome = iota
	retryable
	permanent
	lostAnswer
)

func (s *sender) attempt(d *delivery, attempt int) {
	body := []byte(d.payload)
	if len(body) == 0 {
		body = []byte(`{}`)
	}
	out, after := retryable, time.Duration(0)
	req, err := http.NewRequest(http.MethodPost, d.url, bytes.NewReader(body))
	if err != nil {
		out = permanent
	} else {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", d.id)
		req.Header.Set("X-Attempt", strconv.Itoa(attempt))
		resp, err := s.client.Do(req)
		if err != nil {
			out = lostAnswer
		} else {
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxResponseBytes))
			resp.Body.Close()
			switch st := resp.StatusCode; {
			case st >= 200 && st < 300:
				out = delivered
			case st == http.StatusTooManyRequests:
				if d, ok := model.ParseRetryAfter(resp.Header.Get("Retry-After"), time.Now()); ok && d <= maxRetryAfter {
					after = d
				}
			case st >= 400 && st < 500 && st != http.StatusRequestTimeout:
				out = permanent
			}
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	d.inFlight = false
	reason := ""
	switch {
	case out == delivered:
	case out == permanent:
		reason = "permanent"
	case out == lostAnswer && attempt >= 2 && s.defect == defectDeadLetterAfter:
		reason = "max-attempts"
	case attempt >= s.maxAttempts:
		reason = "max-attempts"
	default:
		if after == 0 {
			after = s.retryMin + time.Duration(s.rng.Int64N(int64(s.retryMax-s.retryMin)+1))
		}
		d.due = time.Now().Add(after)
		if err := s.write(entry{Op: "sched", ID: d.id, Attempts: attempt, Due: d.due.UnixNano()}); err != nil {
			fmt.Fprintln(os.Stderr, "jittersender: journal:", err)
		}
		return
	}
	if err := s.write(entry{Op: "end", ID: d.id}); err != nil {
		fmt.Fprintln(os.Stderr, "jittersender: journal:", err)
	}
	delete(s.pending, d.id)
	if reason != "" {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.report(d, reason, attempt)
		}()
	}
}

// report sends a dead letter, then its alert, to the harness's sinks.
func (s *sender) report(d *delivery, reason string, attempts int) {
	alert := map[string]any{"count": 1, "reason": reason}
	if u, err := url.Parse(d.url); err == nil {
		alert["partner"] = path.Base(path.Dir(u.Path)) // /p/PARTNER/MEMBER
	}
	for _, r := range []struct {
		url  string
		body any
	}{{s.deadURL, fakepartner.DeadLetter{ID: d.id, Reason: reason, Attempts: attempts}}, {s.alertURL, alert}} {
		if r.url == "" {
			continue
		}
		if err := fakepartner.Report(s.reporter, r.url, s.token, r.body); err != nil {
			fmt.Fprintln(os.Stderr, "jittersender: reporting:", err)
		}
	}
}
