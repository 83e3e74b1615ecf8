package dispatcher

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/stormdrill/stormdrill/model"
	"github.com/stormdrill/stormdrill/model/dispatchcore"
)

// Headers every attempt carries.
const (
	HeaderIdempotencyKey = "Idempotency-Key" // the delivery id
	HeaderAttempt        = "X-Attempt"       // the attempt's ordinal, 1, 2, …
)

type job struct {
	it      *dispatchcore.Item
	id      string // the delivery id: the Idempotency-Key
	url     string
	body    []byte
	started time.Time // drill clock
}

type result struct {
	it      *dispatchcore.Item
	o       model.Outcome
	errText string
	started time.Time
	ended   time.Time
}

// newHTTPClient returns a client with a bounded number of connections per
// host. Requests carry a body without GetBody, so the transport never
// resends one on its own after a connection error: every resend is a
// decision of the policy, and the partner's duplicate count means what it
// says. Every request also carries its own context deadline (the attempt
// timeout, or alertTimeout); timeout is the client-wide backstop.
func newHTTPClient(workers int, timeout time.Duration) *http.Client {
	tr := &http.Transport{
		Proxy:               nil, // loopback only, never through a proxy
		DialContext:         (&net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second}).DialContext,
		MaxConnsPerHost:     workers,
		MaxIdleConns:        workers,
		MaxIdleConnsPerHost: workers,
		IdleConnTimeout:     60 * time.Second,
		DisableCompression:  true,
	}
	return &http.Client{Transport: tr, Timeout: timeout, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// call makes one attempt.
func (ds *dispatcher) call(j job) result {
	res := result{it: j.it, started: j.started}
	ctx, cancel := context.WithTimeout(context.Background(), ds.wallTO)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, j.url, bytes.NewReader(j.body))
	if err != nil {
		res.o, res.errText = model.Outcome{Err: model.ErrRefused}, clip(err.Error())
		res.ended = ds.cfg.Clock.Now()
		return res
	}
	req.GetBody = nil // not rewindable: the transport cannot resend it
	req.Header.Set(HeaderIdempotencyKey, j.id)
	req.Header.Set(HeaderAttempt, strconv.Itoa(int(j.it.Attempts)))
	req.Header.Set("Content-Type", "application/json")
	resp, err := ds.client.Do(req)
	if err != nil {
		res.ended = ds.cfg.Clock.Now()
		res.o = model.Outcome{Err: classifyError(err)}
		res.errText = res.o.Err.String() + ": " + clip(err.Error())
		return res
	}
	_, err = io.Copy(io.Discard, io.LimitReader(resp.Body, MaxResponseBytes))
	resp.Body.Close()
	res.ended = ds.cfg.Clock.Now()
	if err != nil {
		// The answer is not whole (a body cut short, or one still coming
		// when the attempt timed out): whatever its status, the partner's
		// answer was not received, so the attempt failed like a broken
		// connection (or a timeout).
		res.o = model.Outcome{Err: classifyError(err)}
		res.errText = res.o.Err.String() + ": reading the HTTP " + strconv.Itoa(resp.StatusCode) + " body: " + clip(err.Error())
		return res
	}
	res.o = model.Outcome{Status: resp.StatusCode, RetryAfter: ds.retryAfter(resp.Header.Get("Retry-After"), time.Now())}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		res.errText = "HTTP " + strconv.Itoa(resp.StatusCode)
	}
	return res
}

// retryAfter turns a Retry-After off the wire, which is wall time (the
// partner cannot know this dispatcher's clock runs fast), into drill
// delta-seconds for the policy: delta-seconds are multiplied by the speed,
// an HTTP-date is measured from the wall clock now. At speed 1 it passes
// unchanged.
func (ds *dispatcher) retryAfter(v string, wallNow time.Time) string {
	v = strings.TrimSpace(v)
	if v == "" || ds.speed == 1 {
		return v
	}
	d, ok := model.ParseRetryAfter(v, wallNow)
	if !ok {
		return v // the policy refuses it again and counts it
	}
	secs := (ds.cfg.Clock.Drill(d) + time.Second - 1) / time.Second
	return strconv.FormatInt(int64(secs), 10)
}

// classifyError maps a transport error to what the policy knows.
func classifyError(err error) model.ErrKind {
	var ne net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded):
		return model.ErrTimeout
	case errors.As(err, &ne) && ne.Timeout():
		return model.ErrTimeout
	case errors.Is(err, syscall.ECONNREFUSED):
		return model.ErrRefused
	}
	// Resets, EOF on a connection the partner closed (before any answer,
	// or inside a body cut short), a malformed response, broken pipes and
	// anything else the transport reports: the connection failed.
	return model.ErrReset
}

func clip(s string) string {
	if len(s) > maxErrorText {
		return s[:maxErrorText]
	}
	return s
}
