// Command river-sender is a small webhook sender built on River
// (github.com/riverqueue/river) with its SQLite driver, or on PostgreSQL
// when --db is a postgres:// URL (River's database/sql driver): a third-party
// delivery pipeline whose retry logic is River's, not stormdrill's. The test
// suite and drills/external-river.toml drill it from outside with
// `mode = "external"` and `stormdrill verify`.
//
// It takes events over HTTP (POST /events, the body stormdrill's external
// mode sends: an event id, its deliveries with ids and target URLs, and a
// payload), inserts one River job per delivery, and POSTs each delivery to
// its URL with the delivery id as Idempotency-Key and River's attempt number
// as X-Attempt. Failures go through River's default retry policy (attempt⁴
// seconds, ±10%) up to --max-attempts. A 4xx other than 408 and 429 cancels
// the job (permanent); a 429 with Retry-After snoozes it that long. River's
// discarded jobs (attempts exhausted) and cancelled ones are the dead-letter
// queue: each is POSTed to --dead-letter-url as {"id","reason","attempts"},
// and an alert goes to --alert-url, both with "Authorization: Bearer
// $STORMDRILL_PARTNER_TOKEN" when that is set (a partner server reachable
// from other machines requires its token there).
//
// --defect exists for the test suite only: it breaks the sender in one
// named way so that `stormdrill verify` can be shown to catch it.
package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverdatabasesql"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/riverqueue/river/rivertype"
	"github.com/stormdrill/stormdrill/fakepartner"
	_ "modernc.org/sqlite"
)

// Limits of the sender.
const (
	maxEventBytes    = 1 << 20  // one POST /events body
	maxDeliveries    = 10_000   // deliveries in one event
	maxResponseBytes = 64 << 10 // read of a partner's answer
	maxRetryAfter    = time.Hour
)

// Defects the test suite can switch on.
const (
	defectRetry422         = "retry-422"
	defectIgnoreRetryAfter = "ignore-retry-after"
	defectNewKey           = "new-key-per-attempt"
)

// DeliveryArgs is one River job: one delivery of one event.
type DeliveryArgs struct {
	ID      string          `json:"id"`
	Event   string          `json:"event"`
	URL     string          `json:"url"`
	Payload json.RawMessage `json:"payload,omitempty"`
}

// Kind is River's job kind.
func (DeliveryArgs) Kind() string { return "webhook_delivery" }

type deliveryWorker struct {
	river.WorkerDefaults[DeliveryArgs]
	client *http.Client
	defect string
}

// permanentError is a 4xx answer that must not be retried.
type permanentError struct{ status int }

func (e permanentError) Error() string { return "permanent: HTTP " + strconv.Itoa(e.status) }

func (w *deliveryWorker) Work(ctx context.Context, job *river.Job[DeliveryArgs]) error {
	key := job.Args.ID
	if w.defect == defectNewKey {
		key = fmt.Sprintf("%s#%d", job.Args.ID, job.Attempt)
	}
	body := []byte(job.Args.Payload)
	if len(body) == 0 {
		body = []byte(`{}`)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, job.Args.URL, bytes.NewReader(body))
	if err != nil {
		return river.JobCancel(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	req.Header.Set("X-Attempt", strconv.Itoa(job.Attempt))
	resp, err := w.client.Do(req)
	if err != nil {
		return err // River's retry policy decides when
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxResponseBytes))
	resp.Body.Close()
	switch s := resp.StatusCode; {
	case s >= 200 && s < 300:
		return nil
	case s == http.StatusTooManyRequests:
		if d, ok := retryAfter(resp.Header.Get("Retry-After"), time.Now()); ok && w.defect != defectIgnoreRetryAfter {
			return river.JobSnooze(d)
		}
		return fmt.Errorf("HTTP %d", s)
	case s >= 400 && s < 500 && s != http.StatusRequestTimeout:
		if w.defect == defectRetry422 {
			return fmt.Errorf("HTTP %d", s)
		}
		return river.JobCancel(permanentError{s})
	default:
		return fmt.Errorf("HTTP %d", s)
	}
}

// retryAfter reads delta-seconds or an HTTP-date; absurd values are ignored.
func retryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if n, err := strconv.Atoi(v); err == nil {
		if n < 0 || time.Duration(n)*time.Second > maxRetryAfter {
			return 0, false
		}
		return time.Duration(n) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		d := t.Sub(now)
		if d < 0 || d > maxRetryAfter {
			return 0, false
		}
		return d, true
	}
	return 0, false
}

// event is the body of POST /events.
type event struct {
	EventID    string `json:"event_id"`
	Deliveries []struct {
		ID  string `json:"id"`
		URL string `json:"url"`
	} `json:"deliveries"`
	Payload json.RawMessage `json:"payload"`
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "river-sender:", err)
		os.Exit(1)
	}
}

func run() error {
	// The harness empties STORMDRILL_STATE_DIR before each run, so a run
	// directory used again does not hand River the last run's jobs.
	runDir := envOr("STORMDRILL_STATE_DIR", os.Getenv("STORMDRILL_RUN_DIR"))
	defDB := ""
	if runDir != "" {
		defDB = filepath.Join(runDir, "river.db")
	}
	listen := flag.String("listen", envOr("STORMDRILL_INGEST_ADDR", "127.0.0.1:8090"), "ingest address (POST /events)")
	dbPath := flag.String("db", envOr("RIVER_SENDER_DB", defDB), "River's queue: an SQLite file, or a postgres://USER:PASS@HOST:PORT/DB URL (default $RIVER_SENDER_DB, else $STORMDRILL_STATE_DIR/river.db, else $STORMDRILL_RUN_DIR/river.db)")
	deadURL := flag.String("dead-letter-url", os.Getenv("STORMDRILL_DEAD_LETTER_URL"), "POST each dead letter here; empty: none")
	alertURL := flag.String("alert-url", os.Getenv("STORMDRILL_ALERT_URL"), "POST an alert per dead letter here; empty: none")
	maxAttempts := flag.Int("max-attempts", river.MaxAttemptsDefault, "River's max attempts per job")
	workers := flag.Int("workers", 100, "River workers")
	timeout := flag.Duration("timeout", 10*time.Second, "timeout of one delivery attempt")
	defect := flag.String("defect", "", "test suite only: "+defectRetry422+", "+defectIgnoreRetryAfter+" or "+defectNewKey)
	flag.Parse()
	switch *defect {
	case "", defectRetry422, defectIgnoreRetryAfter, defectNewKey:
	default:
		return fmt.Errorf("--defect %q: unknown", *defect)
	}
	if *dbPath == "" {
		return errors.New("--db is required (or set STORMDRILL_RUN_DIR)")
	}
	if *maxAttempts < 1 || *workers < 1 || *timeout <= 0 {
		return errors.New("--max-attempts, --workers and --timeout must be positive")
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	client, db, err := startRiver(ctx, *dbPath, riverOptions{workers: *workers, maxAttempts: *maxAttempts, timeout: *timeout, defect: *defect})
	if err != nil {
		return err
	}
	defer db.Close()
	ended, cancelSub := client.SubscribeConfig(&river.SubscribeConfig{
		Kinds: []river.EventKind{river.EventKindJobFailed, river.EventKindJobCancelled}, ChanSize: 10_000})
	defer cancelSub()
	dlq := &deadLetters{url: *deadURL, alertURL: *alertURL, token: os.Getenv("STORMDRILL_PARTNER_TOKEN"), client: &http.Client{Timeout: 5 * time.Second}}
	dlqDone := make(chan struct{})
	go func() { defer close(dlqDone); dlq.forward(ended) }()

	if err := client.Start(ctx); err != nil {
		return err
	}
	l, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok\n") })
	mux.HandleFunc("POST /events", func(w http.ResponseWriter, r *http.Request) { ingest(w, r, client) })
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second}
	go func() { _ = srv.Serve(l) }()
	fmt.Printf("river-sender: ready on %s\n", l.Addr())

	<-ctx.Done()
	shutdown, cancel := context.WithTimeout(context.Background(), *timeout+5*time.Second)
	defer cancel()
	_ = srv.Shutdown(shutdown)
	err = client.Stop(shutdown)
	cancelSub()
	<-dlqDone
	return err
}

// riverOptions are the sender's settings of River.
type riverOptions struct {
	workers, maxAttempts int
	timeout              time.Duration
	defect               string
}

// startRiver opens River's queue and migrates it: a postgres:// URL is
// River's own home, PostgreSQL (through database/sql and pgx); anything else
// is an SQLite file. The client is not started.
func startRiver(ctx context.Context, dbPath string, o riverOptions) (*river.Client[*sql.Tx], *sql.DB, error) {
	var db *sql.DB
	var driver riverdriver.Driver[*sql.Tx]
	var err error
	if strings.HasPrefix(dbPath, "postgres://") || strings.HasPrefix(dbPath, "postgresql://") {
		if db, err = sql.Open("pgx", dbPath); err != nil {
			return nil, nil, err
		}
		db.SetMaxOpenConns(o.workers + 5)
		driver = riverdatabasesql.New(db)
	} else {
		if db, err = sql.Open("sqlite", "file:"+dbPath+"?_pragma=journal_mode(WAL)&_pragma=busy_timeout(5000)"); err != nil {
			return nil, nil, err
		}
		// River's SQLite driver works best on one connection (see riversqlite).
		db.SetMaxOpenConns(1)
		driver = riversqlite.New(db)
	}
	migrator, err := rivermigrate.New(driver, nil)
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	if _, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		db.Close()
		return nil, nil, fmt.Errorf("migrating River's schema: %w", err)
	}
	workersReg := river.NewWorkers()
	river.AddWorker(workersReg, &deliveryWorker{client: &http.Client{Timeout: o.timeout}, defect: o.defect})
	client, err := river.NewClient(driver, &river.Config{
		Queues: map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: o.workers}},
		// Neither driver here has LISTEN/NOTIFY: River polls. Polling often
		// keeps the first attempt prompt; it does not touch the retry
		// schedule.
		FetchCooldown:     20 * time.Millisecond,
		FetchPollInterval: 50 * time.Millisecond,
		MaxAttempts:       o.maxAttempts,
		JobTimeout:        o.timeout + 5*time.Second,
		Workers:           workersReg,
		Logger:            slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	return client, db, nil
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// ingest inserts one River job per delivery of the event, all in one call.
func ingest(w http.ResponseWriter, r *http.Request, client *river.Client[*sql.Tx]) {
	var ev event
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxEventBytes))
	if err := dec.Decode(&ev); err != nil {
		http.Error(w, "bad event: "+err.Error(), http.StatusBadRequest)
		return
	}
	if len(ev.Deliveries) == 0 || len(ev.Deliveries) > maxDeliveries {
		http.Error(w, fmt.Sprintf("an event needs 1 to %d deliveries", maxDeliveries), http.StatusBadRequest)
		return
	}
	params := make([]river.InsertManyParams, 0, len(ev.Deliveries))
	for _, d := range ev.Deliveries {
		if d.ID == "" || d.URL == "" {
			http.Error(w, "every delivery needs an id and a url", http.StatusBadRequest)
			return
		}
		params = append(params, river.InsertManyParams{Args: DeliveryArgs{ID: d.ID, Event: ev.EventID, URL: d.URL, Payload: ev.Payload}})
	}
	if _, err := client.InsertMany(r.Context(), params); err != nil {
		http.Error(w, "queue: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	w.WriteHeader(http.StatusAccepted)
}

// deadLetters reports River's discarded and cancelled jobs.
type deadLetters struct {
	url, alertURL string
	token         string // the partner server's token, when it requires one
	client        *http.Client
}

func (d *deadLetters) forward(events <-chan *river.Event) {
	for ev := range events {
		if ev == nil || ev.Job == nil {
			continue
		}
		var reason string
		switch ev.Job.State {
		case rivertype.JobStateDiscarded:
			reason = "max-attempts"
		case rivertype.JobStateCancelled:
			reason = "permanent"
		default:
			continue // retryable: River will try again
		}
		var args DeliveryArgs
		if err := json.Unmarshal(ev.Job.EncodedArgs, &args); err != nil {
			continue
		}
		d.post(d.url, map[string]any{"id": args.ID, "reason": reason, "attempts": ev.Job.Attempt})
		d.post(d.alertURL, map[string]any{"count": 1, "reason": reason, "partner": partnerOf(args.URL)})
	}
}

func (d *deadLetters) post(url string, v any) {
	if url == "" {
		return
	}
	if err := fakepartner.Report(d.client, url, d.token, v); err != nil {
		fmt.Fprintln(os.Stderr, "river-sender: reporting a dead letter:", err)
	}
}

// partnerOf is the last two path elements of a delivery URL, for alerts.
func partnerOf(u string) string {
	parts := strings.Split(strings.TrimRight(u, "/"), "/")
	if len(parts) >= 2 {
		return parts[len(parts)-2]
	}
	return u
}
