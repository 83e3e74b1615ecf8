package live

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/stormdrill/stormdrill/drills"
	"github.com/stormdrill/stormdrill/drills/children"
	"github.com/stormdrill/stormdrill/fakepartner"
	"github.com/stormdrill/stormdrill/model/runtime/dispatcher"
	"github.com/stormdrill/stormdrill/model/runtime/queue"
	"github.com/stormdrill/stormdrill/reports"
)

// Runner limits.
const (
	// BootMargin is how long before drill time 0 the first dispatcher is
	// started, so that its start-up is not counted as delivery latency;
	// each further process adds half of it.
	BootMargin = 500 * time.Millisecond
	// readyTimeout bounds a dispatcher's start-up.
	readyTimeout = 20 * time.Second
	// bootTries bounds how often the dispatchers are started when they
	// were not ready by drill time 0 (see bootDispatchers).
	bootTries = 4
	// MaxInsertBatch bounds the deliveries one injection transaction
	// holds: the write lock it takes is one the dispatchers wait for.
	MaxInsertBatch = 512
	// insertWindow is how long the injector lets due events gather before
	// it writes them (group commit): at high rates one transaction per
	// event took the write lock thousands of times a second, away from
	// the dispatchers; at low rates, where the next event is further off
	// than this, each event is written as it comes, with no added lateness.
	insertWindow = time.Millisecond
	// stopGrace is added to the attempt timeout when waiting for a
	// dispatcher to stop after SIGTERM, before it is killed.
	stopGrace = 10 * time.Second
	// MaxRunAtWatch bounds the delayed deliveries whose run_at the runner
	// watches across restarts; past it, a sample of that many is watched.
	MaxRunAtWatch = 100_000
	// maxRunAtMovedShown bounds the examples a moved-run_at (or overlap)
	// error names.
	maxRunAtMovedShown = 5
	// storeCallTimeout bounds one store call of the runner.
	storeCallTimeout = 30 * time.Second
	// MaxProcesses bounds dispatcher.processes.
	MaxProcesses = 64
)

// ErrRunAtMoved is returned (with the run) when a restart moved the run_at
// of a delivery that was waiting out a delay: the durable queue must keep
// every delayed delivery's run time across a restart.
var ErrRunAtMoved = errors.New("a restart moved a delayed delivery's run_at")

// Options tune a live run.
type Options struct {
	// Executable is the stormdrill binary whose `dispatch` command runs the
	// dispatcher; "" means this process's own executable.
	Executable string
	// Progress, if set, is called at every sample.
	Progress func(drills.Progress)
	// Log receives the dispatchers' diagnostics; nil discards them.
	Log io.Writer
	// Store is the durable queue's DSN ("sqlite:PATH" or
	// "postgres://…"), overriding the drill's store; "" means the drill's,
	// or else an SQLite file queue.db in the run directory. A PostgreSQL
	// store must be empty when the run starts.
	Store string
	// DispatcherMetrics, if set, is the address on which the dispatcher
	// process serves its Prometheus metrics (dispatch --metrics); one
	// process only (dispatcher.processes = 1), which serves them again on
	// the same address after a restart.
	DispatcherMetrics string
	// Metrics, if set, gets the partner server's Prometheus collector
	// (requests by partner, status and fault) for the run's length.
	Metrics prometheus.Registerer
}

type child struct {
	n     int // process number, 1..dispatcher.processes
	owner string
	cmd   *exec.Cmd
	ready chan struct{}
	done  chan error // the process's exit; buffered, written once
	// killed is set before the runner signals it, so its exit is expected.
	killed bool
}

// transition is one breaker transition line of a dispatcher.
type transition struct {
	at                time.Duration // drill time
	partner, from, to string
}

type runner struct {
	metrics  prometheus.Collector // registered with opt.Metrics
	d        *drills.Drill
	opt      Options
	dir      string
	storeDSN string
	// dispatchConfig is the dispatcher configuration file the children read.
	dispatchConfig string
	specs          []fakepartner.Spec
	replays        *liveReplays // the drill's dlq-replay actions
	subs           []drills.LiveSubscriber
	fanout         []int
	byName         map[string]int
	srv            *fakepartner.Server
	baseURL        string
	clock          dispatcher.Clock
	exe            string
	logw           io.Writer

	mu          sync.Mutex // guards what child readers write
	transitions []transition
	transDrop   int64
	breakerNow  map[string]float64

	spawns   int
	procs    []*child // by process number - 1; nil while down
	exited   chan *child
	restarts []reports.Restart

	st  queue.Store // sampling and the final accounting
	inj *injector
	rec *liveRecorder

	// runAtWatch holds the deliveries that were delayed (run_at in the
	// future) when a dispatcher was stopped, with that run_at. Each sample
	// checks that they keep it until it comes due.
	runAtWatch   map[string]time.Time
	runAtKept    int64    // watched deliveries that kept their run_at until due
	runAtMoved   int64    // watched deliveries whose run_at moved, or that ended early
	runAtExample []string // a few of those, for the error
}

// Run runs a drill in live mode and builds its report. dir receives the
// SQLite queue (queue.db, unless the drill or opt names another store)
// and the drill as the dispatcher reads it. A run that breaks the
// accounting identity is returned together with an error wrapping
// drills.ErrAccounting.
func Run(d *drills.Drill, dir string, opt Options) (*reports.Run, error) {
	r, err := newRunner(d, dir, opt)
	if err != nil {
		return nil, err
	}
	defer r.close()
	if err := r.run(); err != nil {
		return nil, err
	}
	return r.report()
}

// processes is how many dispatcher processes the run keeps up.
func (r *runner) processes() int { return max(1, r.d.Dispatcher.Processes) }

func newRunner(d *drills.Drill, dir string, opt Options) (*runner, error) {
	specs, err := d.PartnerSpecs()
	if err != nil {
		return nil, err
	}
	r := &runner{d: d, opt: opt, dir: dir, specs: specs, byName: map[string]int{}, breakerNow: map[string]float64{}}
	r.subs, r.fanout = drills.Subscribers(d, specs)
	for i, s := range r.subs {
		r.byName[s.Name] = i
	}
	r.logw = opt.Log
	if r.logw == nil {
		r.logw = io.Discard
	}
	r.logw = &syncWriter{w: r.logw}
	r.exe = opt.Executable
	if r.exe == "" {
		if r.exe, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("live: finding the stormdrill executable: %w", err)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	r.storeDSN = opt.Store
	if r.storeDSN == "" {
		r.storeDSN = d.Store
	}
	if r.storeDSN == "" {
		path := filepath.Join(dir, "queue.db")
		for _, suffix := range []string{"", "-wal", "-shm"} {
			if err := os.Remove(path + suffix); err != nil && !errors.Is(err, os.ErrNotExist) {
				return nil, err
			}
		}
		r.storeDSN = "sqlite:" + path
	}
	if n := r.processes(); n > MaxProcesses {
		return nil, fmt.Errorf("live: %d dispatcher processes, at most %d", n, MaxProcesses)
	} else if n > 1 && opt.DispatcherMetrics != "" {
		return nil, fmt.Errorf("live: dispatcher metrics on one address: for one dispatcher process, not %d", n)
	}
	r.procs = make([]*child, r.processes())
	// Every spawn's exit is reported once; a run spawns each process once
	// and again after each fault.
	r.exited = make(chan *child, r.processes()*(len(d.Faults)+bootTries))
	r.srv, err = fakepartner.NewServer(specs, fakepartner.ServerOptions{Speed: d.Speed, Seed: d.Seed,
		OnAttempt: func(a fakepartner.Attempt) {
			if rec := r.recorder(); rec != nil {
				rec.attempt(a)
			}
		}})
	if err != nil {
		return nil, fmt.Errorf("live: partner server: %w", err)
	}
	if opt.Metrics != nil {
		r.metrics = r.srv.Collector()
		if err := opt.Metrics.Register(r.metrics); err != nil {
			return nil, fmt.Errorf("live: metrics: %w", err)
		}
	}
	l, err := fakepartner.ListenLoopback("127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("live: partner server: %w", err)
	}
	go func() { _ = r.srv.Serve(l) }()
	r.baseURL = "http://" + l.Addr().String()
	cfg, err := d.DispatcherConfig(r.baseURL)
	for i := range cfg.Partners {
		if p := &cfg.Partners[i]; err == nil && r.srv.Refuses(p.Name) {
			// A refusal happens before any request reaches a listener:
			// this cohort gets one of its own, closed while it refuses.
			var own net.Listener
			if own, err = fakepartner.ListenLoopback("127.0.0.1:0"); err == nil {
				go func() { _ = r.srv.ServeRefusing(p.Name, own) }()
				p.URL = "http://" + own.Addr().String() + p.URL
			}
		}
	}
	if err == nil {
		r.dispatchConfig = filepath.Join(dir, "dispatcher.json")
		err = dispatcher.WriteFile(r.dispatchConfig, cfg)
	}
	if err != nil {
		r.srv.Close()
		return nil, fmt.Errorf("live: dispatcher configuration: %w", err)
	}
	return r, nil
}

// recorder is the run's recorder, nil before the run starts; the partner
// server's goroutines read it.
func (r *runner) recorder() *liveRecorder {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.rec
}

func (r *runner) close() {
	for _, c := range r.procs {
		if c != nil && !c.killed {
			c.killed = true
			_ = c.cmd.Process.Kill()
			<-c.done
		}
	}
	r.srv.Close()
	if r.metrics != nil {
		r.opt.Metrics.Unregister(r.metrics)
	}
	if r.st != nil {
		r.st.Close()
	}
}

type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// spawn starts dispatcher process n (1-based) and waits until it is
// ready. Each spawn has an owner name of its own, so a restarted process
// never completes the leases of the one it replaces.
func (r *runner) spawn(n int) (*child, error) {
	c, err := r.launch(n)
	if err != nil {
		return nil, err
	}
	return c, r.await(c)
}

// spawnAll starts the dispatcher processes ns at once (each boot takes a
// while; one after the other they would eat into the drill) and waits
// until all are ready.
func (r *runner) spawnAll(ns []int) error {
	var started []*child
	var err error
	for _, n := range ns {
		if r.procs[n-1] != nil {
			continue
		}
		var c *child
		if c, err = r.launch(n); err != nil {
			break
		}
		started = append(started, c)
	}
	for _, c := range started {
		if werr := r.await(c); werr != nil {
			err = cmp.Or(err, werr)
			continue
		}
		r.procs[c.n-1] = c
	}
	return err
}

// launch starts dispatcher process n.
func (r *runner) launch(n int) (*child, error) {
	r.spawns++
	c := &child{n: n, owner: "dispatch-" + strconv.Itoa(r.spawns), ready: make(chan struct{}), done: make(chan error, 1)}
	c.cmd = r.dispatchCommand(c.owner)
	c.cmd.Stderr = r.logw
	out, err := c.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := children.Start(c.cmd); err != nil {
		return nil, fmt.Errorf("live: starting the dispatcher: %w", err)
	}
	go func() {
		sc := bufio.NewScanner(io.LimitReader(out, 1<<30))
		readyOnce := false
		for sc.Scan() {
			f := strings.Split(sc.Text(), "\t")
			switch f[0] {
			case dispatcher.EventReady:
				if !readyOnce {
					readyOnce = true
					close(c.ready)
				}
			case dispatcher.EventTransition:
				if len(f) == 5 {
					r.transition(f[1], f[2], f[3], f[4])
				}
			case dispatcher.EventRefused:
				if len(f) == 5 {
					r.refused(f[1], f[2], f[3], f[4])
				}
			}
		}
		_, _ = io.Copy(io.Discard, out)
		err := c.cmd.Wait()
		children.Done(c.cmd)
		c.done <- err
		r.exited <- c
	}()
	return c, nil
}

// StoreEnv names the environment variable that hands a dispatcher process
// its store's DSN: a command line is visible to every user of the machine
// (ps), and a PostgreSQL DSN may hold a password.
const StoreEnv = "STORMDRILL_STORE"

// dispatchCommand is the command of one dispatcher process: the DSN in its
// environment, never in its arguments.
func (r *runner) dispatchCommand(owner string) *exec.Cmd {
	args := []string{"dispatch", "--config", r.dispatchConfig, "--owner", owner,
		"--start", strconv.FormatInt(r.clock.Start.UnixNano(), 10)}
	if r.opt.DispatcherMetrics != "" {
		args = append(args, "--metrics", r.opt.DispatcherMetrics)
	}
	cmd := exec.Command(r.exe, args...)
	cmd.Env = append(os.Environ(), StoreEnv+"="+r.storeDSN)
	return cmd
}

// await waits until process c is ready; one that is not is killed.
func (r *runner) await(c *child) error {
	t := time.NewTimer(readyTimeout)
	defer t.Stop()
	select {
	case <-c.ready:
		r.mu.Lock()
		clear(r.breakerNow) // a new process starts with closed breakers
		r.mu.Unlock()
		return nil
	case err := <-c.done:
		c.killed = true // its exit is reported here, not by the run loop
		return fmt.Errorf("live: dispatcher %d exited before it was ready: %v", c.n, err)
	case <-t.C:
		c.killed = true
		_ = c.cmd.Process.Kill()
		<-c.done
		return fmt.Errorf("live: dispatcher %d not ready after %v", c.n, readyTimeout)
	}
}

// refused records an attempt whose connection was refused, as the
// dispatcher reported it: the partner never saw it.
func (r *runner) refused(endpoint, attempt, startNS, endNS string) {
	i := strings.LastIndexByte(endpoint, '-')
	member, err1 := strconv.Atoi(endpoint[i+1:])
	ordinal, err2 := strconv.Atoi(attempt)
	start, err3 := strconv.ParseInt(startNS, 10, 64)
	end, err4 := strconv.ParseInt(endNS, 10, 64)
	rec := r.recorder()
	if i < 0 || err1 != nil || err2 != nil || err3 != nil || err4 != nil || rec == nil {
		return
	}
	rec.attempt(fakepartner.Attempt{Cohort: endpoint[:i], Member: member, Ordinal: ordinal, Refused: true,
		Arrived: r.clock.WallAt(time.Unix(0, start)), Answered: r.clock.WallAt(time.Unix(0, end))})
}

func (r *runner) transition(partner, atNS, from, to string) {
	ns, err := strconv.ParseInt(atNS, 10, 64)
	if err != nil {
		return
	}
	at := time.Duration(ns - r.clock.Start.UnixNano())
	r.mu.Lock()
	defer r.mu.Unlock()
	switch to {
	case "open":
		r.breakerNow[partner] = 2
	case "half-open":
		r.breakerNow[partner] = 1
	default:
		delete(r.breakerNow, partner)
	}
	if len(r.transitions) >= drills.MaxTransitions {
		r.transDrop++
		return
	}
	r.transitions = append(r.transitions, transition{at: at, partner: partner, from: from, to: to})
}

// stop ends dispatcher process n: SIGTERM (graceful) or SIGKILL.
func (r *runner) stop(n int, graceful bool) error {
	c := r.procs[n-1]
	if c == nil {
		return nil
	}
	r.procs[n-1] = nil
	c.killed = true
	if !graceful {
		_ = c.cmd.Process.Kill()
		<-c.done
		return nil
	}
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	t := time.NewTimer(r.clock.Wall(r.d.Dispatcher.AttemptTimeout.D) + stopGrace)
	defer t.Stop()
	select {
	case err := <-c.done:
		if err != nil {
			return fmt.Errorf("live: dispatcher %d did not stop cleanly: %v", c.n, err)
		}
		return nil
	case <-t.C:
		_ = c.cmd.Process.Kill()
		<-c.done
		return fmt.Errorf("live: dispatcher %d did not stop within %v of SIGTERM", c.n, r.clock.Wall(r.d.Dispatcher.AttemptTimeout.D)+stopGrace)
	}
}

// inFlightBound is an upper bound on the attempts a kill at drill time now
// can leave unrecorded, read from the store: every claimed and due row.
// That is more than the calls in flight (a claimed row may still wait for
// a worker, a partner slot or a breaker), but no less: the dispatcher
// writes outcomes in batches a few milliseconds apart, so a delivery
// answered 2xx just before the kill may still be leased in the store, and
// it is sent again after the restart like one that was in flight. Capping
// the bound at the workers or the per-partner concurrency, as it once did,
// undercounted those (34 duplicates against a bound of 24, under -race).
func (r *runner) inFlightBound(now time.Time) int64 {
	ctx, cancel := context.WithTimeout(context.Background(), storeCallTimeout)
	defer cancel()
	leased, err := r.st.LeasedDue(ctx, now)
	if err != nil {
		return 0
	}
	var total int64
	for _, n := range leased {
		total += n
	}
	return total
}

type faultStep struct {
	at    time.Duration // drill time
	i     int           // fault index
	down  bool          // true: take down; false: bring up
	grace bool
}

// faultProcesses lists the process numbers fault f restarts: the one it
// names, or every process.
func (r *runner) faultProcesses(f drills.Fault) []int {
	if f.Process > 0 {
		return []int{f.Process}
	}
	all := make([]int, r.processes())
	for i := range all {
		all[i] = i + 1
	}
	return all
}

// bootDispatchers sets drill time 0 a boot margin ahead and starts the
// dispatcher processes, which take it on their command line. Drill time 0
// must find them ready: one that is ready later sees the drill's first
// seconds pass while its deliveries wait in the store, and an outage that
// starts at 0 may be over before its first call (under the race detector
// on a loaded machine a dispatcher was ready 1.9s after a 0.5s margin). So
// processes that were late are killed and started again, with a margin
// twice the boot they took, before anything is injected.
func (r *runner) bootDispatchers() error {
	// Several processes boot at once; give them more time together.
	boot := BootMargin + time.Duration(r.processes()-1)*BootMargin/2
	for try := 1; ; try++ {
		r.clock = dispatcher.Clock{Start: time.Now().Add(boot), Speed: r.d.Speed}
		r.srv.SetStart(r.clock.Start)
		// The store's times are drill-clock instants; recording the clock
		// lets `stormdrill dlq` show them as the wall-clock instants of the
		// run.
		cctx, ccancel := context.WithTimeout(context.Background(), storeCallTimeout)
		err := r.st.SetClock(cctx, queue.Clock{Start: r.clock.Start, Speed: r.clock.Speed})
		ccancel()
		if err != nil {
			return fmt.Errorf("live: recording the drill clock: %w", err)
		}
		launched := time.Now()
		if err := r.spawnAll(r.faultProcesses(drills.Fault{})); err != nil {
			return err
		}
		late := time.Since(r.clock.Start)
		if late <= 0 || try == bootTries {
			return nil
		}
		took := time.Since(launched)
		fmt.Fprintf(r.logw, "live: the dispatchers were ready %v after drill time 0 (boot %v); starting them again\n",
			late.Round(time.Millisecond), took.Round(time.Millisecond))
		for n := range r.procs {
			_ = r.stop(n+1, false)
		}
		boot = min(2*took, readyTimeout)
	}
}

// up reports whether any dispatcher process is running.
func (r *runner) up() bool {
	for _, c := range r.procs {
		if c != nil {
			return true
		}
	}
	return false
}

// run drives the drill: it boots the dispatchers, injects the source's
// events, takes the scripted faults and actions at their drill times and
// samples the store at every interval, until everything injected is
// resolved after the source and the outages end, or duration + drain.
func (r *runner) run() error {
	injStore, err := r.openStores()
	if err != nil {
		return err
	}
	defer injStore.Close()
	if err := r.bootDispatchers(); err != nil {
		return err
	}
	rec := newLiveRecorder(r)
	r.mu.Lock()
	r.rec = rec
	r.mu.Unlock()
	r.inj = newInjector(r, injStore)
	ctx, cancel := context.WithCancel(context.Background())
	dv := &drive{ctx: ctx, injDone: make(chan error, 1), steps: faultSteps(r.d), acts: actionSteps(r.d)}
	go func(done chan<- error) { done <- r.inj.run(ctx) }(dv.injDone)
	// On every return the injector is stopped and waited for before its
	// store closes (defers run last-in, first-out).
	defer func() {
		cancel()
		if dv.injDone != nil {
			<-dv.injDone
		}
	}()
	r.replays = newLiveReplays(r)
	// Deferred after the injector's stop, so it runs first: stop the
	// replays (they pause on ctx) and wait for them.
	defer func() {
		cancel()
		_ = r.replays.wait()
	}()
	if err := r.drive(dv); err != nil {
		return err
	}
	r.rec.endDT = r.clock.At(time.Now()).Sub(r.clock.Start)
	cancel()
	return r.finish(dv)
}

// openStores opens the store the runner samples, checks that it holds no
// earlier run, and opens the injector's own.
func (r *runner) openStores() (queue.Store, error) {
	st, err := queue.Open(r.storeDSN)
	if err != nil {
		return nil, fmt.Errorf("live: opening the store %s: %w", queue.RedactDSN(r.storeDSN), err)
	}
	r.st = st
	if err := r.checkEmpty(); err != nil {
		return nil, err
	}
	// The injector writes through a store of its own. On SQLite it
	// retries a busy store itself, every few hundred microseconds, instead
	// of SQLite's busy handler, which sleeps 10ms and more after a few
	// tries: that sleep would be arrival lateness.
	if path, ok := strings.CutPrefix(r.storeDSN, "sqlite:"); ok {
		return queue.OpenSQLite(path, queue.WithBusyTimeout(0))
	}
	return queue.Open(r.storeDSN)
}

// drive is the run's schedule as it unfolds: the faults and actions still
// to come, the next sample, and the injector until it is done.
type drive struct {
	ctx        context.Context
	injDone    chan error // the injector's result; nil once read
	sourceDone bool
	steps      []faultStep  // faults still to take or end, by drill time
	acts       []actionStep // actions still to start, by drill time
	nextSample time.Duration
}

// faultSteps lists each pipeline fault's going down and coming back, in
// drill-time order.
func faultSteps(d *drills.Drill) []faultStep {
	var steps []faultStep
	for i, f := range d.Faults {
		steps = append(steps, faultStep{at: f.At.D, i: i, down: true, grace: f.Graceful()},
			faultStep{at: f.At.D + f.Down.D, i: i})
	}
	sortSteps(steps)
	return steps
}

// next is the drill time of the next thing the schedule does.
func (dv *drive) next() time.Duration {
	next := dv.nextSample
	if len(dv.steps) > 0 {
		next = min(next, dv.steps[0].at)
	}
	if len(dv.acts) > 0 {
		next = min(next, dv.acts[0].at)
	}
	return next
}

// drive runs the schedule until the drill is over or duration + drain.
func (r *runner) drive(dv *drive) error {
	dv.nextSample = r.rec.interval
	hardEnd := r.d.Duration.D + r.d.Drain.D
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		dt := r.clock.At(time.Now()).Sub(r.clock.Start) // drill time elapsed
		if err := r.takeFaults(dv, dt); err != nil {
			return err
		}
		r.startActions(dv, dt)
		if dt >= dv.nextSample {
			over, err := r.sample(dv, dt)
			if err != nil || over {
				return err
			}
		}
		if dt >= hardEnd {
			return nil
		}
		resetTimer(timer, max(0, r.clock.Wall(dv.next()-dt)))
		if err := r.waitNext(dv, timer); err != nil {
			return err
		}
	}
}

// takeFaults takes down, or brings back, the processes of every fault step
// due by drill time dt.
func (r *runner) takeFaults(dv *drive, dt time.Duration) error {
	for len(dv.steps) > 0 && dv.steps[0].at <= dt {
		s := dv.steps[0]
		dv.steps = dv.steps[1:]
		f := r.d.Faults[s.i]
		if !s.down {
			if err := r.spawnAll(r.faultProcesses(f)); err != nil {
				return err
			}
			continue
		}
		if err := r.faultDown(f, s.grace, dt); err != nil {
			return err
		}
	}
	return nil
}

// faultDown stops fault f's processes at drill time dt, gracefully or not,
// records the restart with the attempts it may have caught in flight, and
// watches the deliveries it left delayed.
func (r *runner) faultDown(f drills.Fault, grace bool, dt time.Duration) error {
	var inFlight int64
	if grace {
		inFlight = r.inFlightBound(r.clock.Now())
	}
	for _, n := range r.faultProcesses(f) {
		if err := r.stop(n, grace); err != nil {
			return err
		}
	}
	if !grace {
		inFlight = r.inFlightBound(r.clock.Now())
	}
	delayed, err := r.watchDelayed()
	if err != nil {
		return err
	}
	fmt.Fprintf(r.logw, "live: %s at %v drill time: %d deliveries delayed, their run_at watched until due\n", f.Kind, dt.Round(time.Millisecond), delayed)
	r.restarts = append(r.restarts, reports.Restart{AtS: dt.Seconds(), DownS: f.Down.D.Seconds(), Graceful: grace, InFlight: inFlight})
	fmt.Fprintf(r.logw, "live: %s at %v drill time: at most %d attempts in flight\n", f.Kind, dt.Round(time.Millisecond), inFlight)
	return nil
}

// startActions starts every action due by drill time dt.
func (r *runner) startActions(dv *drive, dt time.Duration) {
	for len(dv.acts) > 0 && dv.acts[0].at <= dt {
		r.replays.start(dv.ctx, dv.acts[0].replay)
		fmt.Fprintf(r.logw, "live: dlq-replay (action %d) at %v drill time\n", r.d.Replays()[dv.acts[0].replay]+1, dt.Round(time.Millisecond))
		dv.acts = dv.acts[1:]
	}
}

// sample samples the store at drill time dt and reports whether the drill
// is over: the source done, no fault or action to come, no replay running,
// a dispatcher up, nothing pending and every outage over.
func (r *runner) sample(dv *drive, dt time.Duration) (over bool, err error) {
	p, err := r.rec.sample(dt)
	if err != nil {
		return false, err
	}
	if err := r.checkRunAts(); err != nil {
		return false, err
	}
	dv.nextSample += r.rec.interval
	if r.opt.Progress != nil {
		r.opt.Progress(drills.Progress{DrillTime: dt, Total: r.d.Duration.D, Created: r.inj.created.Load(), DLQ: r.rec.lastDead})
	}
	return dv.sourceDone && len(dv.steps) == 0 && len(dv.acts) == 0 && !r.replays.running() && r.up() && p == 0 && r.outagesOver(dt), nil
}

// waitNext waits for the timer, the injector's end or a dispatcher's exit;
// an injector's error, or a dispatcher that exits on its own, ends the
// run.
func (r *runner) waitNext(dv *drive, timer *time.Timer) error {
	select {
	case <-timer.C:
	case err := <-dv.injDone:
		dv.sourceDone = true
		dv.injDone = nil
		if err != nil {
			return err
		}
	case c := <-r.exited:
		if !c.killed {
			r.procs[c.n-1] = nil
			return fmt.Errorf("live: dispatcher process %d exited on its own: %v", c.n, <-c.done)
		}
	}
	return nil
}

// finish waits for the injector and the replays once the drill is over,
// checks the watched deliveries a last time and stops the dispatchers.
func (r *runner) finish(dv *drive) error {
	if dv.injDone != nil {
		err := <-dv.injDone
		dv.injDone = nil
		if err != nil && !errors.Is(err, context.Canceled) {
			return err
		}
	}
	if err := r.replays.wait(); err != nil {
		return err
	}
	// What is still watched has not come due yet; the last check counts
	// the ones that did.
	if err := r.checkRunAts(); err != nil {
		return err
	}
	for n := 1; n <= r.processes(); n++ {
		if err := r.stop(n, true); err != nil {
			return err
		}
	}
	return nil
}

// checkEmpty refuses a store that already holds deliveries: the run's
// accounting reads every row as its own.
func (r *runner) checkEmpty() error {
	ctx, cancel := context.WithTimeout(context.Background(), storeCallTimeout)
	defer cancel()
	c, err := r.st.Counts(ctx, time.Now())
	if err != nil {
		return fmt.Errorf("live: reading the store %s: %w", queue.RedactDSN(r.storeDSN), err)
	}
	if n := c.Total(); n > 0 {
		return fmt.Errorf("live: the store %s already holds %d deliveries; a live run needs an empty one (a fresh database or schema)", queue.RedactDSN(r.storeDSN), n)
	}
	return nil
}

// watchDelayed adds the deliveries delayed now (run_at in the future) to
// the run_at watch and returns how many there are. It runs while the
// restarted processes are down; a delayed delivery is not due, so no
// process still up may move it either.
func (r *runner) watchDelayed() (int, error) {
	now := r.clock.Now()
	ctx, cancel := context.WithTimeout(context.Background(), storeCallTimeout)
	defer cancel()
	runAts, err := r.st.RunAts(ctx)
	if err != nil {
		return 0, fmt.Errorf("live: reading delayed deliveries: %w", err)
	}
	type delayed struct {
		id    string
		runAt time.Time
	}
	var ds []delayed
	for id, ra := range runAts {
		if ra.After(now) {
			ds = append(ds, delayed{id, ra})
		}
	}
	// The soonest due are watched first.
	slices.SortFunc(ds, func(a, b delayed) int { return cmp.Or(a.runAt.Compare(b.runAt), cmp.Compare(a.id, b.id)) })
	if r.runAtWatch == nil {
		r.runAtWatch = map[string]time.Time{}
	}
	for _, d := range ds {
		if _, ok := r.runAtWatch[d.id]; ok || len(r.runAtWatch) < MaxRunAtWatch {
			r.runAtWatch[d.id] = d.runAt
		}
	}
	return len(ds), nil
}

// checkRunAts compares the watched deliveries with the store: one whose
// run_at has not come yet must still be pending with the same run_at. Once
// due it leaves the watch, counted as kept.
func (r *runner) checkRunAts() error {
	if len(r.runAtWatch) == 0 || !r.up() {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeCallTimeout)
	defer cancel()
	cur, err := r.st.RunAts(ctx)
	if err != nil {
		return fmt.Errorf("live: checking run_at: %w", err)
	}
	// Read the clock after the query: a delivery still in the future now
	// was in the future while the query read it, so no dispatcher could
	// have been entitled to touch it.
	now := r.clock.Now()
	for id, ra := range r.runAtWatch {
		if !ra.After(now) {
			r.runAtKept++
			delete(r.runAtWatch, id)
			continue
		}
		got, ok := cur[id]
		if ok && got.Equal(ra) {
			continue
		}
		r.runAtMoved++
		delete(r.runAtWatch, id)
		if len(r.runAtExample) < maxRunAtMovedShown {
			what := "ended before it was due"
			if ok {
				what = fmt.Sprintf("run_at moved by %v", got.Sub(ra))
			}
			r.runAtExample = append(r.runAtExample, fmt.Sprintf("%s (due at %v drill time) %s", id, ra.Sub(r.clock.Start).Round(time.Millisecond), what))
		}
	}
	return nil
}

func sortSteps(s []faultStep) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j].at < s[j-1].at; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// outagesOver reports whether every scripted outage has ended at drill time dt.
func (r *runner) outagesOver(dt time.Duration) bool {
	for _, sp := range r.specs {
		for _, o := range sp.Outages {
			if dt < o.End() {
				return false
			}
		}
	}
	return true
}

// PartnerURL is the URL of member m of cohort on a partner server at base.
func PartnerURL(base, cohort string, m int) string {
	return base + "/p/" + cohort + "/" + strconv.Itoa(m)
}
