package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/riverqueue/river/rivertype"

	"github.com/stormdrill/stormdrill/internal/testsuite"
	"github.com/stormdrill/stormdrill/model/runtime/queue/queuetest"
)

// On PostgreSQL (--db postgres://..., as in the README's compose file) the
// sender migrates River's schema, takes an event on its ingest and
// delivers it with River, the delivery id as Idempotency-Key and River's
// attempt as X-Attempt; a 503 is retried by River. Loopback only.
func TestRiverSenderOnPostgres(t *testing.T) {
	dsn := queuetest.PostgresSchema(t, "riversender")
	var mu sync.Mutex
	var got []string
	partner := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Header.Get("Idempotency-Key")+"#"+r.Header.Get("X-Attempt"))
		first := len(got) == 1
		mu.Unlock()
		if first {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer partner.Close()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client, db, err := startRiver(ctx, dsn, riverOptions{workers: 2, maxAttempts: 3, timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := client.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() {
		stop, c := context.WithTimeout(context.Background(), 20*time.Second)
		defer c()
		_ = client.Stop(stop)
	}()
	ingestSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { ingest(w, r, client) }))
	defer ingestSrv.Close()
	ev, _ := json.Marshal(map[string]any{"event_id": "evt-1", "deliveries": []map[string]string{{"id": "evt-1:acme-0", "url": partner.URL + "/p/acme/0"}}})
	resp, err := http.Post(ingestSrv.URL, "application/json", bytes.NewReader(ev))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("ingest: %d, want 202", resp.StatusCode)
	}
	// River's first retry waits 1 s ± 10 %; the deadline only bounds a hang.
	testsuite.Poll(60*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) >= 2
	})
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 2 || got[0] != "evt-1:acme-0#1" || got[1] != "evt-1:acme-0#2" {
		t.Fatalf("partner saw %v, want evt-1:acme-0 attempts 1 then 2", got)
	}
	// The job is River's, in PostgreSQL, and River marks it completed.
	var state string
	testsuite.Poll(60*time.Second, func() bool {
		if err := db.QueryRowContext(ctx, `SELECT state FROM river_job WHERE kind = $1`, DeliveryArgs{}.Kind()).Scan(&state); err != nil {
			t.Fatal(err)
		}
		return state == string(rivertype.JobStateCompleted)
	})
	if state != string(rivertype.JobStateCompleted) {
		t.Errorf("River's job is %q, want completed", state)
	}
}
