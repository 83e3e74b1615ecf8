package external

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/stormdrill/stormdrill/drills"
	"github.com/stormdrill/stormdrill/drills/children"
	"github.com/stormdrill/stormdrill/fakepartner"
)

// Harness limits.
const (
	// BootMargin is how long after the system is ready drill time 0 begins.
	BootMargin = 300 * time.Millisecond
	// MaxObservations bounds the attempts one run records; past it the run
	// fails rather than report a partial count.
	MaxObservations = 2_000_000
	// MaxDeadLetters bounds the dead letters one run records.
	MaxDeadLetters = 1_000_000
	// MaxDeliveries bounds the deliveries one run creates.
	MaxDeliveries = 2_000_000
	buildTimeout  = 10 * time.Minute
	// StateDirName is the directory under the run directory that the
	// harness empties before each run and names in STORMDRILL_STATE_DIR.
	StateDirName = "system-state"
)

// ErrTooMany is returned when a run outgrows MaxObservations, MaxDeadLetters
// or MaxDeliveries.
var ErrTooMany = errors.New("external: the run outgrew the harness's bounds")

// Options tune an external run.
// ErrPartnerListen is a partner_server.listen that cannot be served: an
// address other machines can reach without a token. It is the drill's
// (or the environment's) mistake, not the run's.
var ErrPartnerListen = errors.New("external")

type Options struct {
	// DrillDir is the drill file's directory: system.dir and relative
	// commands are resolved from it. "" means the working directory.
	DrillDir string
	// Env is added to the system's environment (and to ${...} expansion).
	Env map[string]string
	// Log receives the system's output and the harness's notes; nil discards.
	Log io.Writer
	// Progress, if set, is called now and then.
	Progress func(drills.Progress)
}

// delivery is one delivery the harness created.
type delivery struct {
	id      string
	sub     int32         // index into the subscriber layout
	created time.Duration // drill time: the scheduled arrival
	refused bool          // the ingest refused it for good
}

// record is what the harness created and what the partner side saw.
type record struct {
	mu        sync.Mutex
	obs       []fakepartner.Observation
	dead      []fakepartner.DeadLetter
	overflow  bool
	deadExtra int64

	dels      []delivery
	byID      map[string]int32
	deadSeen  map[string]bool
	resolved  []bool // delivered (a commit) or dead-lettered, as seen so far
	resolvedN int
}

func newRecord() *record { return &record{byID: map[string]int32{}, deadSeen: map[string]bool{}} }

// add registers a delivery before its event is sent, so that its first
// attempt can be identified however fast it comes.
func (r *record) add(d delivery) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.dels) >= MaxDeliveries {
		r.overflow = true
		return false
	}
	r.byID[d.id] = int32(len(r.dels))
	r.dels = append(r.dels, d)
	r.resolved = append(r.resolved, false)
	return true
}

func (r *record) refuse(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if i, ok := r.byID[id]; ok {
		r.dels[i].refused = true
		r.resolveLocked(id)
	}
}

func (r *record) resolveLocked(id string) {
	if i, ok := r.byID[id]; ok && !r.resolved[i] {
		r.resolved[i] = true
		r.resolvedN++
	}
}

// pending is how many created deliveries are not resolved yet.
func (r *record) pending() (created, pending int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.dels), len(r.dels) - r.resolvedN
}

func (r *record) observe(o fakepartner.Observation) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.obs) >= MaxObservations {
		r.overflow = true
		return
	}
	r.obs = append(r.obs, o)
	if o.Commit {
		r.resolveLocked(o.Key)
	}
}

func (r *record) deadLetter(d fakepartner.DeadLetter) {
	r.mu.Lock()
	defer r.mu.Unlock()
	// A dead-letter command lists the whole DLQ each time it runs: the
	// first report of an id is kept.
	if r.deadSeen[d.ID] {
		return
	}
	if len(r.dead) >= MaxDeadLetters {
		r.deadExtra++
		return
	}
	r.dead = append(r.dead, d)
	r.deadSeen[d.ID] = true
	r.resolveLocked(d.ID)
}

// harness plays the partners, runs the system and injects events.
type harness struct {
	d       *drills.Drill
	sys     *drills.System
	opt     Options
	dir     string // run directory, absolute
	workdir string
	log     io.Writer
	specs   []fakepartner.Spec
	srv     *fakepartner.Server
	base    string // partner server base URL
	env     env
	rec     *record
	ing     ingester
	// runID is in every event and delivery id of the run (see eventID).
	runID string

	listedAt time.Time // the dead-letter command's last run

	procMu sync.Mutex
	proc   *process
	file   *os.File // jsonl file
	start  time.Time

	// scripts (verify) answer requests per (cohort, member); calls counts
	// the requests each got, so a script can answer the first differently.
	scriptMu sync.Mutex
	scripts  map[string]func(call int) fakepartner.Scripted
	calls    map[string]int
}

// CheckPartnerServer checks, before anything is bound, that the drill's
// partner server can listen where it asks to: an address other machines
// can reach needs the token in the environment (partner_server.token_env).
func CheckPartnerServer(d *drills.Drill) error {
	_, _, err := partnerServer(d)
	return err
}

// partnerServer returns the drill's partner_server table with defaults and
// the token from the environment.
func partnerServer(d *drills.Drill) (drills.PartnerServer, string, error) {
	ps := d.PartnerServer
	ps.Listen = cmp.Or(ps.Listen, drills.DefaultPartnerListen)
	ps.TokenEnv = cmp.Or(ps.TokenEnv, fakepartner.TokenEnv)
	token := os.Getenv(ps.TokenEnv)
	if _, err := fakepartner.CheckListen(ps.Listen, token); err != nil {
		return ps, "", fmt.Errorf("%w: partner_server.listen: %v (for a drill, the token comes from $%s)", ErrPartnerListen, err, ps.TokenEnv)
	}
	return ps, token, nil
}

// newHarness sets up an external run of d in dir: the partners' server,
// and what the system under drill is given.
func newHarness(d *drills.Drill, dir string, opt Options) (*harness, error) {
	if !d.IsExternal() {
		return nil, fmt.Errorf("external: drill %s has mode %q, not \"external\"", d.Name, d.Mode)
	}
	specs, err := d.PartnerSpecs()
	if err != nil {
		return nil, err
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	h := &harness{d: d, sys: &d.System, opt: opt, dir: dir, specs: specs, rec: newRecord(), log: opt.Log, scripts: map[string]func(int) fakepartner.Scripted{}, calls: map[string]int{}}
	if h.log == nil {
		h.log = io.Discard
	}
	base := opt.DrillDir
	if base == "" {
		base = "."
	}
	if h.workdir, err = filepath.Abs(d.SystemDir(base)); err != nil {
		return nil, err
	}
	token, err := h.startPartnerServer()
	if err != nil {
		return nil, err
	}
	if err := h.prepareSystem(token); err != nil {
		h.srv.Close()
		return nil, err
	}
	return h, nil
}

// startPartnerServer starts the partners' server where partner_server
// says: loopback unless the drill opts into a reachable address with a
// token from the environment, which it returns.
func (h *harness) startPartnerServer() (token string, err error) {
	ps, token, err := partnerServer(h.d)
	if err != nil {
		return "", err
	}
	if h.runID, err = newRunID(); err != nil {
		return "", err
	}
	h.srv, err = fakepartner.NewServer(h.specs, fakepartner.ServerOptions{
		Seed: h.d.Seed, KeyHeader: h.sys.KeyHeader, AttemptHeader: h.sys.AttemptHeader, RunID: h.runID,
		Observe: h.rec.observe, OnDeadLetter: h.rec.deadLetter, Script: h.script,
		ControlToken: token,
	})
	if err != nil {
		return "", fmt.Errorf("external: partner server: %w", err)
	}
	l, err := fakepartner.Listen(ps.Listen, token)
	if err != nil {
		return "", fmt.Errorf("external: partner server: %w", err)
	}
	go func() { _ = h.srv.Serve(l) }()
	h.base = ps.PartnerBaseURL(l.Addr())
	return token, nil
}

// prepareSystem makes what the system under drill is given: a fresh state
// directory, its environment and the way events reach it.
func (h *harness) prepareSystem(token string) error {
	// A fresh, empty directory for the system's own state (its queue, say)
	// each run, so that a run directory used again does not hand the
	// system the last run's deliveries; restarts within the run keep it.
	stateDir := filepath.Join(h.dir, StateDirName)
	if err := os.RemoveAll(stateDir); err != nil {
		return fmt.Errorf("external: clearing %s: %w", stateDir, err)
	}
	if err := os.MkdirAll(stateDir, 0o755); err != nil {
		return err
	}
	if err := h.makeEnv(stateDir, token); err != nil {
		return err
	}
	r, err := newRenderer(h.sys)
	if err != nil {
		return err
	}
	h.ing, err = h.newIngester(r)
	return err
}

// makeEnv sets the environment the system's commands run in.
func (h *harness) makeEnv(stateDir, token string) error {
	h.env = env{
		"STORMDRILL_STATE_DIR":       stateDir,
		"STORMDRILL_PARTNER_URL":     h.base,
		"STORMDRILL_DEAD_LETTER_URL": h.base + "/dead-letters",
		"STORMDRILL_ALERT_URL":       h.base + "/alerts",
		"STORMDRILL_RUN_DIR":         h.dir,
	}
	// The partners as NAME:COUNT,…, for a system that must be told its
	// endpoints (stormdrill dispatch --partner-layout); verify brings its own.
	var layout []string
	for _, sp := range h.specs {
		layout = append(layout, fmt.Sprintf("%s:%d", sp.Name, sp.Count))
	}
	h.env["STORMDRILL_PARTNER_LAYOUT"] = strings.Join(layout, ",")
	// The running stormdrill, so that a drill can start `stormdrill
	// dispatch` as its system without a build step.
	if exe, err := os.Executable(); err == nil {
		h.env["STORMDRILL_EXECUTABLE"] = exe
	}
	if token != "" {
		// The system reports dead letters and alerts with it.
		h.env[fakepartner.TokenEnv] = token
	}
	for k, v := range h.opt.Env {
		h.env[k] = v
	}
	if len(h.sys.Start) > 0 {
		addr, err := freeLoopbackAddr()
		if err != nil {
			return err
		}
		h.env["STORMDRILL_INGEST_ADDR"] = addr
		h.env["STORMDRILL_INGEST_URL"] = "http://" + addr + "/events"
	}
	return nil
}

// newIngester returns how events reach the system (system.ingest): its
// ingest command, a JSON-lines file or its stdin, or HTTP.
func (h *harness) newIngester(r *renderer) (ingester, error) {
	switch h.sys.Ingest {
	case "command":
		return &commandIngest{e: h.env, dir: h.workdir, argv: h.sys.IngestCommand, r: r}, nil
	case "jsonl":
		return h.newJSONLIngest(r)
	}
	u := h.env.expand(h.sys.IngestURL)
	if strings.Contains(u, "${") || u == "" {
		return nil, fmt.Errorf("external: system.ingest_url %q: nothing to expand it with (the harness sets STORMDRILL_INGEST_URL only when it starts the system)", h.sys.IngestURL)
	}
	hi := &httpIngest{url: u, r: r, client: &http.Client{Timeout: ingestTimeout}}
	for _, hd := range h.sys.IngestHeaders {
		name, val, _ := strings.Cut(hd, ":")
		hi.headers = append(hi.headers, [2]string{strings.TrimSpace(name), h.env.expand(strings.TrimSpace(val))})
	}
	return hi, nil
}

// newJSONLIngest appends events to system.jsonl_path, or without one
// writes them to the started system's stdin.
func (h *harness) newJSONLIngest(r *renderer) (ingester, error) {
	j := &jsonlIngest{r: r}
	if h.sys.JSONLPath == "" {
		j.w = func() io.Writer {
			h.procMu.Lock()
			defer h.procMu.Unlock()
			if h.proc == nil || h.proc.stdin == nil {
				return nil
			}
			return h.proc.stdin
		}
		return j, nil
	}
	p := h.env.expand(h.sys.JSONLPath)
	if !filepath.IsAbs(p) {
		p = filepath.Join(h.workdir, p)
	}
	var err error
	if h.file, err = openJSONL(p); err != nil {
		return nil, fmt.Errorf("external: system.jsonl_path: %w", err)
	}
	j.w = func() io.Writer { return h.file }
	return j, nil
}

func (h *harness) close() {
	h.procMu.Lock()
	p := h.proc
	h.proc = nil
	h.procMu.Unlock()
	if p != nil {
		_ = p.kill(false)
	}
	if h.file != nil {
		h.file.Close()
	}
	h.srv.Close()
}

// build runs system.build once, outside the drill's clock.
func (h *harness) build() error {
	if len(h.sys.Build) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
	defer cancel()
	cmd := h.env.command(ctx, h.workdir, h.sys.Build)
	cmd.Stdout, cmd.Stderr = h.log, h.log
	if err := children.Run(cmd); err != nil {
		return fmt.Errorf("external: system.build %q: %w", strings.Join(h.sys.Build, " "), err)
	}
	return nil
}

// startSystem starts the system (if the drill starts it) and waits for it.
func (h *harness) startSystem() error {
	if len(h.sys.Start) == 0 {
		return nil
	}
	withStdin := h.sys.Ingest == "jsonl" && h.sys.JSONLPath == ""
	p, err := startProcess(h.env, h.workdir, h.sys.Start, withStdin, h.sys.ReadyURL, h.sys.ReadyLog, h.sys.ReadyTimeout.D, h.log)
	if err != nil {
		return err
	}
	h.procMu.Lock()
	h.proc = p
	h.procMu.Unlock()
	return nil
}

// stopSystem stops the started system: SIGTERM when graceful, else SIGKILL.
func (h *harness) stopSystem(graceful bool) error {
	h.procMu.Lock()
	p := h.proc
	h.proc = nil
	h.procMu.Unlock()
	if p == nil {
		if len(h.sys.Start) == 0 {
			return ErrNeedsProcess
		}
		return nil
	}
	return p.kill(graceful)
}

// crash is an exit of the started system that the drill did not script.
type crash struct {
	at     time.Duration // drill time it was seen
	status string        // "signal: killed", "exit status 1"
	tail   []string      // its last lines of output
}

// exited returns the started system's exit if it exited on its own, and
// forgets the process; nil while it runs.
func (h *harness) exited(dt time.Duration) *crash {
	h.procMu.Lock()
	defer h.procMu.Unlock()
	p := h.proc
	if p == nil {
		return nil
	}
	select {
	case <-p.done:
		h.proc = nil
		status := "exit status 0"
		if p.err != nil {
			status = p.err.Error()
		}
		return &crash{at: dt, status: status, tail: p.lastLines()}
	default:
		return nil
	}
}

// drillTime is the drill time at wall time t.
func (h *harness) drillTime(t time.Time) time.Duration { return t.Sub(h.start) }

// script is the partner server's Script hook: verify's scripted answers,
// by cohort (every member) and by the call's number at that member.
func (h *harness) script(cohort string, member int, _ string) fakepartner.Scripted {
	h.scriptMu.Lock()
	defer h.scriptMu.Unlock()
	f := h.scripts[cohort]
	if f == nil {
		return fakepartner.Scripted{}
	}
	k := fmt.Sprintf("%s/%d", cohort, member)
	h.calls[k]++
	return f(h.calls[k])
}

// called is how many calls have arrived at one member of a scripted
// cohort, counted as they arrive (before their answer).
func (h *harness) called(cohort string, member int) int {
	h.scriptMu.Lock()
	defer h.scriptMu.Unlock()
	return h.calls[fmt.Sprintf("%s/%d", cohort, member)]
}

func (h *harness) partnerURL(cohort string, member int) string {
	return fmt.Sprintf("%s/p/%s/%d", h.base, cohort, member)
}

// listDeadLetters runs system.dead_letter_command and records what it prints.
func (h *harness) listDeadLetters() error {
	if h.sys.DeadLetters != "command" {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := h.env.command(ctx, h.workdir, h.sys.DeadLetterCommand)
	cmd.Stderr = h.log
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := children.Start(cmd); err != nil {
		return fmt.Errorf("external: system.dead_letter_command: %w", err)
	}
	defer children.Done(cmd)
	perr := parseDeadLetters(io.LimitReader(out, 1<<30), h.rec.deadLetter)
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("external: system.dead_letter_command: %w", err)
	}
	return perr
}

// deadLetterPoll is how often a dead_letter_command runs while the harness
// waits for deliveries to resolve.
const deadLetterPoll = time.Second

// pollDeadLetters runs the dead-letter command (dead_letters = "command")
// at most every deadLetterPoll, or now when force; an error is logged and
// the listing at the end reports it.
func (h *harness) pollDeadLetters(force bool) {
	if h.sys.DeadLetters != "command" || (!force && time.Since(h.listedAt) < deadLetterPoll) {
		return
	}
	h.listedAt = time.Now()
	if err := h.listDeadLetters(); err != nil {
		fmt.Fprintln(h.log, "external:", err)
	}
}

// runIDBytes is the size of a run id: 6 hex digits, a one-in-16-million
// chance that two runs share one.
const runIDBytes = 3

// newRunID draws a run id. It is random, not derived from the seed: the
// point is that two runs of the same drill differ, so that a system whose
// queue outlives a run and drops ids it has seen (many dedup by id) takes
// the next run's deliveries as new ones.
func newRunID() (string, error) {
	b := make([]byte, runIDBytes)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("external: drawing a run id: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// eventID is event n's id: "evt-RUNID-000123"; its deliveries' ids add the
// subscriber, "evt-RUNID-000123:acme-0". A simulation's and a live run's
// ids have no run id ("evt-000123:acme-0"): nothing outlives those runs,
// and the same seed must give the same ids.
func (h *harness) eventID(n int64) string {
	return fmt.Sprintf("evt-%s-%06d", h.runID, n)
}
