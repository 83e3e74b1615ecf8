package live

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/stormdrill/stormdrill/drills"
	"github.com/stormdrill/stormdrill/fakepartner"
	"github.com/stormdrill/stormdrill/model"
	"github.com/stormdrill/stormdrill/model/dispatch"
	"github.com/stormdrill/stormdrill/model/queue"
	"github.com/stormdrill/stormdrill/model/sim"
)

// Dispatcher limits and defaults.
const (
	// MaxResponseBytes is the most of a partner's response body read.
	MaxResponseBytes = 64 << 10
	// MaxHeld bounds the deliveries one dispatcher keeps in memory (due,
	// delayed or in flight), whatever queue_capacity says.
	MaxHeld = 200_000
	// MaxPendingCompletions bounds completions waiting for the store; past
	// it the dispatcher gives up (the store is the truth: leases expire).
	MaxPendingCompletions = 100_000
	// DefaultClaimPoll is how often (wall) an idle dispatcher asks the store
	// for newly due deliveries.
	DefaultClaimPoll = 2 * time.Millisecond
	// alertTimeout bounds one alert POST.
	alertTimeout = 2 * time.Second
	// storeTimeout bounds one store call.
	storeTimeout = 30 * time.Second
	// maxErrorText bounds the last_error text kept per delivery.
	maxErrorText = 200
	// maxAlertKeys bounds the (partner cohort, reason) pairs aggregated
	// between two alert batches; cohorts × reasons is far below it.
	maxAlertKeys = 1024
	// dialTimeout bounds connecting to a partner or the alert sink.
	dialTimeout = 5 * time.Second
	// clientSlack is added to the longest per-request timeout to form the
	// HTTP client's overall timeout, a backstop behind the contexts.
	clientSlack = time.Second
	// MaxRenewBatch bounds the lease renewals one store batch carries; a
	// dispatcher holding more renews the rest in the next batches.
	MaxRenewBatch = 10_000
)

// Event line kinds the dispatcher writes to DispatcherConfig.Events, one per
// line, tab-separated; the live runner reads them.
const (
	EventReady      = "ready"      // ready <owner>
	EventTransition = "transition" // transition <partner> <drill unix ns> <from> <to>
	EventExit       = "exit"       // exit <attempts> <retry_after_ignored> <stale>
)

// DispatcherConfig configures RunDispatcher.
type DispatcherConfig struct {
	Drill       *drills.Drill
	Store       queue.Store
	PartnersURL string // base URL of the partner server, "http://127.0.0.1:PORT"; loopback only
	Owner       string // lease owner; must be unique among live dispatchers
	// AlertURL receives DLQ alerts (loopback only; "" sends none): one
	// JSON Alert per (partner cohort, reason) with dead letters since the
	// last batch, one batch at most every dispatcher.alert_interval of
	// drill time. The only exception is the batch sent when the
	// dispatcher stops, which carries what is left rather than drop it.
	AlertURL string
	Clock    Clock // drill time; every time in the store is on it
	// ClaimPoll is how often an idle loop claims (wall); default
	// DefaultClaimPoll.
	ClaimPoll time.Duration
	// Events receives event lines (ready, breaker transitions, exit); nil
	// discards them.
	Events io.Writer
	// Log receives diagnostics; nil discards them.
	Log io.Writer
}

// DispatchStats is what one dispatcher run did.
type DispatchStats struct {
	Claimed, Attempts, Acked, Rescheduled, DeadLettered int64
	Stale                                               int64 // completions the store refused (lease taken over)
	RetryAfterIgnored                                   int64
	Released                                            int   // leases given back at the end
	Renewed                                             int64 // lease renewals sent for deliveries held in memory
	AlertsSent                                          int64
}

type job struct {
	it      *dispatch.Item
	url     string
	body    []byte
	started time.Time // drill clock
}

type result struct {
	it      *dispatch.Item
	o       model.Outcome
	errText string
	started time.Time
	ended   time.Time
}

// heldRow is a delivery this dispatcher has claimed and keeps in memory,
// with what its row holds once the queued transitions are stored: a lease
// renewal rewrites exactly these values (KindHold), so it changes nothing
// but lease_until, even while an attempt is in flight whose outcome is
// not stored yet.
type heldRow struct {
	attempt    int
	runAt      time.Time
	prevDelay  time.Duration
	lastErr    string
	updated    time.Time
	leaseUntil time.Time
}

type alertKey struct{ partner, reason string }

type alertAgg struct {
	count   int
	oldestC int64 // created (drill ns) of the oldest delivery
}

// Alert is the JSON body of one DLQ alert, as the fake partner's sink reads it.
type Alert struct {
	Count   int     `json:"count"`
	Reason  string  `json:"reason"`
	Partner string  `json:"partner"`
	OldestS float64 `json:"oldest_s"`
}

type dispatcher struct {
	cfg      DispatcherConfig
	d        *drills.Drill
	subs     []drills.LiveSubscriber
	cohorts  []string
	byName   map[string]int32
	core     *dispatch.Core
	rng      *rand.Rand
	held     map[string]*heldRow
	holdCap  int
	lease    time.Duration
	wallTO   time.Duration
	pending  []queue.Completion
	client   *http.Client
	events   io.Writer
	eventsMu sync.Mutex
	logw     io.Writer
	stats    DispatchStats
	alerts   map[alertKey]*alertAgg
	alertCh  chan []Alert
	// alertBusy is set while a batch waits in alertCh or is being posted;
	// alertReadyNS (wall unix ns) is when the poster finished the last
	// batch plus alert_interval. No new batch is handed over before both
	// allow it, so however slow a post is, two batches arrive at least
	// alert_interval apart.
	alertBusy    atomic.Bool
	alertReadyNS atomic.Int64
	alertEvery   time.Duration // alert_interval in wall time
	speed        float64
}

// RunDispatcher runs the dispatcher until ctx is cancelled, then stops
// claiming, lets the attempts in flight finish, persists every transition,
// gives its leases back and returns. A process killed instead loses
// nothing: what it did not persist is redone once its leases expire.
//
// Attempt ordinals: the store counts attempts whose outcome was recorded.
// An attempt lost in a kill is not counted, so the next claimant sends the
// same ordinal again (the partner sees X-Attempt repeat); the attempt
// history never holds two rows with one ordinal, and a kill does not eat
// into a delivery's max_attempts.
func RunDispatcher(ctx context.Context, cfg DispatcherConfig) (DispatchStats, error) {
	ds, err := newDispatcher(cfg)
	if err != nil {
		return DispatchStats{}, err
	}
	return ds.run(ctx)
}

func newDispatcher(cfg DispatcherConfig) (*dispatcher, error) {
	d := cfg.Drill
	if d == nil || cfg.Store == nil {
		return nil, errors.New("dispatch: a drill and a store are required")
	}
	if cfg.Owner == "" {
		return nil, errors.New("dispatch: an owner name is required")
	}
	var err error
	if cfg.PartnersURL, err = LoopbackURL(cfg.PartnersURL); err != nil {
		return nil, fmt.Errorf("dispatch: partners URL: %w", err)
	}
	cfg.PartnersURL = strings.TrimRight(cfg.PartnersURL, "/")
	if cfg.AlertURL != "" {
		if cfg.AlertURL, err = LoopbackURL(cfg.AlertURL); err != nil {
			return nil, fmt.Errorf("dispatch: alert URL: %w", err)
		}
	}
	if cfg.ClaimPoll <= 0 {
		cfg.ClaimPoll = DefaultClaimPoll
	}
	if cfg.Clock.Start.IsZero() {
		cfg.Clock.Start = time.Now()
	}
	pol, err := d.ModelPolicy()
	if err != nil {
		return nil, err
	}
	specs, err := d.PartnerSpecs()
	if err != nil {
		return nil, err
	}
	ds := &dispatcher{
		cfg: cfg, d: d, byName: map[string]int32{}, held: map[string]*heldRow{},
		rng:    sim.NewRand(d.Seed, "dispatcher/"+cfg.Owner),
		lease:  d.Dispatcher.LeaseTimeout.D,
		wallTO: cfg.Clock.Wall(d.Dispatcher.AttemptTimeout.D),
		events: cfg.Events, logw: cfg.Log, alerts: map[alertKey]*alertAgg{},
		alertCh: make(chan []Alert, 1), speed: cfg.Clock.speed(),
		alertEvery: cfg.Clock.Wall(d.Dispatcher.AlertInterval.D),
	}
	if ds.events == nil {
		ds.events = io.Discard
	}
	if ds.logw == nil {
		ds.logw = io.Discard
	}
	ds.holdCap = min(max(d.Dispatcher.QueueCapacity, d.Dispatcher.ClaimBatch), MaxHeld)
	ds.subs, _ = drills.Subscribers(d, specs)
	for _, sp := range specs {
		ds.cohorts = append(ds.cohorts, sp.Name)
	}
	var bs model.BreakerSettings
	if d.BreakerEnabled() {
		if bs, err = d.ModelBreakerSettings(); err != nil {
			return nil, err
		}
	}
	var global *model.Budget
	if d.BudgetEnabled() && d.Policy.Budget.Scope == "global" {
		global = model.NewBudget(d.Policy.Budget.MaxTokens, d.Policy.Budget.TokenRatio)
	}
	pcs := make([]dispatch.PartnerConfig, len(ds.subs))
	for i, s := range ds.subs {
		ds.byName[s.Name] = int32(i)
		pc := dispatch.PartnerConfig{Name: s.Name, Policy: pol, Concurrency: d.Dispatcher.PerPartnerConcurrency}
		if d.BreakerEnabled() {
			pc.Breaker = model.NewBreaker(bs)
			name := s.Name
			pc.Breaker.OnTransition = func(tr model.Transition) {
				ds.event(EventTransition, name, strconv.FormatInt(tr.At.UnixNano(), 10), tr.From.String(), tr.To.String())
			}
		}
		if d.BudgetEnabled() {
			pc.Budget = global
			if pc.Budget == nil {
				pc.Budget = model.NewBudget(d.Policy.Budget.MaxTokens, d.Policy.Budget.TokenRatio)
			}
		}
		pcs[i] = pc
	}
	ds.core, err = dispatch.New(dispatch.Config{Workers: d.Dispatcher.Workers, Partners: pcs})
	if err != nil {
		return nil, err
	}
	ds.client = newHTTPClient(d.Dispatcher.Workers, max(ds.wallTO, alertTimeout)+clientSlack)
	return ds, nil
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

// LoopbackURL checks that s is an http URL on a literal loopback address
// (127.0.0.0/8 or ::1; "localhost" is read as 127.0.0.1 rather than
// resolved, since a hosts file could point it elsewhere) and returns it
// with localhost replaced. Live drills never leave the machine.
func LoopbackURL(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil {
		return "", fmt.Errorf("%q: %v", s, err)
	}
	if u.Scheme != "http" || u.Host == "" {
		return "", fmt.Errorf("%q: want http://127.0.0.1:PORT", s)
	}
	if u.User != nil {
		return "", fmt.Errorf("%q: user information is not allowed", s)
	}
	host := u.Hostname()
	if strings.EqualFold(host, "localhost") {
		host = "127.0.0.1"
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return "", fmt.Errorf("%q is not on a loopback address; use 127.0.0.1 or [::1]", s)
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return "", fmt.Errorf("%q: bad port %q", s, p)
		}
	}
	if u.Port() != "" {
		u.Host = net.JoinHostPort(ip.String(), u.Port())
	} else if ip.To4() == nil {
		u.Host = "[" + ip.String() + "]"
	} else {
		u.Host = ip.String()
	}
	return u.String(), nil
}

func (ds *dispatcher) event(fields ...string) {
	ds.eventsMu.Lock()
	defer ds.eventsMu.Unlock()
	fmt.Fprintln(ds.events, strings.Join(fields, "\t"))
}

func (ds *dispatcher) logf(format string, args ...any) {
	fmt.Fprintf(ds.logw, "dispatch %s: "+format+"\n", append([]any{ds.cfg.Owner}, args...)...)
}

func (ds *dispatcher) run(ctx context.Context) (DispatchStats, error) {
	workers := ds.d.Dispatcher.Workers
	jobs := make(chan job, workers)
	results := make(chan result, workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				results <- ds.call(j)
			}
		}()
	}
	var alertWG sync.WaitGroup
	if ds.cfg.AlertURL != "" {
		alertWG.Add(1)
		go func() {
			defer alertWG.Done()
			for batch := range ds.alertCh {
				ds.postAlerts(batch)
				ds.alertReadyNS.Store(time.Now().Add(ds.alertEvery).UnixNano())
				ds.alertBusy.Store(false)
			}
		}()
	}
	err := ds.loop(ctx, jobs, results)
	close(jobs)
	wg.Wait()
	// Everything still pending was handled by loop; send what is left to
	// alert, then stop the alert poster.
	ds.flushAlerts(true)
	close(ds.alertCh)
	alertWG.Wait()
	ds.client.CloseIdleConnections()
	ds.event(EventExit, strconv.FormatInt(ds.stats.Attempts, 10), strconv.FormatInt(ds.stats.RetryAfterIgnored, 10), strconv.FormatInt(ds.stats.Stale, 10))
	return ds.stats, err
}

func (ds *dispatcher) loop(ctx context.Context, jobs chan<- job, results <-chan result) error {
	poll := ds.cfg.ClaimPoll
	alertEvery := ds.alertEvery
	nextClaim := time.Now()
	nextAlert := time.Now().Add(alertEvery)
	// Leases of held deliveries are renewed every third of a lease, each
	// once less than two thirds of it is left: a delivery kept waiting
	// for a worker, a partner slot or a breaker never outlives its lease,
	// so no other dispatcher can claim and send it meanwhile.
	renewEvery := max(ds.cfg.Clock.Wall(ds.lease/3), time.Millisecond)
	nextRenew := time.Now().Add(renewEvery)
	timer := time.NewTimer(poll)
	defer timer.Stop()
	stopping := false
	ds.event(EventReady, ds.cfg.Owner)
	for {
		wallNow := time.Now()
		now := ds.cfg.Clock.At(wallNow)
		// Persist before claiming: a delivery that just ended has left
		// held, and if its lease had run out a claim before the flush
		// would hand it back to us as new.
		if err := ds.flush(); err != nil {
			return err
		}
		if !stopping && !wallNow.Before(nextClaim) && len(ds.held) < ds.holdCap {
			full, err := ds.claim(now)
			if err != nil {
				ds.logf("claim: %v", err)
				nextClaim = wallNow.Add(50 * time.Millisecond) // the store is busy or gone; back off
			} else if full {
				nextClaim = wallNow
			} else {
				nextClaim = wallNow.Add(poll)
			}
		}
		if !wallNow.Before(nextRenew) {
			nextRenew = wallNow.Add(renewEvery)
			if ds.renew(now) {
				nextRenew = wallNow // more to renew: the next batch right after this one
			}
		}
		if !stopping {
			ds.pump(now, jobs)
		}
		if err := ds.flush(); err != nil {
			return err
		}
		if !wallNow.Before(nextAlert) {
			ds.flushAlerts(false)
			// The next try: one interval on, or when the poster allows it
			// if that is later (a slow post delays the next batch).
			nextAlert = wallNow.Add(alertEvery)
			if ready := time.Unix(0, ds.alertReadyNS.Load()); ready.After(nextAlert) {
				nextAlert = ready
			}
		}
		if stopping && ds.core.InFlight() == 0 {
			break
		}
		// Sleep until the next thing to do: a claim, a wake-up of the core,
		// an alert, or a result.
		wait := min(time.Until(nextAlert), time.Until(nextRenew))
		if !stopping {
			wait = min(wait, time.Until(nextClaim))
			if w, ok := ds.core.NextWake(); ok {
				wait = min(wait, ds.cfg.Clock.Wall(w.Sub(ds.cfg.Clock.Now())))
			}
		}
		wait = max(wait, 0)
		resetTimer(timer, wait)
		select {
		case r := <-results:
			ds.complete(r)
			for more := true; more; { // take whatever else has arrived: one store batch
				select {
				case r := <-results:
					ds.complete(r)
				default:
					more = false
				}
			}
		case <-timer.C:
		case <-ctx.Done():
			if !stopping {
				stopping = true
				ds.logf("stopping: %d attempts in flight", ds.core.InFlight())
			}
			ctx = context.Background() // Done fires once; keep the select quiet
		}
	}
	if err := ds.flush(); err != nil {
		return err
	}
	sctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	n, err := ds.cfg.Store.Release(sctx, ds.cfg.Owner)
	ds.stats.Released = n
	if err != nil {
		return fmt.Errorf("dispatch: releasing leases: %w", err)
	}
	return nil
}

func resetTimer(t *time.Timer, d time.Duration) {
	t.Stop()
	select {
	case <-t.C:
	default:
	}
	t.Reset(d)
}

// claim leases due deliveries and hands the new ones to the core. full
// reports that the store may have more due right now.
func (ds *dispatcher) claim(now time.Time) (full bool, err error) {
	limit := min(ds.d.Dispatcher.ClaimBatch, ds.holdCap-len(ds.held))
	if limit <= 0 {
		return false, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	rows, err := ds.cfg.Store.Claim(ctx, ds.cfg.Owner, now, ds.lease, limit)
	if err != nil {
		return false, err
	}
	fresh := 0
	for i := range rows {
		r := &rows[i]
		if h, ok := ds.held[r.ID]; ok {
			// Already ours (its lease had run out while we kept it): the
			// claim renewed the lease and nothing else changes.
			h.leaseUntil, h.updated = r.LeaseUntil, now
			continue
		}
		si, ok := ds.byName[r.Partner]
		if !ok {
			ds.pending = append(ds.pending, queue.Completion{ID: r.ID, Owner: ds.cfg.Owner, Kind: queue.KindDeadLetter,
				At: now, Attempt: r.Attempt, Reason: string(model.ReasonPermanent), LastError: "no partner " + clip(r.Partner) + " in this drill"})
			continue
		}
		sub := ds.subs[si]
		it := &dispatch.Item{
			ID: r.ID, Partner: si, Attempts: r.Attempt, FirstSeen: r.Created.UnixNano(), RunAt: r.RunAt.UnixNano(),
			PrevDelay: r.PrevDelay, Cohort: int32(sub.Cohort), Member: int32(sub.Member), Payload: r.Payload, Slot: -1,
		}
		if r.Created.IsZero() {
			it.FirstSeen = r.RunAt.UnixNano()
		}
		ds.held[r.ID] = &heldRow{attempt: r.Attempt, runAt: r.RunAt, prevDelay: r.PrevDelay,
			lastErr: r.LastError, updated: now, leaseUntil: r.LeaseUntil}
		ds.core.Requeue(it, now)
		fresh++
	}
	ds.stats.Claimed += int64(fresh)
	return len(rows) == limit, nil
}

// renew queues a lease renewal (KindHold with the row's stored values and
// a lease from now) for every held delivery with less than two thirds of
// a lease left, at most MaxRenewBatch; more reports that some were left
// for the next batch. The renewals go to the store with the next flush,
// after the transitions queued before them.
func (ds *dispatcher) renew(now time.Time) (more bool) {
	if len(ds.pending) > MaxPendingCompletions/2 {
		return false // the store is not taking writes; renewals would only pile up
	}
	horizon := now.Add(ds.lease - ds.lease/3)
	until := now.Add(ds.lease)
	n := 0
	for id, h := range ds.held {
		if h.leaseUntil.After(horizon) {
			continue
		}
		if n >= MaxRenewBatch {
			more = true
			break
		}
		ds.pending = append(ds.pending, queue.Completion{ID: id, Owner: ds.cfg.Owner, Kind: queue.KindHold, At: h.updated,
			Attempt: h.attempt, RunAt: h.runAt, PrevDelay: h.prevDelay, LastError: h.lastErr, LeaseUntil: until})
		h.leaseUntil = until
		n++
	}
	ds.stats.Renewed += int64(n)
	return more
}

// pump starts every attempt the core wants started now.
func (ds *dispatcher) pump(now time.Time, jobs chan<- job) {
	for {
		it, verdict, reason := ds.core.Next(now)
		if it == nil {
			return
		}
		if verdict == dispatch.DeadLetter {
			ds.deadLetter(it, now, reason, "", 0, false, time.Time{})
			continue
		}
		sub := ds.subs[it.Partner]
		body := it.Payload
		if len(body) == 0 {
			// A body is always sent: an empty POST with an Idempotency-Key
			// is one Go's transport would replay by itself.
			body = []byte(`{"id":` + strconv.Quote(it.ID) + `}`)
		}
		ds.stats.Attempts++
		// The core keeps attempts in flight at most at workers, which is the
		// channel's capacity plus what the workers hold: this never blocks.
		jobs <- job{it: it, url: ds.cfg.PartnersURL + "/p/" + ds.cohorts[sub.Cohort] + "/" + strconv.Itoa(sub.Member), body: body, started: now}
	}
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
	req.Header.Set(fakepartner.HeaderIdempotencyKey, j.it.ID)
	req.Header.Set(fakepartner.HeaderAttempt, strconv.Itoa(j.it.Attempts))
	req.Header.Set("Content-Type", "application/json")
	resp, err := ds.client.Do(req)
	if err != nil {
		res.ended = ds.cfg.Clock.Now()
		res.o = model.Outcome{Err: classifyError(err)}
		res.errText = res.o.Err.String() + ": " + clip(err.Error())
		return res
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, MaxResponseBytes))
	resp.Body.Close()
	res.ended = ds.cfg.Clock.Now()
	res.o = model.Outcome{Status: resp.StatusCode, RetryAfter: ds.retryAfter(resp.Header.Get("Retry-After"), time.Now())}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		res.errText = "HTTP " + strconv.Itoa(resp.StatusCode)
	}
	return res
}

// retryAfter turns an HTTP-date Retry-After (wall clock) into drill
// delta-seconds; delta-seconds pass unchanged, read as drill seconds as the
// simulation reads them.
func (ds *dispatcher) retryAfter(v string, wallNow time.Time) string {
	v = strings.TrimSpace(v)
	if v == "" || (v[0] >= '0' && v[0] <= '9') || ds.speed == 1 {
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
	// Resets, EOF on a connection the partner closed, broken pipes and
	// anything else the transport reports: the connection failed.
	return model.ErrReset
}

func clip(s string) string {
	if len(s) > maxErrorText {
		return s[:maxErrorText]
	}
	return s
}

// complete hands an attempt's result to the core and queues the transition.
func (ds *dispatcher) complete(r result) {
	it := r.it
	dec := ds.core.Complete(it, r.o, r.ended, ds.rng.Float64())
	if dec.RetryAfterIgnored {
		ds.stats.RetryAfterIgnored++
	}
	c := queue.Completion{ID: it.ID, Owner: ds.cfg.Owner, At: r.ended, Attempt: it.Attempts, LastError: r.errText,
		Status: r.o.Status, Started: r.started, RecordAttempt: true}
	switch dec.Action {
	case model.ActAck:
		c.Kind = queue.KindAck
		ds.stats.Acked++
		delete(ds.held, it.ID)
		ds.pending = append(ds.pending, c)
	case model.ActReschedule:
		// The core keeps the delivery until it is due; the row keeps our
		// lease until one lease past its run_at, so neither our own claims
		// nor another dispatcher's can hand it out while we are about to
		// send it. After a kill it is claimable once that lease runs out;
		// its run_at does not change.
		c.Kind, c.RunAt, c.PrevDelay, c.LeaseUntil = queue.KindHold, dec.RunAt, dec.Delay, dec.RunAt.Add(ds.lease)
		if h := ds.held[it.ID]; h != nil {
			h.attempt, h.runAt, h.prevDelay, h.lastErr, h.updated, h.leaseUntil = c.Attempt, c.RunAt, c.PrevDelay, c.LastError, c.At, c.LeaseUntil
		}
		ds.stats.Rescheduled++
		ds.pending = append(ds.pending, c)
	default:
		ds.deadLetter(it, r.ended, dec.Reason, r.errText, r.o.Status, true, r.started)
	}
}

func (ds *dispatcher) deadLetter(it *dispatch.Item, at time.Time, reason model.Reason, errText string, status int, attempted bool, started time.Time) {
	delete(ds.held, it.ID)
	ds.stats.DeadLettered++
	ds.pending = append(ds.pending, queue.Completion{ID: it.ID, Owner: ds.cfg.Owner, Kind: queue.KindDeadLetter, At: at,
		Attempt: it.Attempts, Reason: string(reason), LastError: errText, Status: status, Started: started, RecordAttempt: attempted})
	k := alertKey{ds.cohorts[ds.subs[it.Partner].Cohort], string(reason)}
	a := ds.alerts[k]
	if a == nil {
		if len(ds.alerts) >= maxAlertKeys {
			return
		}
		a = &alertAgg{oldestC: it.FirstSeen}
		ds.alerts[k] = a
	}
	a.count++
	a.oldestC = min(a.oldestC, it.FirstSeen)
}

// flush writes the pending transitions in one store transaction.
func (ds *dispatcher) flush() error {
	if len(ds.pending) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	res, err := ds.cfg.Store.Complete(ctx, ds.pending)
	if err != nil {
		if len(ds.pending) > MaxPendingCompletions {
			return fmt.Errorf("dispatch: %d transitions could not be stored: %w", len(ds.pending), err)
		}
		ds.logf("complete: %v (will retry)", err)
		return nil
	}
	if res.Stale > 0 {
		ds.logf("%d completions were stale (lease taken over)", res.Stale)
	}
	ds.stats.Stale += int64(res.Stale)
	clear(ds.pending)
	ds.pending = ds.pending[:0]
	return nil
}

// flushAlerts hands the aggregated alerts to the poster. The loop calls it
// once per alert_interval; if the poster is still busy with the previous
// batch, the alerts keep aggregating until the next call (rate limit).
// final (the dispatcher is stopping) waits for the poster instead.
func (ds *dispatcher) flushAlerts(final bool) {
	if len(ds.alerts) == 0 || ds.cfg.AlertURL == "" {
		return
	}
	if !final && (ds.alertBusy.Load() || time.Now().UnixNano() < ds.alertReadyNS.Load()) {
		return
	}
	now := ds.cfg.Clock.Now().UnixNano()
	batch := make([]Alert, 0, len(ds.alerts))
	for k, a := range ds.alerts {
		batch = append(batch, Alert{Count: a.count, Reason: k.reason, Partner: k.partner, OldestS: max(0, float64(now-a.oldestC)/1e9)})
	}
	ds.alertBusy.Store(true)
	if final {
		t := time.NewTimer(alertTimeout)
		defer t.Stop()
		select {
		case ds.alertCh <- batch:
		case <-t.C:
			return
		}
	} else {
		select {
		case ds.alertCh <- batch:
		default:
			return // cannot happen while alertBusy was clear
		}
	}
	clear(ds.alerts)
}

func (ds *dispatcher) postAlerts(batch []Alert) {
	for _, a := range batch {
		body, _ := json.Marshal(a)
		ctx, cancel := context.WithTimeout(context.Background(), alertTimeout)
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, ds.cfg.AlertURL, bytes.NewReader(body))
		if err != nil {
			cancel()
			ds.logf("alert: %v", err)
			return
		}
		req.GetBody = nil
		req.Header.Set("Content-Type", "application/json")
		resp, err := ds.client.Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, MaxResponseBytes))
			resp.Body.Close()
			if resp.StatusCode/100 == 2 {
				ds.eventsMu.Lock()
				ds.stats.AlertsSent++
				ds.eventsMu.Unlock()
			}
		} else {
			ds.logf("alert: %v", err)
		}
		cancel()
	}
}
