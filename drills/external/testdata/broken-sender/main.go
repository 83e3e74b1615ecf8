// Command broken-sender is a deliberately broken webhook sender for the
// test suite: a small retrying sender (fixed backoff, a few attempts, dead
// letters POSTed to the harness) with a switch for each defect the harness
// must report as a finding rather than let pass. With no switch it is a
// correct sender, and the same drills pass against it.
//
// It takes events on POST /events at $STORMDRILL_INGEST_ADDR (the body an
// external drill sends), answers 202, and delivers each delivery to its URL
// with the delivery id as Idempotency-Key and the attempt number as
// X-Attempt; a 5xx, 429 or transport error is retried after --backoff up to
// --max-attempts, a 4xx is permanent; either end is POSTed to
// $STORMDRILL_DEAD_LETTER_URL as {"id","reason","attempts"}.
//
// It lives under testdata so that `go build ./...` leaves it out; the
// tests build it with `go build`.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Bounds of the sender.
const (
	maxEventBytes    = 1 << 20
	maxInFlight      = 256 // deliveries being worked on at once
	maxQueued        = 10_000
	maxResponseBytes = 64 << 10
)

type event struct {
	EventID    string `json:"event_id"`
	Deliveries []struct {
		ID  string `json:"id"`
		URL string `json:"url"`
	} `json:"deliveries"`
}

type delivery struct{ id, url string }

type sender struct {
	backoff       time.Duration
	maxAttempts   int
	refusePercent int
	noKey         bool
	rekey         bool
	dlNoType      bool
	deadURL       string
	client        *http.Client
	queue         chan delivery
	posts         atomic.Int64
}

func main() {
	s := &sender{client: &http.Client{Timeout: 5 * time.Second}, queue: make(chan delivery, maxQueued)}
	flag.DurationVar(&s.backoff, "backoff", 300*time.Millisecond, "delay before each retry")
	flag.IntVar(&s.maxAttempts, "max-attempts", 4, "attempts before a delivery is dead-lettered")
	flag.IntVar(&s.refusePercent, "refuse-percent", 0, "defect: answer this share of ingest POSTs (every k-th) with 500")
	flag.BoolVar(&s.noKey, "no-key", false, "defect: send no Idempotency-Key")
	flag.BoolVar(&s.rekey, "rekey", false, "defect: a new Idempotency-Key on every retry")
	crashAfter := flag.Duration("crash-after", 0, "defect: kill itself with SIGKILL this long after its first event")
	flag.BoolVar(&s.dlNoType, "dead-letter-no-content-type", false, "defect: POST dead letters without a Content-Type")
	defect := flag.String("defect", "", "one defect by name, for a drill that passes it from the environment: refuse-ingest (20%), no-key, rekey, crash (after 1.5s), dead-letter-no-content-type; empty for none")
	flag.Parse()
	switch *defect {
	case "":
	case "refuse-ingest":
		s.refusePercent = 20
	case "no-key":
		s.noKey = true
	case "rekey":
		s.rekey = true
	case "crash":
		*crashAfter = 1500 * time.Millisecond
	case "dead-letter-no-content-type":
		s.dlNoType = true
	default:
		log.Fatalf("broken-sender: --defect %q: want refuse-ingest, no-key, rekey, crash or dead-letter-no-content-type", *defect)
	}
	addr := os.Getenv("STORMDRILL_INGEST_ADDR")
	s.deadURL = os.Getenv("STORMDRILL_DEAD_LETTER_URL")
	if addr == "" || s.deadURL == "" {
		log.Fatal("broken-sender: needs STORMDRILL_INGEST_ADDR and STORMDRILL_DEAD_LETTER_URL (run it from an external drill)")
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		log.Fatal(err)
	}
	sem := make(chan struct{}, maxInFlight)
	go func() {
		for d := range s.queue {
			sem <- struct{}{}
			go func() {
				defer func() { <-sem }()
				s.deliver(d)
			}()
		}
	}()
	var crashOnce sync.Once
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	mux.HandleFunc("POST /events", func(w http.ResponseWriter, r *http.Request) {
		if *crashAfter > 0 {
			crashOnce.Do(func() {
				time.AfterFunc(*crashAfter, func() {
					fmt.Println("broken-sender: crashing on purpose (SIGKILL)")
					p, _ := os.FindProcess(os.Getpid())
					_ = p.Kill()
				})
			})
		}
		n := s.posts.Add(1)
		if s.refusePercent > 0 && n%int64(100/s.refusePercent) == 0 {
			http.Error(w, "refused on purpose", http.StatusInternalServerError)
			return
		}
		var ev event
		if err := json.NewDecoder(io.LimitReader(r.Body, maxEventBytes)).Decode(&ev); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if len(s.queue)+len(ev.Deliveries) > maxQueued {
			w.Header().Set("Retry-After", "1")
			http.Error(w, "queue full", http.StatusServiceUnavailable)
			return
		}
		for _, d := range ev.Deliveries {
			s.queue <- delivery{id: d.ID, url: d.URL}
		}
		w.WriteHeader(http.StatusAccepted)
	})
	fmt.Println("broken-sender: listening on", addr)
	log.Fatal(http.Serve(l, mux))
}

// deliver tries d until it succeeds, fails for good or runs out of
// attempts; the last two are dead letters.
func (s *sender) deliver(d delivery) {
	for attempt := 1; ; attempt++ {
		status, err := s.call(d, attempt)
		switch {
		case err == nil && status >= 200 && status < 300:
			return
		case err == nil && status >= 400 && status < 500 && status != http.StatusTooManyRequests:
			s.deadLetter(d, "permanent", attempt)
			return
		case attempt >= s.maxAttempts:
			s.deadLetter(d, "max-attempts", attempt)
			return
		}
		time.Sleep(s.backoff)
	}
}

func (s *sender) call(d delivery, attempt int) (int, error) {
	req, err := http.NewRequest(http.MethodPost, d.url, bytes.NewReader([]byte(`{"ok":true}`)))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	switch {
	case s.noKey:
	case s.rekey && attempt > 1:
		req.Header.Set("Idempotency-Key", d.id+"/retry-"+strconv.Itoa(attempt))
	default:
		req.Header.Set("Idempotency-Key", d.id)
	}
	req.Header.Set("X-Attempt", strconv.Itoa(attempt))
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxResponseBytes))
	resp.Body.Close()
	return resp.StatusCode, nil
}

func (s *sender) deadLetter(d delivery, reason string, attempts int) {
	body, _ := json.Marshal(map[string]any{"id": d.id, "reason": reason, "attempts": attempts})
	for try := 0; try < 5; try++ {
		req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, s.deadURL, bytes.NewReader(body))
		if err != nil {
			return
		}
		if !s.dlNoType {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := s.client.Do(req)
		if err == nil {
			msg, _ := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
			resp.Body.Close()
			if resp.StatusCode < 300 {
				return
			}
			err = errors.New(resp.Status + ": " + string(bytes.TrimSpace(msg)))
			if resp.StatusCode < 500 {
				// A sender that ignores this answer loses its dead letter:
				// this one at least says so in its log.
				fmt.Println("broken-sender: dead letter", d.id, "refused:", err)
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
}
