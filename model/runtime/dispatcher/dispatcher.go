package dispatcher

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stormdrill/stormdrill/model"
	"github.com/stormdrill/stormdrill/model/dispatchcore"
	"github.com/stormdrill/stormdrill/model/runtime/queue"
	"github.com/stormdrill/stormdrill/model/seed"
)

// Runtime limits.
const (
	// MaxResponseBytes is the most of a partner's response body read.
	MaxResponseBytes = 64 << 10
	// MaxPendingCompletions bounds completions waiting for the store; past
	// it the dispatcher gives up (the store is the truth: leases expire).
	MaxPendingCompletions = 100_000
	// flushEvery is the longest a transition waits (wall time) before the
	// dispatcher writes it; flushBatch pending transitions are written at
	// once.
	flushEvery = 2 * time.Millisecond
	flushBatch = 1024
	// MaxRenewBatch bounds the lease renewals one store batch carries; a
	// dispatcher holding more renews the rest in the next batches.
	MaxRenewBatch = 10_000
	// alertTimeout bounds one alert POST.
	alertTimeout = 2 * time.Second
	// storeTimeout bounds one store call.
	storeTimeout = 30 * time.Second
	// maxErrorText bounds the last_error text kept per delivery.
	maxErrorText = 200
	// maxAlertKeys bounds the (partner, reason) pairs aggregated between
	// two alert batches; partners × reasons is far below it.
	maxAlertKeys = 1024
	// dialTimeout bounds connecting to a partner or the alert sink.
	dialTimeout = 5 * time.Second
	// clientSlack is added to the longest per-request timeout to form the
	// HTTP client's overall timeout, a backstop behind the contexts.
	clientSlack = time.Second
)

// Event line kinds the dispatcher writes to Config.Events, one per line,
// tab-separated.
const (
	EventReady      = "ready"      // ready <owner>
	EventTransition = "transition" // transition <endpoint> <drill unix ns> <from> <to>
	EventExit       = "exit"       // exit <attempts> <retry_after_ignored> <stale>
	// EventRefused reports an attempt whose connection was refused, which
	// no partner saw: refused <endpoint> <attempt> <started drill unix ns>
	// <ended drill unix ns>.
	EventRefused = "refused"
)

// Stats is what one dispatcher run did.
type Stats struct {
	Claimed, Attempts, Acked, Rescheduled, DeadLettered int64
	Stale                                               int64 // completions the store refused (lease taken over)
	RetryAfterIgnored                                   int64
	Released                                            int   // leases given back at the end
	Renewed                                             int64 // lease renewals sent for deliveries held in memory
	AlertsSent                                          int64
}

// endpoint is one partner endpoint: a member of a Config.Partners entry.
type endpoint struct {
	name  string
	url   string
	group int // index into Config.Partners
}

type dispatcher struct {
	cfg    Config
	eps    []endpoint
	byName map[string]int32
	core   *dispatchcore.Core
	rng    *rand.Rand
	held   map[string]*heldRow
	// rowOf is each item in the core's held row, which keeps its id (the
	// core's item does not): an item enters the core when its row is held
	// and leaves it when the row is let go (unhold).
	rowOf  map[*dispatchcore.Item]*heldRow
	leases leaseHeap // held's rows by lease expiry
	// renewLooked counts the held rows renew has looked at (a test
	// checks that it does not grow with what is held).
	renewLooked int64
	wallTO      time.Duration
	pending     []queue.Completion
	// sent is the batch of transitions the store goroutine is writing
	// (nil while it is idle); pending and sent swap backing arrays.
	sent []queue.Completion
	// storeBusy is set while the store goroutine has a request; leftHeld
	// names the deliveries that left held meanwhile (their transition not
	// stored yet). If one had let its lease run out, that request's claim
	// may hand it back to us; its stored transition ends it, so it must
	// not be started again.
	storeBusy bool
	leftHeld  map[string]struct{}
	client    *http.Client
	events    io.Writer
	eventsMu  sync.Mutex
	logw      io.Writer
	stats     Stats
	alerts    map[alertKey]*alertAgg
	alertCh   chan []Alert
	// alertBusy is set while a batch waits in alertCh or is being posted;
	// alertReadyNS (wall unix ns) is when the poster finished the last
	// batch plus AlertInterval. No new batch is handed over before both
	// allow it, so however slow a post is, two batches arrive at least
	// AlertInterval apart.
	alertBusy    atomic.Bool
	alertReadyNS atomic.Int64
	alertEvery   time.Duration // AlertInterval in wall time
	// unstarted counts claimed deliveries not started yet (their held
	// row's unstarted is set until Next hands them out).
	unstarted int
	speed     float64
}

// Run validates cfg and runs the dispatcher until ctx is cancelled, then
// stops claiming, lets the attempts in flight finish, persists every
// transition, gives its leases back and returns. A process killed instead
// loses nothing: what it did not persist is redone once its leases expire.
// An invalid cfg is refused before anything is claimed, with the errors
// of Validate.
//
// Attempt ordinals: the store counts attempts whose outcome was recorded.
// An attempt lost in a kill is not counted, so the next claimant sends the
// same ordinal again (the partner sees X-Attempt repeat); the attempt
// history never holds two rows with one ordinal, and a kill does not eat
// into a delivery's max_attempts.
func Run(ctx context.Context, cfg Config) (Stats, error) {
	ds, err := newDispatcher(cfg)
	if err != nil {
		return Stats{}, err
	}
	cfg.Metrics.bind(&ds.cfg)
	return ds.run(ctx)
}

func newDispatcher(cfg Config) (*dispatcher, error) {
	if cfg.Store == nil {
		return nil, errors.New("dispatcher: Config.Store is required")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.AlertURL != "" {
		cfg.AlertURL, _ = LoopbackURL(cfg.AlertURL)
	}
	if cfg.Clock.Start.IsZero() {
		cfg.Clock.Start = time.Now()
	}
	ds := &dispatcher{
		cfg: cfg, byName: map[string]int32{}, held: map[string]*heldRow{}, rowOf: map[*dispatchcore.Item]*heldRow{}, leftHeld: map[string]struct{}{},
		rng:    seed.NewRand(cfg.Seed, "dispatcher/"+cfg.Owner),
		wallTO: cfg.Clock.Wall(cfg.AttemptTimeout),
		events: cfg.Events, logw: cfg.Log, alerts: map[alertKey]*alertAgg{},
		alertCh: make(chan []Alert, 1), speed: cfg.Clock.speed(),
		alertEvery: cfg.Clock.Wall(cfg.AlertInterval),
	}
	if ds.events == nil {
		ds.events = io.Discard
	}
	if ds.logw == nil {
		ds.logw = io.Discard
	}
	pcs, err := ds.partnerConfigs()
	if err != nil {
		return nil, err
	}
	ds.core, err = dispatchcore.New(dispatchcore.Config{Workers: cfg.Workers, Partners: pcs})
	if err != nil {
		return nil, err
	}
	ds.client = newHTTPClient(cfg.Workers, max(ds.wallTO, alertTimeout)+clientSlack)
	return ds, nil
}

// partnerConfigs converts each partner entry's policy settings for the
// core, one endpoint at a time: an entry's members share its policy, each
// has its own breaker and budget, and every budget of global scope is one
// bucket.
func (ds *dispatcher) partnerConfigs() ([]dispatchcore.PartnerConfig, error) {
	cfg := &ds.cfg
	var global *model.Budget
	var pcs []dispatchcore.PartnerConfig
	pols := make([]*model.Policy, len(cfg.Partners)) // one per entry, shared by its members
	for g := range cfg.Partners {
		ps := &cfg.Partners[g].Policy
		pol, err := ps.Retry.Policy(&ps.Breaker, &ps.Budget)
		if err != nil {
			return nil, fmt.Errorf("partners[%d].policy: %w", g, err)
		}
		pols[g] = pol
	}
	for _, e := range cfg.EndpointURLs() {
		g, name := e.Group, e.Name
		p := &cfg.Partners[g]
		ds.byName[name] = int32(len(ds.eps))
		ds.eps = append(ds.eps, endpoint{name: name, url: e.URL, group: g})
		pc := dispatchcore.PartnerConfig{Name: name, Policy: pols[g], Concurrency: p.Concurrency}
		if br := &p.Policy.Breaker; br.Enabled() {
			bs, err := br.Settings()
			if err != nil {
				return nil, fmt.Errorf("partners[%d].policy.breaker: %w", g, err)
			}
			pc.Breaker = model.NewBreaker(bs)
			pc.Breaker.OnTransition = func(tr model.Transition) {
				ds.event(EventTransition, name, strconv.FormatInt(tr.At.UnixNano(), 10), tr.From.String(), tr.To.String())
			}
		}
		switch b := &p.Policy.Budget; {
		case !b.Enabled():
		case !b.Global():
			pc.Budget = model.NewBudget(b.MaxTokens, b.TokenRatio)
		default:
			if global == nil {
				global = model.NewBudget(b.MaxTokens, b.TokenRatio)
			}
			pc.Budget = global
		}
		pcs = append(pcs, pc)
	}
	return pcs, nil
}

func (ds *dispatcher) event(fields ...string) {
	ds.eventsMu.Lock()
	defer ds.eventsMu.Unlock()
	fmt.Fprintln(ds.events, strings.Join(fields, "\t"))
}

func (ds *dispatcher) logf(format string, args ...any) {
	fmt.Fprintf(ds.logw, "dispatch %s: "+format+"\n", append([]any{ds.cfg.Owner}, args...)...)
}

func (ds *dispatcher) run(ctx context.Context) (Stats, error) {
	workers := ds.cfg.Workers
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

// storeReq is one turn of the store goroutine: write cs (the
// transitions, in order), then, if they were written and claim > 0,
// claim up to claim deliveries at now.
type storeReq struct {
	cs    []queue.Completion
	claim int
	now   time.Time
}

// storeResp is what one storeReq did.
type storeResp struct {
	res      queue.CompleteResult
	flushErr error
	claimed  bool // a claim was made
	rows     []queue.Delivery
	claimErr error
}

// storeLoop runs the store calls one request at a time, so the dispatcher
// loop keeps starting attempts and collecting results while a transaction
// commits: with the calls inline, every worker that finished during a
// commit sat idle until it ended.
func (ds *dispatcher) storeLoop(reqs <-chan storeReq, resps chan<- storeResp) {
	for q := range reqs {
		var p storeResp
		// Persist before claiming, in the same transaction (CompleteClaim
		// writes first): a delivery that just ended has left held, and if
		// its lease had run out a claim before its transition would hand
		// it back to us as new.
		ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
		res, rows, err := ds.cfg.Store.CompleteClaim(ctx, q.cs, ds.cfg.Owner, q.now, ds.cfg.LeaseTimeout, q.claim)
		cancel()
		// One transaction: a failure is the write's and the claim's.
		if len(q.cs) > 0 {
			p.res, p.flushErr = res, err
		}
		if q.claim > 0 {
			p.claimed, p.rows, p.claimErr = true, rows, err
		}
		resps <- p
	}
}

func (ds *dispatcher) loop(ctx context.Context, jobs chan<- job, results <-chan result) error {
	// Transitions are written in batches, at most flushEvery apart (or
	// flushBatch at a time), rather than after every wake-up: each store
	// transaction costs about as much as a few hundred rows in one. One
	// store goroutine writes them (and claims) while this loop goes on;
	// what ends during a write goes with the next one (group commit).
	reqs := make(chan storeReq)
	resps := make(chan storeResp, 1)
	storeDone := make(chan struct{})
	go func() {
		defer close(storeDone)
		ds.storeLoop(reqs, resps)
	}()
	defer func() {
		close(reqs)
		<-storeDone
	}()
	ls := ds.newLoopSchedule(reqs)
	timer := time.NewTimer(ls.poll)
	defer timer.Stop()
	ds.event(EventReady, ds.cfg.Owner)
	for {
		ls.step(time.Now(), jobs)
		if ls.stopping && ds.core.InFlight() == 0 && !ds.storeBusy {
			break
		}
		resetTimer(timer, ls.wait())
		select {
		case r := <-results:
			ds.completeAll(r, results)
		case p := <-resps:
			ds.storeBusy = false
			if err := ds.stored(p, ls.claimLimit, time.Now()); err != nil {
				return err
			}
			ls.claimAnswered(p)
		case <-timer.C:
		case <-ctx.Done():
			if !ls.stopping {
				ls.stopping = true
				ds.logf("stopping: %d attempts in flight", ds.core.InFlight())
			}
			ctx = context.Background() // Done fires once; keep the select quiet
		}
	}
	return ds.finish()
}

// loopSchedule is when the loop next does each of its periodic tasks.
type loopSchedule struct {
	ds                              *dispatcher
	reqs                            chan<- storeReq
	poll, alertEvery, renewEvery    time.Duration
	nextClaim, nextAlert, nextRenew time.Time
	nextMetrics, lastFlush          time.Time
	claimLimit                      int // of the claim in the store's hands
	stopping                        bool
}

func (ds *dispatcher) newLoopSchedule(reqs chan<- storeReq) *loopSchedule {
	now := time.Now()
	ls := &loopSchedule{ds: ds, reqs: reqs, poll: ds.cfg.ClaimPoll, alertEvery: ds.alertEvery,
		nextClaim: now, nextAlert: now.Add(ds.alertEvery), nextMetrics: now, lastFlush: now}
	// Leases of held deliveries are renewed every third of a lease, each
	// once less than two thirds of it is left: a delivery kept waiting
	// for a worker, a partner slot or a breaker never outlives its lease,
	// so no other dispatcher can claim and send it meanwhile.
	ls.renewEvery = max(ds.cfg.Clock.Wall(ds.cfg.LeaseTimeout/3), time.Millisecond)
	ls.nextRenew = now.Add(ls.renewEvery)
	return ls
}

// step does what is due at wallNow: metrics, starting attempts, lease
// renewals, a store batch and alerts.
func (ls *loopSchedule) step(wallNow time.Time, jobs chan<- job) {
	ds := ls.ds
	now := ds.cfg.Clock.At(wallNow)
	if ds.cfg.Metrics != nil && !wallNow.Before(ls.nextMetrics) {
		ds.cfg.Metrics.observe(ds.core, ds.eps, now)
		ls.nextMetrics = wallNow.Add(metricsEvery)
	}
	// Start what can start before deciding to claim: a worker that a
	// result just freed is not idle if a claimed delivery waits for it.
	if !ls.stopping {
		ds.pump(now, jobs)
	}
	if !wallNow.Before(ls.nextRenew) {
		ls.nextRenew = wallNow.Add(ls.renewEvery)
		if ds.renew(now) {
			ls.nextRenew = wallNow // more to renew: the next batch right after this one
		}
	}
	if !ds.storeBusy {
		ls.sendStore(wallNow, now)
	}
	if !wallNow.Before(ls.nextAlert) {
		ds.flushAlerts(false)
		// The next try: one interval on, or when the poster allows it
		// if that is later (a slow post delays the next batch).
		ls.nextAlert = wallNow.Add(ls.alertEvery)
		if ready := time.Unix(0, ds.alertReadyNS.Load()); ready.After(ls.nextAlert) {
			ls.nextAlert = ready
		}
	}
}

// sendStore hands the store goroutine a claim, when one is due and room
// is left, and the pending transitions, when a flush is due.
func (ls *loopSchedule) sendStore(wallNow, now time.Time) {
	ds := ls.ds
	claimDue := !ls.stopping && !wallNow.Before(ls.nextClaim)
	claimNow := claimDue && !ds.enoughClaimed()
	if claimDue && !claimNow {
		ls.nextClaim = wallNow.Add(ls.poll) // enough in hand: look again after a poll, or when a result comes
	}
	ls.claimLimit = 0
	if claimNow {
		ls.claimLimit = min(ds.cfg.ClaimBatch, ds.cfg.HeldLimit-len(ds.held))
	}
	flushDue := len(ds.pending) > 0 && (len(ds.pending) >= flushBatch || wallNow.Sub(ls.lastFlush) >= flushEvery || ls.stopping)
	if ls.claimLimit > 0 || flushDue {
		ds.sent, ds.pending = ds.pending, ds.sent[:0]
		ls.reqs <- storeReq{cs: ds.sent, claim: ls.claimLimit, now: now}
		ds.storeBusy, ls.lastFlush = true, wallNow
	}
}

// wait is how long the loop may sleep: until the next claim, wake-up of
// the core, flush, renewal or alert, unless a result or the store's
// answer comes first.
func (ls *loopSchedule) wait() time.Duration {
	ds := ls.ds
	wait := min(time.Until(ls.nextAlert), time.Until(ls.nextRenew))
	if !ds.storeBusy && len(ds.pending) > 0 {
		wait = min(wait, time.Until(ls.lastFlush.Add(flushEvery)))
	}
	if !ls.stopping {
		if !ds.storeBusy {
			wait = min(wait, time.Until(ls.nextClaim))
		}
		if w, ok := ds.core.NextWake(); ok {
			wait = min(wait, ds.cfg.Clock.Wall(w.Sub(ds.cfg.Clock.Now())))
		}
	}
	return max(wait, 0)
}

// claimAnswered schedules the next claim after the store answered one.
func (ls *loopSchedule) claimAnswered(p storeResp) {
	if !p.claimed {
		return
	}
	switch {
	case p.claimErr != nil:
		ls.ds.logf("claim: %v", p.claimErr)
		ls.nextClaim = time.Now().Add(50 * time.Millisecond) // the store is busy or gone; back off
	case len(p.rows) == ls.claimLimit:
		ls.nextClaim = time.Now() // the store may have more due right now
	default:
		ls.nextClaim = time.Now().Add(ls.poll)
	}
}

// completeAll completes r and whatever other results have arrived: one
// store batch.
func (ds *dispatcher) completeAll(r result, results <-chan result) {
	ds.complete(r)
	for {
		select {
		case r := <-results:
			ds.complete(r)
		default:
			return
		}
	}
}

// finish writes what is left and gives the leases back.
func (ds *dispatcher) finish() error {
	// The gauges as the dispatcher stops, not as of the last walk: what a
	// scrape reads afterwards is final.
	ds.cfg.Metrics.observe(ds.core, ds.eps, ds.cfg.Clock.Now())
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

// stored takes the store goroutine's answer: a batch that could not be
// written goes back before the transitions queued since (they may follow
// from it), and claimed rows go to the core.
func (ds *dispatcher) stored(p storeResp, limit int, wallNow time.Time) error {
	sent := ds.sent
	if p.flushErr != nil {
		if len(sent)+len(ds.pending) > MaxPendingCompletions {
			return fmt.Errorf("dispatch: %d transitions could not be stored: %w", len(sent)+len(ds.pending), p.flushErr)
		}
		ds.logf("complete: %v (will retry)", p.flushErr)
		merged := append(sent, ds.pending...)
		clear(ds.pending)
		ds.pending, ds.sent = merged, ds.pending[:0]
		return nil
	}
	if p.res.Stale > 0 {
		ds.logf("%d completions were stale (lease taken over)", p.res.Stale)
	}
	ds.stats.Stale += int64(p.res.Stale)
	clear(sent)
	ds.sent = sent[:0]
	if p.claimed && p.claimErr == nil {
		ds.claimed(p.rows, ds.cfg.Clock.At(wallNow))
	}
	clear(ds.leftHeld)
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

// pump starts every attempt the core wants started now.
func (ds *dispatcher) pump(now time.Time, jobs chan<- job) {
	nowNs := now.UnixNano()
	for {
		it, verdict, reason := ds.core.Next(nowNs)
		if it == nil {
			return
		}
		h := ds.rowOf[it]
		if h.unstarted {
			h.unstarted = false
			ds.unstarted--
		}
		if verdict == dispatchcore.DeadLetter {
			ds.deadLetter(h, now, reason, "", 0, false, time.Time{})
			continue
		}
		body := h.payload
		if len(body) == 0 {
			// A body is always sent: an empty POST with an Idempotency-Key
			// is one Go's transport would replay by itself.
			body = []byte(`{"id":` + strconv.Quote(h.id) + `}`)
		}
		ds.stats.Attempts++
		ds.cfg.Metrics.started(ds.cfg.Partners[ds.eps[it.Partner].group].Name, int(it.Attempts))
		// The core keeps attempts in flight at most at workers, which is the
		// channel's capacity plus what the workers hold: this never blocks.
		jobs <- job{it: it, id: h.id, url: ds.eps[it.Partner].url, body: body, started: now}
	}
}

// complete hands an attempt's result to the core and queues the transition.
func (ds *dispatcher) complete(r result) {
	it := r.it
	h := ds.rowOf[it]
	if r.o.Err == model.ErrRefused {
		ds.event(EventRefused, ds.eps[it.Partner].name, strconv.Itoa(int(it.Attempts)),
			strconv.FormatInt(r.started.UnixNano(), 10), strconv.FormatInt(r.ended.UnixNano(), 10))
	}
	dec := ds.core.Complete(it, r.o, r.ended.UnixNano(), ds.rng.Float64())
	partner := ds.cfg.Partners[ds.eps[it.Partner].group].Name
	ds.cfg.Metrics.attempt(partner, r.o, r.ended.Sub(r.started))
	if dec.RetryAfterIgnored {
		ds.stats.RetryAfterIgnored++
	}
	c := queue.Completion{ID: h.id, Owner: ds.cfg.Owner, At: r.ended, Attempt: int(it.Attempts), LastError: r.errText,
		Status: r.o.Status, Started: r.started, RecordAttempt: true}
	switch dec.Action {
	case model.ActAck:
		c.Kind = queue.KindAck
		ds.stats.Acked++
		ds.cfg.Metrics.deliveredOne(partner, r.ended.Sub(time.Unix(0, it.FirstSeen)))
		ds.unhold(h)
		ds.pending = append(ds.pending, c)
	case model.ActReschedule:
		// The core keeps the delivery until it is due; the row keeps our
		// lease until one lease past its run_at, so neither our own claims
		// nor another dispatcher's can hand it out while we are about to
		// send it. After a kill it is claimable once that lease runs out;
		// its run_at does not change.
		c.Kind, c.RunAt, c.PrevDelay, c.LeaseUntil = queue.KindHold, dec.RunAt, dec.Delay, dec.RunAt.Add(ds.cfg.LeaseTimeout)
		h.attempt, h.runAt, h.prevDelay, h.lastErr, h.updated, h.leaseUntil = c.Attempt, c.RunAt, c.PrevDelay, c.LastError, c.At, c.LeaseUntil
		ds.leases.fix(h.idx)
		ds.stats.Rescheduled++
		ds.pending = append(ds.pending, c)
	default:
		ds.deadLetter(h, r.ended, dec.Reason, r.errText, r.o.Status, true, r.started)
	}
}

// deadLetter ends held row h's delivery in the dead-letter queue.
func (ds *dispatcher) deadLetter(h *heldRow, at time.Time, reason model.Reason, errText string, status int, attempted bool, started time.Time) {
	it, id := h.it, h.id
	ds.unhold(h)
	ds.stats.DeadLettered++
	ds.cfg.Metrics.deadLetteredOne(ds.cfg.Partners[ds.eps[it.Partner].group].Name, reason)
	ds.pending = append(ds.pending, queue.Completion{ID: id, Owner: ds.cfg.Owner, Kind: queue.KindDeadLetter, At: at,
		Attempt: int(it.Attempts), Reason: string(reason), LastError: errText, Status: status, Started: started, RecordAttempt: attempted})
	k := alertKey{ds.cfg.Partners[ds.eps[it.Partner].group].Name, string(reason)}
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
