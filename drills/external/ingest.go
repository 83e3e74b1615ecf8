package external

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"text/template"
	"time"

	"github.com/stormdrill/stormdrill/drills"
	"github.com/stormdrill/stormdrill/drills/children"
	"github.com/stormdrill/stormdrill/model/runtime/dispatcher"
)

// Ingest retry policy: a 429 or 503 (or no connection, as while the system
// restarts) is retried this many times, the delay doubling from
// ingestRetryBase up to ingestRetryCap, or the ingest's Retry-After up to
// ingestRetryCap. The time spent is counted as source held back.
const (
	ingestTries       = 12
	ingestRetryBase   = 25 * time.Millisecond
	ingestRetryCap    = 2 * time.Second
	ingestTimeout     = 30 * time.Second
	maxIngestResponse = 64 << 10
)

// Event is one event as the system under drill receives it: the default
// body of an HTTP ingest, a command's stdin, or one JSON line. Its wire
// format is the one `stormdrill dispatch --ingest` takes, declared once
// there: {"event_id", "created" (the scheduled arrival), "deliveries":
// [{"id", "url"}], "payload"}.
type Event = dispatcher.IngestEvent

// Delivery is one delivery of an event: its id (the idempotency key to
// send) and the partner URL to send it to.
type Delivery = dispatcher.IngestDelivery

// ingester hands one event to the system.
type ingester interface {
	// send delivers the event; held is the time spent waiting on a
	// system that held it back (429/503), retries included.
	send(ctx context.Context, ev *Event) (held time.Duration, err error)
}

// render turns an event into bytes: the template, or JSON.
type renderer struct{ tmpl *template.Template }

func newRenderer(s *drills.System) (*renderer, error) {
	if s.BodyTemplate == "" {
		return &renderer{}, nil
	}
	t, err := drills.ParseBodyTemplate(s.BodyTemplate)
	if err != nil {
		return nil, fmt.Errorf("system.body_template: %w", err)
	}
	return &renderer{tmpl: t}, nil
}

func (r *renderer) render(ev *Event) ([]byte, error) {
	if r.tmpl == nil {
		return json.Marshal(ev)
	}
	b, err := drills.RenderBody(r.tmpl, ev)
	if err != nil {
		return nil, fmt.Errorf("system.body_template: %w", err)
	}
	return b, nil
}

// retryIngest calls try until it succeeds, it fails for good, or the
// bounded policy is spent; it returns the time spent waiting.
func retryIngest(ctx context.Context, try func() (retry bool, after time.Duration, err error)) (time.Duration, error) {
	var held time.Duration
	delay := ingestRetryBase
	var last error
	for i := 0; i < ingestTries; i++ {
		retry, after, err := try()
		if err == nil {
			return held, nil
		}
		last = err
		if !retry {
			return held, err
		}
		wait := delay
		if after > 0 {
			wait = min(after, ingestRetryCap)
		}
		delay = min(2*delay, ingestRetryCap)
		t := time.NewTimer(wait)
		start := time.Now()
		select {
		case <-ctx.Done():
			t.Stop()
			return held + time.Since(start), ctx.Err()
		case <-t.C:
		}
		held += time.Since(start)
	}
	return held, fmt.Errorf("gave up after %d tries: %w", ingestTries, last)
}

type httpIngest struct {
	url     string
	headers [][2]string
	r       *renderer
	client  *http.Client
}

func (h *httpIngest) send(ctx context.Context, ev *Event) (time.Duration, error) {
	body, err := h.r.render(ev)
	if err != nil {
		return 0, err
	}
	return retryIngest(ctx, func() (bool, time.Duration, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.url, bytes.NewReader(body))
		if err != nil {
			return false, 0, err
		}
		req.Header.Set("Content-Type", "application/json")
		for _, kv := range h.headers {
			req.Header.Set(kv[0], kv[1])
		}
		resp, err := h.client.Do(req)
		if err != nil {
			return ctx.Err() == nil, 0, err // not listening (restarting): retry
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxIngestResponse))
		resp.Body.Close()
		switch {
		case resp.StatusCode >= 200 && resp.StatusCode < 300:
			return false, 0, nil
		case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable:
			after := time.Duration(0)
			if n, err := strconv.Atoi(strings.TrimSpace(resp.Header.Get("Retry-After"))); err == nil && n > 0 {
				after = time.Duration(n) * time.Second
			}
			return true, after, fmt.Errorf("ingest answered %d", resp.StatusCode)
		}
		return false, 0, fmt.Errorf("ingest answered %d", resp.StatusCode)
	})
}

type commandIngest struct {
	e    env
	dir  string
	argv []string
	r    *renderer
}

func (c *commandIngest) send(ctx context.Context, ev *Event) (time.Duration, error) {
	body, err := c.r.render(ev)
	if err != nil {
		return 0, err
	}
	return retryIngest(ctx, func() (bool, time.Duration, error) {
		cctx, cancel := context.WithTimeout(ctx, ingestTimeout)
		defer cancel()
		cmd := c.e.command(cctx, c.dir, c.argv)
		cmd.Stdin = bytes.NewReader(body)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &limitedBuffer{b: &out, n: maxIngestResponse}, &limitedBuffer{b: &out, n: maxIngestResponse}
		if err := children.Run(cmd); err != nil {
			return ctx.Err() == nil, 0, fmt.Errorf("ingest command: %v: %s", err, strings.TrimSpace(out.String()))
		}
		return false, 0, nil
	})
}

// jsonlIngest writes one line per event to the system's stdin or a file.
type jsonlIngest struct {
	mu  sync.Mutex
	w   func() io.Writer // the current writer (a restart makes a new stdin)
	r   *renderer
	err error
}

func (j *jsonlIngest) send(ctx context.Context, ev *Event) (time.Duration, error) {
	body, err := j.r.render(ev)
	if err != nil {
		return 0, err
	}
	body = bytes.ReplaceAll(bytes.TrimSpace(body), []byte("\n"), []byte(" "))
	body = append(body, '\n')
	return retryIngest(ctx, func() (bool, time.Duration, error) {
		j.mu.Lock()
		defer j.mu.Unlock()
		w := j.w()
		if w == nil {
			return true, 0, errors.New("the system is not running")
		}
		_, err := w.Write(body)
		return err != nil, 0, err
	})
}

type limitedBuffer struct {
	b *bytes.Buffer
	n int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := l.n - l.b.Len(); room > 0 {
		l.b.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func openJSONL(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
}
