package dispatcher

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/stormdrill/stormdrill/model/runtime/httpguard"
	"github.com/stormdrill/stormdrill/model/runtime/queue"
)

// Ingest bounds.
const (
	// MaxIngestBody bounds one event's request body.
	MaxIngestBody = 4 << 20
	// MaxIngestDeliveries bounds the deliveries of one event.
	MaxIngestDeliveries = 10_000
	// ingestRetryAfter is what a full queue asks the caller to wait.
	ingestRetryAfter = 1 * time.Second
	// ingestStoreTimeout bounds the store calls of one request.
	ingestStoreTimeout = 10 * time.Second
)

// IngestEvent is one event as the ingest takes it: the JSON body of
// POST /events, the same body an external drill's HTTP ingest sends.
type IngestEvent struct {
	EventID string `json:"event_id"`
	// Created is the event's creation time (an external drill sends the
	// scheduled arrival); zero means the time it was received.
	Created    time.Time        `json:"created"`
	Deliveries []IngestDelivery `json:"deliveries"`
	Payload    json.RawMessage  `json:"payload,omitempty"`
}

// IngestDelivery is one delivery of an event: its id (the idempotency key
// every attempt sends) and the URL of one of the configured endpoints.
type IngestDelivery struct {
	ID  string `json:"id"`
	URL string `json:"url"`
}

// Ingest is the dispatcher's HTTP ingest, loopback only: POST /events
// (Content-Type: application/json) enqueues an event's
// deliveries durably in one transaction and answers 202 only once they
// are stored; GET /healthz answers 200. A queue that holds Capacity
// deliveries or more (ready, delayed or leased) answers 503 with a
// Retry-After, so the caller holds the event back rather than lose it.
type Ingest struct {
	store    queue.Store
	capacity int64
	clock    Clock
	byURL    map[string]IngestTarget

	mu sync.Mutex // one enqueue at a time, so the capacity check holds
}

// IngestTarget is the endpoint a delivery URL names.
type IngestTarget struct{ Endpoint, Partner string }

// NewIngest returns the ingest for cfg (validated; its Store is the
// queue) that admits at most capacity waiting deliveries.
func NewIngest(cfg Config, capacity int) (*Ingest, error) {
	if cfg.Store == nil {
		return nil, errors.New("dispatcher: ingest: Config.Store is required")
	}
	if capacity < 1 {
		return nil, fmt.Errorf("dispatcher: ingest: capacity %d: must be at least 1", capacity)
	}
	in := &Ingest{store: cfg.Store, capacity: int64(capacity), clock: cfg.Clock, byURL: map[string]IngestTarget{}}
	for _, e := range cfg.EndpointURLs() {
		in.byURL[e.URL] = IngestTarget{Endpoint: e.Name, Partner: cfg.Partners[e.Group].Name}
	}
	return in, nil
}

// ServeHTTP implements http.Handler. A request a web page could make (a
// foreign Host or Origin, a POST that is not application/json) is refused
// first, as httpguard refuses it everywhere.
func (in *Ingest) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if status, msg := (httpguard.Policy{}).Refusal(r); status != 0 {
		httpguard.WriteError(w, status, msg)
		return
	}
	switch {
	case r.URL.Path == "/healthz" && r.Method == http.MethodGet:
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, "ok\n")
	case r.URL.Path == "/events" && r.Method == http.MethodPost:
		code, msg := in.enqueue(r)
		if code == http.StatusServiceUnavailable {
			w.Header().Set("Retry-After", strconv.Itoa(int(ingestRetryAfter/time.Second)))
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		b, _ := json.Marshal(map[string]string{"result": msg})
		_, _ = w.Write(append(b, '\n'))
	case r.URL.Path == "/events" || r.URL.Path == "/healthz":
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	default:
		http.NotFound(w, r)
	}
}

// Decode reads and checks one event body, resolving each delivery's URL
// to its endpoint. The error says what is wrong, for a 400 or 422.
func (in *Ingest) Decode(body io.Reader) (*IngestEvent, []IngestTarget, error) {
	var ev IngestEvent
	dec := json.NewDecoder(io.LimitReader(body, MaxIngestBody+1))
	if err := dec.Decode(&ev); err != nil {
		return nil, nil, fmt.Errorf("want one JSON event {\"event_id\", \"created\", \"deliveries\": [{\"id\", \"url\"}], \"payload\"}: %v", err)
	}
	if ev.EventID == "" {
		return nil, nil, errors.New("event_id: required")
	}
	if len(ev.Deliveries) == 0 || len(ev.Deliveries) > MaxIngestDeliveries {
		return nil, nil, fmt.Errorf("deliveries: want 1 to %d (got %d)", MaxIngestDeliveries, len(ev.Deliveries))
	}
	ts := make([]IngestTarget, len(ev.Deliveries))
	for i, d := range ev.Deliveries {
		if d.ID == "" {
			return nil, nil, fmt.Errorf("deliveries[%d].id: required", i)
		}
		t, ok := in.byURL[d.URL]
		if !ok {
			return nil, nil, fmt.Errorf("deliveries[%d].url %q: not one of the dispatcher's partner endpoints", i, clipText(d.URL))
		}
		ts[i] = t
	}
	return &ev, ts, nil
}

// enqueue handles one POST /events and returns the status and a word on it.
func (in *Ingest) enqueue(r *http.Request) (int, string) {
	if r.ContentLength > MaxIngestBody {
		return http.StatusRequestEntityTooLarge, fmt.Sprintf("body over %d bytes", MaxIngestBody)
	}
	ev, ts, err := in.Decode(r.Body)
	if err != nil {
		return http.StatusUnprocessableEntity, err.Error()
	}
	now := in.clock.At(time.Now())
	created := ev.Created
	if created.IsZero() {
		created = now
	}
	ds := make([]queue.Delivery, len(ev.Deliveries))
	for i, d := range ev.Deliveries {
		ds[i] = queue.Delivery{ID: d.ID, Event: ev.EventID, Partner: ts[i].Endpoint, Cohort: ts[i].Partner,
			Payload: ev.Payload, Created: created}
	}
	ctx, cancel := context.WithTimeout(r.Context(), ingestStoreTimeout)
	defer cancel()
	in.mu.Lock()
	defer in.mu.Unlock()
	c, err := in.store.Counts(ctx, now)
	if err != nil {
		return http.StatusServiceUnavailable, "the queue cannot be read: " + err.Error()
	}
	if c.Ready+c.Delayed+c.Leased+int64(len(ds)) > in.capacity {
		return http.StatusServiceUnavailable, fmt.Sprintf("queue full (%d of %d waiting)", c.Ready+c.Delayed+c.Leased, in.capacity)
	}
	n, err := in.store.Enqueue(ctx, ds)
	if err != nil {
		return http.StatusServiceUnavailable, "enqueue: " + err.Error()
	}
	return http.StatusAccepted, fmt.Sprintf("%d deliveries enqueued, %d already known", n, len(ds)-n)
}
