package dispatchcore

import (
	"testing"
	"time"

	"github.com/stormdrill/stormdrill/model"
)

// TestBudgetDeferDoesNotLeakHalfOpenProbe is a regression test: Next used to
// take the half-open breaker's only probe (Admit) before asking the budget,
// then defer the retry without making the attempt. The probe was never
// recorded, so the breaker stayed half-open with no probe left and the
// partner was parked for good: even a first attempt, which the budget
// never refuses, could not start.
func TestBudgetDeferDoesNotLeakHalfOpenProbe(t *testing.T) {
	pcs := partners(1, 0, flatPolicy(time.Second, 0))
	br := newBreaker(1, 10*time.Second)
	pcs[0].Breaker = br
	pcs[0].Budget = model.NewBudget(2, 0.1) // one failure leaves it refusing retries
	c := mustNew(t, Config{Workers: 4, Partners: pcs})

	// Given a retry whose failure opened the breaker and drained the budget,
	retry := offerN(t, c, 0, 1, t0)[0]
	startAll(t, c, t0)
	c.Complete(retry, fail, t0.UnixNano(), 0)
	if br.State(t0) != model.StateOpen || pcs[0].Budget.AllowRetry() {
		t.Fatalf("setup: breaker %v, budget allows retries %v", br.State(t0), pcs[0].Budget.AllowRetry())
	}
	// When the cooldown ends and the budget defers that retry,
	if got := startAll(t, c, at(10*time.Second)); len(got) != 0 || c.Deferrals != 1 {
		t.Fatalf("after cooldown started %d, deferrals %d; want 0 and 1", len(got), c.Deferrals)
	}
	// Then the probe is still free: a new first attempt goes out as the probe,
	first := offerN(t, c, 0, 1, at(10*time.Second+500*time.Millisecond))[0]
	got := startAll(t, c, at(10*time.Second+500*time.Millisecond))
	if len(got) != 1 || got[0] != first {
		t.Fatalf("first attempt while half-open: started %v, want it as the probe", got)
	}
	// and its success closes the breaker.
	c.Complete(first, ok200, at(11*time.Second).UnixNano(), 0)
	if s := br.State(at(11 * time.Second)); s != model.StateClosed {
		t.Fatalf("breaker %v after the probe succeeded, want closed", s)
	}
}

// TestBudgetDeadLetterDoesNotLeakHalfOpenProbe: the same leak through
// on_exhausted = dead-letter.
func TestBudgetDeadLetterDoesNotLeakHalfOpenProbe(t *testing.T) {
	pol := flatPolicy(time.Second, 0)
	pol.OnExhaustedDeadLetter = true
	pcs := partners(1, 0, pol)
	br := newBreaker(1, 10*time.Second)
	pcs[0].Breaker = br
	pcs[0].Budget = model.NewBudget(2, 0.1)
	c := mustNew(t, Config{Workers: 4, Partners: pcs})

	retry := &Item{Ref: 1, Attempts: 1, RunAt: t0.UnixNano()}
	pcs[0].Budget.RecordFailure()
	// Open the breaker with a first attempt that fails.
	opener := offerN(t, c, 0, 1, t0)[0]
	startAll(t, c, t0)
	c.Complete(opener, reject, t0.UnixNano(), 0) // permanent: dead-lettered, but counts on the breaker
	if br.State(t0) != model.StateOpen {
		t.Fatalf("setup: breaker %v, want open", br.State(t0))
	}
	retry.RunAt = at(10 * time.Second).UnixNano()
	c.Requeue(retry, at(10*time.Second).UnixNano())
	it, v, reason := c.Next(at(10 * time.Second).UnixNano())
	if it != retry || v != DeadLetter || reason != model.ReasonBudgetExhausted {
		t.Fatalf("Next = %v %v %q, want the retry dead-lettered budget-exhausted", it, v, reason)
	}
	first := offerN(t, c, 0, 1, at(10*time.Second))[0]
	if got := startAll(t, c, at(10*time.Second)); len(got) != 1 || got[0] != first {
		t.Fatalf("after the dead-letter started %v, want the first attempt as the probe", got)
	}
}
