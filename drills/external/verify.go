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
	// (a delivery killed mid-attempt is in flight, not delayed).
	verifyRestartPause = 300 * time.Millisecond
	// verifyAlertGrace bounds the wait, before the restart scenario's
	// kill, for the exhausted deliveries' alert.
	verifyAlertGrace   = 5 * time.Second
	restartSlack       = 50 * time.Millisecond
	restartJitterFloor = 0.8
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
}

// cohort names of the verify layout.
const (
	cohortNeighbour = "neighbour"
	cohortSick      = "sick"
	// cohortRestartRef fails once, like the restart scenario, but only
	// after the restart: its delays, measured in the same fresh process,
	// are what the restarted deliveries' delays are compared with.
	cohortRestartRef = "restart-reference"
)

// verifyDrill is d with the checklist's partners in place of its own.
func verifyDrill(d *drills.Drill, n int, timeout time.Duration) *drills.Drill {
	v := *d
	v.Faults, v.Gates = nil, nil
	lat := drills.Latency{Dist: "constant", Value: drills.Duration{D: 5 * time.Millisecond, Set: true}}
	add := func(name string, count int, outages ...drills.Outage) {
		v.Partners = append(v.Partners, drills.Partner{Name: name, Count: count, Latency: lat, OnBusy: "queue", Outages: outages})
	}
	v.Partners = nil
	for _, s := range Scenarios {
		if s != ScenarioSick {
			add(s, n)
		}
	}
	add(cohortNeighbour, n)
	add(cohortRestartRef, n)
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
	if err := h.startSystem(); err != nil {
		return nil, err
	}
	v := &verifier{h: h, n: opt.PerCase, opt: opt, want: map[string]bool{}}
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
	s[ScenarioRestart] = s[ScenarioRetry]
	s[cohortRestartRef] = s[ScenarioRetry]
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

// settled reports whether phase one has seen what it needs to judge.
func (v *verifier) settled(view map[string][]member, permanentSince time.Time) bool {
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
	// A lost answer is judged once the system retried and then finished
	// with the delivery either way.
	lostDone := func(m *member) bool { return len(m.obs) >= 2 && (m.answered2xx() || len(m.dead) > 0) }
	if !all(ScenarioClean, delivered) || !all(ScenarioRetry, delivered) || !all(ScenarioLostAnswer, lostDone) ||
		!all(ScenarioRetryAfter, delivered) || !all(cohortNeighbour, delivered) {
		return false
	}
	if deadLetters && (!all(ScenarioPermanent, func(m *member) bool { return len(m.dead) > 0 }) ||
		!all(ScenarioExhausted, func(m *member) bool { return len(m.dead) > 0 })) {
		return false
	}
	return time.Since(permanentSince) >= verifyPermanentSettle
}

func (v *verifier) wait(ctx context.Context, deadline time.Time, done func() bool) error {
	t := time.NewTicker(checkEvery)
	defer t.Stop()
	for !done() {
		if err := v.h.exited(); err != nil {
			return err
		}
		if time.Now().After(deadline) {
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

func (v *verifier) run() ([]Verdict, error) {
	h := v.h
	h.start = time.Now()
	h.srv.SetStart(h.start)
	ctx := context.Background()
	// Phase one: everything but the restart, at once.
	if err := v.inject(ctx, cohortSick, verifySickMembers); err != nil {
		return nil, err
	}
	for _, s := range Scenarios {
		if s == ScenarioSick || s == ScenarioRestart {
			continue
		}
		if err := v.inject(ctx, s, v.n); err != nil {
			return nil, err
		}
	}
	permanentSince := time.Now()
	time.Sleep(200 * time.Millisecond) // the sick subscriber's calls are hanging by now
	if err := v.inject(ctx, cohortNeighbour, v.n); err != nil {
		return nil, err
	}
	phase1End := time.Now().Add(v.opt.Timeout)
	if err := v.wait(ctx, phase1End, func() bool { v.h.pollDeadLetters(false); return v.settled(v.view(), permanentSince) }); err != nil {
		return nil, err
	}
	v.h.pollDeadLetters(true)
	phase1 := v.view()
	if len(h.sys.Start) > 0 && v.runs(ScenarioRestart) && v.runs(ScenarioExhausted) {
		// The restart scenario kills the system: give the alert due for
		// the exhausted deliveries time to arrive first, or a sender that
		// batches alerts (stormdrill dispatch sends at most one batch a
		// second) loses it to the kill and fails a scenario it passes.
		_ = v.wait(ctx, time.Now().Add(verifyAlertGrace), func() bool { return exhaustedAlerts(h.srv.Alerts()) > 0 })
	}

	// Phase two: a restart while deliveries wait out their first delay.
	restart := Verdict{Scenario: ScenarioRestart}
	if len(h.sys.Start) == 0 {
		restart.Skipped = true
		restart.Evidence = "skipped: " + ErrNeedsProcess.Error()
	} else if v.runs(ScenarioRestart) {
		if err := v.inject(ctx, ScenarioRestart, v.n); err != nil {
			return nil, err
		}
		end := time.Now().Add(v.opt.Timeout)
		failedOnce := func() bool {
			ms := v.view()[ScenarioRestart]
			for i := range ms {
				if len(ms[i].obs) == 0 || ms[i].obs[0].Done.IsZero() {
					return false
				}
			}
			return true
		}
		if err := v.wait(ctx, end, failedOnce); err != nil {
			return nil, err
		}
		time.Sleep(verifyRestartPause)
		killedAt := time.Now()
		if err := h.stopSystem(false); err != nil {
			return nil, err
		}
		if err := h.startSystem(); err != nil {
			return nil, err
		}
		fmt.Fprintf(h.log, "verify: killed and restarted the system in %v\n", time.Since(killedAt).Round(time.Millisecond))
		if err := v.inject(ctx, cohortRestartRef, v.n); err != nil {
			return nil, err
		}
		if err := v.wait(ctx, end, func() bool {
			view := v.view()
			for _, c := range []string{ScenarioRestart, cohortRestartRef} {
				for _, m := range view[c] {
					if !m.answered2xx() {
						return false
					}
				}
			}
			return true
		}); err != nil {
			return nil, err
		}
		view := v.view()
		restart = judgeRestart(view[ScenarioRestart], view[cohortRestartRef], killedAt)
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
	}
	return pass("%d deliveries: the partner processed the first call and dropped its answer (the next one's too); every retry carried the same key; one state change each", len(ms))
}

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

func judgeRestart(ms, reference []member, killedAt time.Time) Verdict {
	var shortest time.Duration = -1
	for _, m := range reference {
		if len(m.obs) >= 2 && (shortest < 0 || m.gap(1) < shortest) {
			shortest = m.gap(1)
		}
	}
	if shortest < 0 {
		return fail("no reference: deliveries failed once after the restart were not retried")
	}
	// The reference's shortest delay may be the top of the system's
	// jitter and a restarted delivery's the bottom: River's ±10% puts
	// them 0.82× apart. restartJitterFloor leaves room for that, and a
	// retry brought forward to the restart (about verifyRestartPause plus
	// the restart) still falls below it.
	floor := time.Duration(restartJitterFloor*float64(shortest)) - restartSlack
	var gaps []string
	for i, m := range ms {
		switch {
		case len(m.obs) < 2:
			return fail("delivery %d: no retry after the restart (%d attempt(s)): delayed deliveries were lost or stuck", i, len(m.obs))
		case m.obs[1].Arrived.Before(killedAt):
			return fail("delivery %d: retried before the restart; the restart did not catch it delayed", i)
		case m.gap(1) < floor:
			return fail("delivery %d: retried %v after its failure, sooner than the %v delay of a failure after the restart: the restart brought it forward", i,
				m.gap(1).Round(time.Millisecond), shortest.Round(time.Millisecond))
		case !m.answered2xx():
			return fail("delivery %d: not delivered after the restart", i)
		}
		gaps = append(gaps, m.gap(1).Round(time.Millisecond).String())
	}
	return pass("%d deliveries delayed by a 503 across a SIGKILL and restart: retried after %s (failed after the restart: at least %v)",
		len(ms), strings.Join(gaps, ", "), shortest.Round(time.Millisecond))
}

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
