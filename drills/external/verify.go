package external

import (
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/stormdrill/stormdrill/drills"
	"github.com/stormdrill/stormdrill/fakepartner"
)

// The release checklist of a retrying delivery pipeline: each scenario is
// one cohort of fake partners with scripted answers, one delivery per
// member, so that every attempt is attributed by where it went even when
// the system changes the idempotency key.
const (
	ScenarioClean      = "clean-first-attempt"
	ScenarioRetry      = "retry-then-success"
	ScenarioPermanent  = "permanent-422-dead-lettered"
	ScenarioExhausted  = "exhausted-retries-dead-lettered"
	ScenarioLostAnswer = "lost-answer-one-state-change"
	ScenarioRestart    = "restart-brings-no-retry-forward"
	ScenarioRetryAfter = "retry-after-honoured"
	ScenarioSick       = "sick-subscriber-isolated"
)

// Scenarios lists the checklist in the order it is reported.
var Scenarios = []string{ScenarioClean, ScenarioRetry, ScenarioPermanent, ScenarioExhausted,
	ScenarioLostAnswer, ScenarioRestart, ScenarioRetryAfter, ScenarioSick}

// Verify defaults and bounds.
const (
	DefaultVerifyTimeout  = 2 * time.Minute
	DefaultVerifyPerCase  = 3
	MaxVerifyPerCase      = 100
	verifyRetryAfter      = 3 // seconds: the Retry-After the throttled partner sends
	verifySickMembers     = 8
	verifyPermanentSettle = 3 * time.Second // how long a 422 is watched for a retry
	// verifyRestartPause is how long after a failed first attempt the
	// system is killed: long enough for it to have recorded the failure
	// (a delivery killed mid-attempt is in flight, not delayed). Nothing
	// outside the system shows that moment, so this one wait is on the
	// clock.
	verifyRestartPause = 300 * time.Millisecond
	// verifyAlertGrace bounds the wait, before the restart scenario's
	// kill, for the exhausted deliveries' alert.
	verifyAlertGrace = 5 * time.Second
	// verifySickCallWait bounds the wait for the sick subscriber's calls
	// to arrive (and hang) before the neighbours' deliveries are injected;
	// once some have, the wait ends when verifySickQuiet passes without a
	// new one (a system that limits calls per partner starts no more).
	verifySickCallWait = 2 * time.Second
	verifySickQuiet    = 200 * time.Millisecond
	lostAnswerDrops    = 2
)

// Verdict is one scenario's result with its evidence.
type Verdict struct {
	Scenario string
	Pass     bool
	Skipped  bool // the scenario could not run (it names why)
	Evidence string
}

// VerifyOptions tune `stormdrill verify`.
type VerifyOptions struct {
	Options
	Timeout  time.Duration // per phase; default DefaultVerifyTimeout
	PerCase  int           // deliveries per scenario; default DefaultVerifyPerCase
	SLO      time.Duration // healthy latency objective of the sick-subscriber scenario; default the drill's
	OnlyRuns []string      // scenario names to run; empty: all
	// OnScenario, if set, is called as each scenario starts and ends
	// (from the goroutine that called Verify).
	OnScenario func(ScenarioProgress)
}

// ScenarioProgress is one step of a verify run: a scenario started or
// ended. The scenarios of the first phase run at once; each ends when the
// harness has seen what it needs to judge it (or the phase timed out).
type ScenarioProgress struct {
	Scenario string
	Ended    bool
	At       time.Duration // since the checklist began
	Took     time.Duration // when Ended: since the scenario started
	Note     string        // when Ended: "settled", "timed out" or why it was skipped
}

// cohort names of the verify layout.
const (
	cohortNeighbour = "neighbour"
	cohortSick      = "sick"
	// cohortRestartControl fails once, like the restart scenario, but
	// only after the restart: its delays, measured in the same fresh
	// process, are the control the restarted deliveries' delays are
	// ranked against (see ruleRestart).
	cohortRestartControl = "restart-control"
)

// verifyDrill is d with the checklist's partners in place of its own: n
// members per scenario, and the restart scenario's cohorts sized for its
// rule (restartCohorts).
func verifyDrill(d *drills.Drill, n int, timeout time.Duration) *drills.Drill {
	v := *d
	v.Faults, v.Gates = nil, nil
	lat := drills.Latency{Dist: "constant", Value: drills.Duration{D: 5 * time.Millisecond, Set: true}}
	add := func(name string, count int, outages ...drills.Outage) {
		v.Partners = append(v.Partners, drills.Partner{Name: name, Count: count, Latency: lat, OnBusy: "queue", Outages: outages})
	}
	v.Partners = nil
	delayed, control := restartCohorts(n)
	for _, s := range Scenarios {
		switch s {
		case ScenarioSick:
		case ScenarioRestart:
			add(s, delayed)
		default:
			add(s, n)
		}
	}
	add(cohortNeighbour, n)
	add(cohortRestartControl, control)
	add(cohortSick, verifySickMembers, drills.Outage{Start: drills.Duration{Set: true}, For: drills.Duration{D: 4*timeout + time.Hour, Set: true}, Kind: "timeout"})
	v.Source.To = nil
	return &v
}

// Verify runs the release checklist against the system the drill describes
// (its [system] table; its partners, source and gates are not used). dir
// receives the system's files and the harness's notes.
func Verify(d *drills.Drill, dir string, opt VerifyOptions) ([]Verdict, error) {
	if opt.Timeout <= 0 {
		opt.Timeout = DefaultVerifyTimeout
	}
	if opt.PerCase <= 0 {
		opt.PerCase = DefaultVerifyPerCase
	}
	if opt.PerCase > MaxVerifyPerCase {
		return nil, fmt.Errorf("verify: at most %d deliveries per scenario", MaxVerifyPerCase)
	}
	if opt.SLO <= 0 {
		opt.SLO = d.SLO.DeliveryLatency.D
	}
	vd := verifyDrill(d, opt.PerCase, opt.Timeout)
	h, err := newHarness(vd, dir, opt.Options)
	if err != nil {
		return nil, err
	}
	defer h.close()
	if err := h.build(); err != nil {
		return nil, err
	}
	booting := time.Now()
	if err := h.startSystem(); err != nil {
		return nil, err
	}
	v := &verifier{h: h, n: opt.PerCase, opt: opt, want: map[string]bool{}, started: map[string]time.Time{}, ended: map[string]bool{},
		boot: time.Since(booting)}
	for _, s := range opt.OnlyRuns {
		v.want[s] = true
	}
	v.subs, _ = drills.Subscribers(vd, h.specs)
	v.script()
	return v.run()
}

type verifier struct {
	h    *harness
	n    int
	opt  VerifyOptions
	want map[string]bool
	subs []drills.LiveSubscriber
	seq  int

	boot    time.Duration        // how long the system took to start and be ready
	began   time.Time            // the checklist's start
	started map[string]time.Time // by scenario
	ended   map[string]bool      // by scenario: its end was reported
}

func (v *verifier) runs(s string) bool { return len(v.want) == 0 || v.want[s] }

// script sets the scripted answers: by scenario, by the member's call number.
func (v *verifier) script() {
	s := v.h.scripts
	unavailable := fakepartner.Scripted{Status: http.StatusServiceUnavailable}
	s[ScenarioRetry] = func(call int) fakepartner.Scripted {
		if call == 1 {
			return unavailable
		}
		return fakepartner.Scripted{}
	}
	// Not an answer: counting the sick subscriber's calls as they arrive
	// tells the verifier when they hang.
	s[cohortSick] = func(int) fakepartner.Scripted { return fakepartner.Scripted{} }
	s[ScenarioPermanent] = func(int) fakepartner.Scripted { return fakepartner.Scripted{Status: http.StatusUnprocessableEntity} }
	s[ScenarioExhausted] = func(int) fakepartner.Scripted { return unavailable }
	// The answer is cut off (fakepartner's cutAnswer, which an HTTP client
	// does not resend by itself), twice: the system must retry, and its
	// second attempt is seen failing too.
	s[ScenarioLostAnswer] = func(call int) fakepartner.Scripted { return fakepartner.Scripted{DropAnswer: call <= lostAnswerDrops} }
	s[ScenarioRetryAfter] = func(call int) fakepartner.Scripted {
		if call == 1 {
			return fakepartner.Scripted{Status: http.StatusTooManyRequests, RetryAfter: fmt.Sprint(verifyRetryAfter)}
		}
		return fakepartner.Scripted{}
	}
}

// inject sends one event per delivery to members 0..count-1 of cohort.
func (v *verifier) inject(ctx context.Context, cohort string, count int) error {
	h := v.h
	for m := 0; m < count; m++ {
		si := -1
		for i, s := range v.subs {
			if h.specs[s.Cohort].Name == cohort && s.Member == m {
				si = i
			}
		}
		now := time.Now()
		v.seq++
		ev := &Event{EventID: fmt.Sprintf("vfy-%04d", v.seq), Created: now.UTC()}
		id := ev.EventID + ":" + v.subs[si].Name
		ev.Deliveries = []Delivery{{ID: id, URL: h.partnerURL(cohort, m)}}
		h.rec.add(delivery{id: id, sub: int32(si), created: h.drillTime(now)})
		if _, err := h.ing.send(ctx, ev); err != nil {
			return fmt.Errorf("verify: the system's ingest refused %s: %w", ev.EventID, err)
		}
	}
	return nil
}

// member is what one member of a scenario cohort saw.
type member struct {
	obs  []fakepartner.Observation // by arrival
	dead []fakepartner.DeadLetter
	id   string // the delivery id sent to it
}

func (m *member) answered2xx() bool {
	for _, o := range m.obs {
		if o.Status >= 200 && o.Status < 300 {
			return true
		}
	}
	return false
}

// gap is the time from the end of attempt i-1 to the arrival of attempt i.
func (m *member) gap(i int) time.Duration { return m.obs[i].Arrived.Sub(m.obs[i-1].Done) }

// view groups the observations and dead letters by scenario and member.
func (v *verifier) view() map[string][]member {
	h := v.h
	h.rec.mu.Lock()
	obs := append([]fakepartner.Observation(nil), h.rec.obs...)
	dead := append([]fakepartner.DeadLetter(nil), h.rec.dead...)
	dels := append([]delivery(nil), h.rec.dels...)
	h.rec.mu.Unlock()
	sort.SliceStable(obs, func(i, j int) bool { return obs[i].Arrived.Before(obs[j].Arrived) })
	out := map[string][]member{}
	for _, sp := range h.specs {
		out[sp.Name] = make([]member, sp.Count)
	}
	for _, o := range obs {
		if ms := out[o.Cohort]; o.Member < len(ms) {
			ms[o.Member].obs = append(ms[o.Member].obs, o)
		}
	}
	where := map[string][2]int{}
	for _, d := range dels {
		s := v.subs[d.sub]
		where[d.id] = [2]int{s.Cohort, s.Member}
		out[h.specs[s.Cohort].Name][s.Member].id = d.id
	}
	for _, dl := range dead {
		if w, ok := where[dl.ID]; ok {
			ms := out[h.specs[w[0]].Name]
			ms[w[1]].dead = append(ms[w[1]].dead, dl)
		}
	}
	return out
}

// phaseOne lists the scenarios that run at once in the first phase.
func phaseOne() []string {
	var out []string
	for _, s := range Scenarios {
		if s != ScenarioRestart {
			out = append(out, s)
		}
	}
	return out
}

// scenarioSettled reports whether the first phase has seen what it needs
// to judge scenario s.
func (v *verifier) scenarioSettled(s string, view map[string][]member, permanentSince time.Time) bool {
	deadLetters := v.h.sys.DeadLetters != "none"
	all := func(cohort string, ok func(m *member) bool) bool {
		ms := view[cohort]
		for i := range ms {
			if !ok(&ms[i]) {
				return false
			}
		}
		return true
	}
	delivered := func(m *member) bool { return m.answered2xx() }
	dead := func(m *member) bool { return !deadLetters || len(m.dead) > 0 }
	switch s {
	case ScenarioClean, ScenarioRetry, ScenarioRetryAfter:
		return all(s, delivered)
	case ScenarioSick:
		return all(cohortNeighbour, delivered)
	case ScenarioLostAnswer:
		// A lost answer is judged once the system retried and then
		// finished with the delivery either way.
		return all(s, func(m *member) bool { return len(m.obs) >= 2 && (m.answered2xx() || len(m.dead) > 0) })
	case ScenarioExhausted:
		return all(s, dead)
	case ScenarioPermanent:
		return all(s, dead) && time.Since(permanentSince) >= verifyPermanentSettle
	}
	return true
}

// wait polls done until it holds, the deadline passes, ctx ends or the
// system exits (an error). It waits on the clock only between polls.
func (v *verifier) wait(ctx context.Context, deadline time.Time, done func() bool) error {
	t := time.NewTicker(checkEvery)
	defer t.Stop()
	for !done() {
		if c := v.h.exited(0); c != nil {
			return fmt.Errorf("external: the system exited on its own: %s", c.status)
		}
		if !time.Now().Before(deadline) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
	return nil
}

// startScenario notes that scenario s has started.
func (v *verifier) startScenario(s string) {
	now := time.Now()
	v.started[s] = now
	if v.opt.OnScenario != nil && v.runs(s) {
		v.opt.OnScenario(ScenarioProgress{Scenario: s, At: now.Sub(v.began)})
	}
}

// endScenario notes, once, that scenario s has ended.
func (v *verifier) endScenario(s, note string) {
	if v.ended[s] {
		return
	}
	v.ended[s] = true
	now := time.Now()
	if v.opt.OnScenario != nil && v.runs(s) {
		took := time.Duration(0)
		if t, ok := v.started[s]; ok {
			took = now.Sub(t)
		}
		v.opt.OnScenario(ScenarioProgress{Scenario: s, Ended: true, At: now.Sub(v.began), Took: took, Note: note})
	}
}

// sickHanging returns a condition that holds once the sick subscriber's
// calls hang: every member has been called, or some have and no new call
// came for verifySickQuiet.
func (v *verifier) sickHanging() func() bool {
	last, changed := -1, time.Now()
	return func() bool {
		calls, members := 0, 0
		for m := 0; m < verifySickMembers; m++ {
			if n := v.h.called(cohortSick, m); n > 0 {
				calls += n
				members++
			}
		}
		now := time.Now()
		if calls != last {
			last, changed = calls, now
		}
		return members == verifySickMembers || (calls > 0 && now.Sub(changed) >= verifySickQuiet)
	}
}

func (v *verifier) run() ([]Verdict, error) {
	h := v.h
	h.start = time.Now()
	v.began = h.start
	h.srv.SetStart(h.start)
	ctx := context.Background()
	// Phase one: everything but the restart, at once.
	v.startScenario(ScenarioSick)
	if err := v.inject(ctx, cohortSick, verifySickMembers); err != nil {
		return nil, err
	}
	for _, s := range phaseOne() {
		if s == ScenarioSick {
			continue
		}
		v.startScenario(s)
		if err := v.inject(ctx, s, v.n); err != nil {
			return nil, err
		}
	}
	permanentSince := time.Now()
	// The neighbours go in once the sick subscriber's calls hang (or the
	// system has not called it within verifySickCallWait: the scenario
	// then says how many calls it saw).
	if err := v.wait(ctx, time.Now().Add(verifySickCallWait), v.sickHanging()); err != nil {
		return nil, err
	}
	if err := v.inject(ctx, cohortNeighbour, v.n); err != nil {
		return nil, err
	}
	phase1End := time.Now().Add(v.opt.Timeout)
	settled := func() bool {
		v.h.pollDeadLetters(false)
		view := v.view()
		all := true
		for _, s := range phaseOne() {
			if v.scenarioSettled(s, view, permanentSince) {
				v.endScenario(s, "settled")
			} else {
				all = false
			}
		}
		return all
	}
	if err := v.wait(ctx, phase1End, settled); err != nil {
		return nil, err
	}
	for _, s := range phaseOne() {
		v.endScenario(s, "timed out")
	}
	v.h.pollDeadLetters(true)
	phase1 := v.view()
	if len(h.sys.Start) > 0 && v.runs(ScenarioRestart) && v.runs(ScenarioExhausted) {
		// The restart scenario kills the system: give the alert due for
		// the exhausted deliveries time to arrive first, or a sender that
		// batches alerts (stormdrill dispatch sends at most one batch a
		// second) loses it to the kill and fails a scenario it passes.
		if err := v.wait(ctx, time.Now().Add(verifyAlertGrace), func() bool { return exhaustedAlerts(h.srv.Alerts()) > 0 }); err != nil {
			return nil, err
		}
	}

	// Phase two: a restart while deliveries wait out their first delay.
	restart := Verdict{Scenario: ScenarioRestart}
	if len(h.sys.Start) == 0 {
		restart.Skipped = true
		restart.Evidence = "skipped: " + ErrNeedsProcess.Error()
		v.endScenario(ScenarioRestart, restart.Evidence)
	} else if v.runs(ScenarioRestart) {
		var err error
		if restart, err = v.runRestart(ctx, phase1[ScenarioExhausted]); err != nil {
			return nil, err
		}
	}
	_ = h.stopSystem(true)

	alerts := h.srv.Alerts()
	var out []Verdict
	for _, s := range Scenarios {
		var vd Verdict
		switch s {
		case ScenarioClean:
			vd = judgeClean(phase1[s])
		case ScenarioRetry:
			vd = judgeRetry(phase1[s])
		case ScenarioPermanent:
			vd = judgePermanent(phase1[s], h.sys.DeadLetters)
		case ScenarioExhausted:
			vd = judgeExhausted(phase1[s], h.sys.DeadLetters, alerts)
		case ScenarioLostAnswer:
			vd = judgeLostAnswer(phase1[s])
		case ScenarioRestart:
			vd = restart
		case ScenarioRetryAfter:
			vd = judgeRetryAfter(phase1[s])
		case ScenarioSick:
			vd = judgeSick(phase1[cohortNeighbour], phase1[cohortSick], v.h, v.opt.SLO)
		}
		vd.Scenario = s
		if v.runs(s) {
			out = append(out, vd)
		}
	}
	return out, nil
}

// restartOrdinal picks which delay the restart scenario spans: the first
// ordinal f (the delay after the f-th failed attempt) whose every delay in
// the exhausted scenario's deliveries (503 at every attempt, the same
// script) was at least needed, so that a system restarted within it can
// be told from one that retries at once when it is back. exhausted gives
// the delays by ordinal (index 0: after the 1st attempt); with none long
// enough, the ordinal with the longest shortest delay (the scenario will
// say it could not judge), and 1 when nothing was measured.
func restartOrdinal(exhausted [][]time.Duration, needed time.Duration) int {
	best, bestMin := 1, time.Duration(-1)
	for f := 1; ; f++ {
		shortest, seen := time.Duration(-1), false
		for _, gaps := range exhausted {
			if len(gaps) >= f {
				seen = true
				if shortest < 0 || gaps[f-1] < shortest {
					shortest = gaps[f-1]
				}
			}
		}
		if !seen {
			return best
		}
		if shortest >= needed {
			return f
		}
		if shortest > bestMin {
			best, bestMin = f, shortest
		}
	}
}

// delays is each member's delays between attempts, by ordinal.
func delays(ms []member) [][]time.Duration {
	out := make([][]time.Duration, len(ms))
	for i := range ms {
		for k := 1; k < len(ms[i].obs); k++ {
			out[i] = append(out[i], ms[i].gap(k))
		}
	}
	return out
}

// runRestart is the second phase: deliveries fail f times (the f-th
// failure's delay chosen by restartOrdinal from the first phase), the
// system is killed (SIGKILL) while they wait out that delay and started
// again, and a control cohort fails f times in the restarted system.
func (v *verifier) runRestart(ctx context.Context, exhausted []member) (Verdict, error) {
	h := v.h
	// Twice the kill's pause and the system's first start: a restart may
	// take longer than the first start (it reads back its queue).
	f := restartOrdinal(delays(exhausted), 2*(verifyRestartPause+v.boot))
	failing := func(call int) fakepartner.Scripted {
		if call <= f {
			return fakepartner.Scripted{Status: http.StatusServiceUnavailable}
		}
		return fakepartner.Scripted{}
	}
	h.scriptMu.Lock()
	h.scripts[ScenarioRestart], h.scripts[cohortRestartControl] = failing, failing
	h.scriptMu.Unlock()
	v.startScenario(ScenarioRestart)
	delayed, control := restartCohorts(v.n)
	if err := v.inject(ctx, ScenarioRestart, delayed); err != nil {
		return Verdict{}, err
	}
	end := time.Now().Add(v.opt.Timeout)
	failed := func() bool {
		ms := v.view()[ScenarioRestart]
		for i := range ms {
			if len(ms[i].obs) < f || ms[i].obs[f-1].Done.IsZero() {
				return false
			}
		}
		return true
	}
	if err := v.wait(ctx, end, failed); err != nil {
		return Verdict{}, err
	}
	if err := v.wait(ctx, time.Now().Add(verifyRestartPause), func() bool { return false }); err != nil {
		return Verdict{}, err
	}
	killedAt := time.Now()
	if err := h.stopSystem(false); err != nil {
		return Verdict{}, err
	}
	if err := h.startSystem(); err != nil {
		return Verdict{}, err
	}
	readyAt := time.Now()
	fmt.Fprintf(h.log, "verify: killed and restarted the system in %v, %d failed attempts into its deliveries\n", readyAt.Sub(killedAt).Round(time.Millisecond), f)
	if err := v.inject(ctx, cohortRestartControl, control); err != nil {
		return Verdict{}, err
	}
	retried := func() bool {
		view := v.view()
		for _, c := range []string{ScenarioRestart, cohortRestartControl} {
			for _, m := range view[c] {
				if !m.answered2xx() {
					return false
				}
			}
		}
		return true
	}
	if err := v.wait(ctx, end, retried); err != nil {
		return Verdict{}, err
	}
	note := "settled"
	if !retried() {
		note = "timed out"
	}
	v.endScenario(ScenarioRestart, note)
	view := v.view()
	return judgeRestart(view[ScenarioRestart], view[cohortRestartControl], f, killedAt, readyAt), nil
}

func fail(format string, args ...any) Verdict { return Verdict{Evidence: fmt.Sprintf(format, args...)} }
func pass(format string, args ...any) Verdict {
	return Verdict{Pass: true, Evidence: fmt.Sprintf(format, args...)}
}

func judgeClean(ms []member) Verdict {
	for i, m := range ms {
		switch {
		case len(m.obs) == 0:
			return fail("delivery %d never reached the partner", i)
		case len(m.obs) > 1:
			return fail("delivery %d: %d attempts for a partner that answered 2xx at once", i, len(m.obs))
		case m.obs[0].Status != http.StatusOK:
			return fail("delivery %d: the attempt ended without the 200 sent", i)
		}
	}
	return pass("%d deliveries: one attempt each, answered 200", len(ms))
}

func judgeRetry(ms []member) Verdict {
	var gaps []string
	for i, m := range ms {
		switch {
		case len(m.obs) < 2:
			return fail("delivery %d: %d attempt(s) after a 503; want a retry", i, len(m.obs))
		case !m.answered2xx():
			return fail("delivery %d: retried %d times but never succeeded", i, len(m.obs)-1)
		}
		gaps = append(gaps, m.gap(1).Round(time.Millisecond).String())
	}
	return pass("%d deliveries: 503, then retried and delivered; first retry after %s", len(ms), strings.Join(gaps, ", "))
}

// judgePermanent: any retry of a 422 is wrong, so a correct system is
// never failed; the settle window only bounds what is seen (a retry later
// than verifyPermanentSettle passes unseen).
func judgePermanent(ms []member, source string) Verdict {
	for i, m := range ms {
		switch {
		case len(m.obs) == 0:
			return fail("delivery %d never reached the partner", i)
		case len(m.obs) > 1:
			return fail("delivery %d: retried a 422 (%d attempts, the second %v after the first)", i, len(m.obs), m.gap(1).Round(time.Millisecond))
		case source == "none":
			return fail("one attempt each, but no dead-letter source (system.dead_letters = \"none\"): the DLQ cannot be seen")
		case len(m.dead) == 0:
			return fail("delivery %d: not retried, but no dead letter reported", i)
		}
	}
	return pass("%d deliveries: one attempt each (422), no retry within %v, dead-lettered as %q", len(ms), verifyPermanentSettle, ms[0].dead[0].Reason)
}

// exhaustedAlerts counts the alerts that can be about the exhausted
// scenario's deliveries: those naming its partner, or no partner.
func exhaustedAlerts(alerts []fakepartner.ReceivedAlert) int {
	n := 0
	for _, a := range alerts {
		if a.Partner == "" || strings.Contains(a.Partner, ScenarioExhausted) {
			n++
		}
	}
	return n
}

func judgeExhausted(ms []member, source string, alerts []fakepartner.ReceivedAlert) Verdict {
	attempts := 0
	for i, m := range ms {
		switch {
		case len(m.obs) < 2:
			return fail("delivery %d: %d attempt(s) at a partner answering 503; want retries", i, len(m.obs))
		case source == "none":
			return fail("retried, but no dead-letter source (system.dead_letters = \"none\"): the DLQ cannot be seen")
		case len(m.dead) == 0:
			return fail("delivery %d: %d attempts and no dead letter reported (yet)", i, len(m.obs))
		}
		attempts = max(attempts, len(m.obs))
	}
	n := exhaustedAlerts(alerts)
	if n == 0 {
		other := make([]string, 0, min(len(alerts), 4))
		for _, a := range alerts[:min(len(alerts), 4)] {
			other = append(other, fmt.Sprintf("%s/%s ×%d", a.Partner, a.Reason, a.Count))
		}
		if len(other) > 0 {
			return fail("%d deliveries dead-lettered after up to %d attempts, but no alert for them reached the alert sink (it received %d other: %s)", len(ms), attempts, len(alerts), strings.Join(other, ", "))
		}
		return fail("%d deliveries dead-lettered after up to %d attempts, but no alert reached the alert sink", len(ms), attempts)
	}
	return pass("%d deliveries dead-lettered (%q) after up to %d attempts; %d alert(s)", len(ms), ms[0].dead[0].Reason, attempts, n)
}

func judgeLostAnswer(ms []member) Verdict {
	for i, m := range ms {
		if len(m.obs) < 2 {
			return fail("delivery %d: %d attempt(s) after its answer was lost; want a retry", i, len(m.obs))
		}
		keys := map[string]bool{}
		changes := 0
		for _, o := range m.obs {
			keys[o.Key] = true
			if o.Commit && !o.Duplicate {
				changes++
			}
		}
		if len(keys) > 1 || m.obs[0].Key == "" {
			ks := make([]string, 0, len(keys))
			for k := range keys {
				ks = append(ks, fmt.Sprintf("%q", k))
			}
			sort.Strings(ks)
			return fail("delivery %d: the idempotency key changed across attempts (%s): %d state changes at the partner", i, strings.Join(ks, ", "), changes)
		}
		if changes != 1 {
			return fail("delivery %d: %d state changes at the partner, want 1", i, changes)
		}
		if len(m.dead) > 0 {
			// The partner has it: a replay of this dead letter delivers it
			// again, and whoever reads the DLQ is told it failed.
			return fail("delivery %d: processed by the partner, then dead-lettered (%q after %d attempts): the dead-letter queue holds a delivery that was delivered",
				i, m.dead[0].Reason, len(m.obs))
		}
		if !m.answered2xx() {
			return fail("delivery %d: processed by the partner, but the system stopped after %d attempts without an answer and did not dead-letter it", i, len(m.obs))
		}
	}
	return pass("%d deliveries: the partner processed the first call and dropped its answer (the next one's too); every retry carried the same key; one state change each", len(ms))
}

// judgeRetryAfter takes its expectation from the partner's own answer
// (Retry-After: verifyRetryAfter). A correct system waits from the moment
// it has the answer, which is after the partner starts writing it, so its
// retry arrives later than the answer's end plus the delay less the time
// the partner takes to record that end: designed false failures none, the
// slack (retryAfterSlack) covering that recording.
func judgeRetryAfter(ms []member) Verdict {
	want := time.Duration(verifyRetryAfter) * time.Second
	var gaps []string
	for i, m := range ms {
		switch {
		case len(m.obs) < 2:
			return fail("delivery %d: %d attempt(s) after a 429; want a retry", i, len(m.obs))
		case m.gap(1) < want-retryAfterSlack:
			return fail("delivery %d: retried %v after a 429 with Retry-After: %d", i, m.gap(1).Round(time.Millisecond), verifyRetryAfter)
		case !m.answered2xx():
			return fail("delivery %d: never delivered", i)
		}
		gaps = append(gaps, m.gap(1).Round(time.Millisecond).String())
	}
	return pass("%d deliveries: Retry-After: %d honoured (retried after %s)", len(ms), verifyRetryAfter, strings.Join(gaps, ", "))
}

// judgeRestart applies ruleRestart: the deliveries delayed across the
// restart (ms) after their f-th failed attempt against the control failed
// f times after it; killedAt is the kill and readyAt the moment the
// restarted system was ready.
func judgeRestart(ms, control []member, f int, killedAt, readyAt time.Time) Verdict {
	var samples []restartSample
	for i, m := range ms {
		switch {
		case len(m.obs) <= f:
			return fail("delivery %d: no retry after the restart (%d attempt(s)): delayed deliveries were lost or stuck", i, len(m.obs))
		case m.obs[f].Arrived.Before(killedAt):
			return fail("delivery %d: retried before the restart; the restart did not catch it delayed", i)
		case !m.answered2xx():
			return fail("delivery %d: not delivered after the restart", i)
		}
		samples = append(samples, restartSample{Gap: m.gap(f), Back: readyAt.Sub(m.obs[f-1].Done)})
	}
	var ds []time.Duration
	for i, m := range control {
		if len(m.obs) <= f {
			return fail("control delivery %d, failed after the restart: %d attempt(s), no retry to compare with", i, len(m.obs))
		}
		ds = append(ds, m.gap(f))
	}
	if len(samples) == 0 || len(ds) == 0 {
		return fail("no deliveries to judge")
	}
	r := ruleRestart(samples, ds)
	var gaps []string
	for _, s := range samples {
		gaps = append(gaps, s.Gap.Round(time.Millisecond).String())
	}
	switch {
	case r.Forward:
		return fail("the restart brought retries forward: retried %s after their failure; %s", strings.Join(gaps, ", "), r)
	case !r.Judgeable:
		return fail("not judged: the system was ready again only %v after the failures, later than its shortest delay after attempt %d without a restart (%v), so a retry brought forward to the restart looks like one on time",
			readyAt.Sub(ms[0].obs[f-1].Done).Round(time.Millisecond), f, r.ControlMin.Round(time.Millisecond))
	}
	return pass("%d deliveries delayed by a 503 at attempt %d across a SIGKILL and restart: retried %s after their failure; %s",
		len(ms), f, strings.Join(gaps, ", "), r)
}

// judgeSick takes its expectation from the drill's declared SLO: the
// latency is the system's own (from just before the ingest call to the
// partner's answer), so a system that meets its SLO is never failed.
func judgeSick(neighbours, sick []member, h *harness, slo time.Duration) Verdict {
	calls := 0
	for _, m := range sick {
		calls += len(m.obs)
	}
	if calls == 0 {
		return fail("the sick subscriber was never called: not exercised")
	}
	h.rec.mu.Lock()
	created := map[string]time.Duration{}
	for _, d := range h.rec.dels {
		created[d.id] = d.created
	}
	h.rec.mu.Unlock()
	var worst time.Duration
	for i, m := range neighbours {
		var ok *fakepartner.Observation
		for k := range m.obs {
			if m.obs[k].Status >= 200 && m.obs[k].Status < 300 {
				ok = &m.obs[k]
				break
			}
		}
		if ok == nil {
			return fail("healthy delivery %d not delivered while the sick subscriber hung (%d hanging calls)", i, calls)
		}
		worst = max(worst, h.drillTime(ok.Done)-created[m.id])
	}
	if worst > slo {
		return fail("healthy latency reached %v with a sick subscriber hanging (SLO %v)", worst.Round(time.Millisecond), slo)
	}
	return pass("%d healthy deliveries, slowest %v (SLO %v), while %d calls hung at the sick subscriber", len(neighbours), worst.Round(time.Millisecond), slo, calls)
}

// WriteJUnit writes one test case per scenario.
func WriteJUnit(w io.Writer, suite string, vs []Verdict) error {
	type failure struct {
		Message string `xml:"message,attr"`
		Text    string `xml:",chardata"`
	}
	type skipped struct {
		Message string `xml:"message,attr"`
	}
	type tc struct {
		Name      string   `xml:"name,attr"`
		Classname string   `xml:"classname,attr"`
		Failure   *failure `xml:"failure,omitempty"`
		Skipped   *skipped `xml:"skipped,omitempty"`
		Out       string   `xml:"system-out,omitempty"`
	}
	type ts struct {
		XMLName  xml.Name `xml:"testsuite"`
		Name     string   `xml:"name,attr"`
		Tests    int      `xml:"tests,attr"`
		Failures int      `xml:"failures,attr"`
		Skipped  int      `xml:"skipped,attr"`
		Cases    []tc     `xml:"testcase"`
	}
	out := ts{Name: suite, Tests: len(vs)}
	for _, v := range vs {
		c := tc{Name: v.Scenario, Classname: "stormdrill.verify." + suite, Out: v.Evidence}
		switch {
		case v.Skipped:
			out.Skipped++
			c.Skipped = &skipped{Message: v.Evidence}
		case !v.Pass:
			out.Failures++
			c.Failure = &failure{Message: v.Evidence, Text: v.Evidence}
		}
		out.Cases = append(out.Cases, c)
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(out); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// ErrVerifyFailed is returned by callers when a scenario failed.
var ErrVerifyFailed = errors.New("a verify scenario failed")
