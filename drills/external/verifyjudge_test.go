package external

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stormdrill/stormdrill/fakepartner"
)

// attempts builds a member's observations: each attempt arrives at the
// given offset from t0 and takes 5 ms; status 0 is a lost answer.
func attempts(t0 time.Time, key string, at []time.Duration, status []int, commit []bool) member {
	var m member
	for i, a := range at {
		o := fakepartner.Observation{Key: key, Arrived: t0.Add(a), Done: t0.Add(a + 5*time.Millisecond), Status: status[i], Commit: commit[i]}
		o.Duplicate = commit[i] && i > 0 && commit[0]
		m.obs = append(m.obs, o)
	}
	m.id = key
	return m
}

func TestJudgeLostAnswer(t *testing.T) {
	t0 := time.Unix(1000, 0)
	s := time.Second
	lost := func(deadLetter bool, at []time.Duration, status []int) []member {
		commit := make([]bool, len(at))
		for i := range commit {
			commit[i] = true
		}
		m := attempts(t0, "k1", at, status, commit)
		if deadLetter {
			m.dead = []fakepartner.DeadLetter{{ID: "k1", Reason: "max-attempts", Attempts: len(at)}}
		}
		return []member{m}
	}
	cases := []struct {
		name string
		ms   []member
		pass bool
		says string
	}{
		{"retried until answered", lost(false, []time.Duration{0, 2 * s, 5 * s}, []int{0, 0, 200}), true, "one state change each"},
		{"processed, then dead-lettered", lost(true, []time.Duration{0, 2 * s}, []int{0, 0}), false, "processed by the partner, then dead-lettered (\"max-attempts\" after 2 attempts)"},
		{"answered and dead-lettered too", lost(true, []time.Duration{0, 2 * s, 5 * s}, []int{0, 0, 200}), false, "then dead-lettered"},
		{"given up silently", lost(false, []time.Duration{0, 2 * s}, []int{0, 0}), false, "stopped after 2 attempts without an answer"},
		{"never retried", lost(false, []time.Duration{0}, []int{0}), false, "want a retry"},
		{"new key per attempt", func() []member {
			ms := lost(false, []time.Duration{0, 2 * s, 5 * s}, []int{0, 0, 200})
			ms[0].obs[2].Key, ms[0].obs[2].Duplicate = "k1#3", false
			return ms
		}(), false, "idempotency key changed"},
	}
	for _, c := range cases {
		v := judgeLostAnswer(c.ms)
		if v.Pass != c.pass || !strings.Contains(v.Evidence, c.says) {
			t.Errorf("%s: pass=%v %q; want pass=%v and %q", c.name, v.Pass, v.Evidence, c.pass, c.says)
		}
	}
}

func TestJudgeRestart(t *testing.T) {
	t0 := time.Unix(1000, 0)
	s := time.Second
	killedAt, readyAt := t0.Add(300*time.Millisecond), t0.Add(1300*time.Millisecond)
	cohort := func(n int, first time.Duration, gap func(i int) time.Duration) []member {
		out := make([]member, n)
		for i := range out {
			out[i] = attempts(t0, fmt.Sprint("d", i), []time.Duration{first, first + 5*time.Millisecond + gap(i)}, []int{503, 200}, []bool{false, true})
		}
		return out
	}
	n, m := restartCohorts(DefaultVerifyPerCase)
	// The control failed after the restart, 2 s in; its delays run 15 to 34 s.
	control := cohort(m, 2*s, func(i int) time.Duration { return 15*s + time.Duration(i)*s })
	cases := []struct {
		name      string
		restarted []member
		pass      bool
		says      string
	}{
		{"on time, widely jittered", cohort(n, 0, func(i int) time.Duration { return 25600*time.Millisecond - time.Duration(i)*3*s }), true, "0 of 4 retried before every one of 20 control retries"},
		{"some sooner than every control retry", cohort(n, 0, func(i int) time.Duration { return time.Duration(14+i*10) * s }), true, "1 of 4"},
		{"brought forward to the restart", cohort(n, 0, func(i int) time.Duration { return 1400 * time.Millisecond }), false, "the restart brought retries forward"},
		{"retried before the kill", cohort(n, 0, func(i int) time.Duration { return 100 * time.Millisecond }), false, "retried before the restart"},
		{"back too late to judge", cohort(n, -15*s, func(i int) time.Duration { return 20 * s }), false, "not judged"},
		{"lost by the restart", func() []member {
			ms := cohort(n, 0, func(i int) time.Duration { return 20 * s })
			ms[2].obs = ms[2].obs[:1]
			return ms
		}(), false, "delivery 2: no retry after the restart"},
	}
	for _, c := range cases {
		v := judgeRestart(c.restarted, control, 1, killedAt, readyAt)
		if v.Pass != c.pass || !strings.Contains(v.Evidence, c.says) {
			t.Errorf("%s: pass=%v %q; want pass=%v and %q", c.name, v.Pass, v.Evidence, c.pass, c.says)
		}
	}
	lostControl := append([]member(nil), control...)
	lostControl[0] = attempts(t0, "c0", []time.Duration{2 * s}, []int{503}, []bool{false})
	if v := judgeRestart(cohort(n, 0, func(int) time.Duration { return 20 * s }), lostControl, 1, killedAt, readyAt); v.Pass || !strings.Contains(v.Evidence, "control delivery 0") {
		t.Errorf("a control delivery never retried: pass=%v %q", v.Pass, v.Evidence)
	}
}

// TestVerifierWaits: the verifier's waits poll a condition on the clock,
// so under synctest they take the fake time the condition needs, the
// pause before the restart takes exactly its length, and a deadline or a
// cancelled context ends a wait.
func TestVerifierWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &harness{calls: map[string]int{}}
		v := &verifier{h: h}
		ctx := context.Background()

		// Every sick member called at 700 ms: the wait ends at the next poll.
		call := func(members int) {
			h.scriptMu.Lock()
			for m := 0; m < members; m++ {
				h.calls[fmt.Sprintf("%s/%d", cohortSick, m)]++
			}
			h.scriptMu.Unlock()
		}
		start := time.Now()
		time.AfterFunc(700*time.Millisecond, func() { call(verifySickMembers) }) // on the bubble's clock
		if err := v.wait(ctx, time.Now().Add(verifySickCallWait), v.sickHanging()); err != nil {
			t.Fatal(err)
		}
		if got := time.Since(start); got < 700*time.Millisecond || got > 700*time.Millisecond+checkEvery {
			t.Errorf("the wait for the sick subscriber's calls took %v, want 700ms to one poll more", got)
		}
		// Two members called at 300 ms, none after (a limit per partner):
		// the wait ends verifySickQuiet later.
		h.calls = map[string]int{}
		start = time.Now()
		time.AfterFunc(300*time.Millisecond, func() { call(2) })
		if err := v.wait(ctx, time.Now().Add(verifySickCallWait), v.sickHanging()); err != nil {
			t.Fatal(err)
		}
		if got, want := time.Since(start), 300*time.Millisecond+verifySickQuiet; got < want || got > want+checkEvery {
			t.Errorf("the wait for two hanging calls took %v, want %v to one poll more", got, want)
		}
		// No call at all: the bound.
		h.calls = map[string]int{}
		start = time.Now()
		if err := v.wait(ctx, time.Now().Add(verifySickCallWait), v.sickHanging()); err != nil {
			t.Fatal(err)
		}
		if got := time.Since(start); got != verifySickCallWait {
			t.Errorf("the wait for a sick subscriber never called took %v, want %v", got, verifySickCallWait)
		}

		start = time.Now()
		if err := v.wait(ctx, time.Now().Add(verifyRestartPause), func() bool { return false }); err != nil {
			t.Fatal(err)
		}
		if got := time.Since(start); got != verifyRestartPause {
			t.Errorf("the pause took %v, want %v", got, verifyRestartPause)
		}

		cctx, cancel := context.WithCancel(ctx)
		time.AfterFunc(time.Second, cancel)
		if err := v.wait(cctx, time.Now().Add(time.Hour), func() bool { return false }); !errors.Is(err, context.Canceled) {
			t.Errorf("a cancelled wait returned %v", err)
		}
	})
}

// The scripted sick cohort is counted but answered by its behaviour.
func TestVerifySickScriptIsNoAnswer(t *testing.T) {
	h := &harness{scripts: map[string]func(int) fakepartner.Scripted{}, calls: map[string]int{}}
	v := &verifier{h: h}
	v.script()
	for i := 0; i < 3; i++ {
		if sc := h.script(cohortSick, 5, "k"); sc != (fakepartner.Scripted{}) {
			t.Fatalf("the sick cohort got a scripted answer %+v", sc)
		}
	}
	if n := h.called(cohortSick, 5); n != 3 {
		t.Errorf("called = %d after 3 calls", n)
	}
	if sc := h.script(ScenarioRetry, 0, "k"); sc.Status != http.StatusServiceUnavailable {
		t.Errorf("the retry scenario's first call: %+v", sc)
	}
}

func TestRestartOrdinal(t *testing.T) {
	ms := time.Millisecond
	s := time.Second
	cases := []struct {
		name      string
		exhausted [][]time.Duration
		needed    time.Duration
		want      int
	}{
		{"River: 1 s then 16 s, a restart of about a second", [][]time.Duration{{1000 * ms, 16 * s}, {950 * ms, 17 * s}, {1050 * ms, 15 * s}}, 2200 * ms, 2},
		{"wide jitter: the first delay will do", [][]time.Duration{{15 * s, 30 * s}, {44 * s, 20 * s}}, 1200 * ms, 1},
		{"exactly long enough", [][]time.Duration{{2 * s, 4 * s}}, 2 * s, 1},
		{"nothing long enough: the longest", [][]time.Duration{{500 * ms, 900 * ms, 700 * ms}}, 2 * s, 2},
		{"one member got further", [][]time.Duration{{1 * s}, {1 * s, 20 * s}}, 2 * s, 2},
		{"nothing measured", nil, time.Second, 1},
		{"no retries", [][]time.Duration{nil, nil}, time.Second, 1},
	}
	for _, c := range cases {
		if got := restartOrdinal(c.exhausted, c.needed); got != c.want {
			t.Errorf("%s: ordinal %d, want %d", c.name, got, c.want)
		}
	}
}
