package dispatchcore

import (
	"fmt"
	"testing"
	"time"

	"github.com/stormdrill/stormdrill/model"
)

// t0 is an arbitrary fixed origin: the core reads no clock.
var t0 = time.Unix(1_700_000_000, 0)

func at(d time.Duration) time.Time { return t0.Add(d) }

var (
	ok200  = model.Outcome{Status: 200}
	fail   = model.Outcome{Status: 503} // retryable
	reject = model.Outcome{Status: 422} // permanent
)

// flatPolicy retries after exactly delay (no growth, no jitter), up to
// maxAttempts (0: no limit), so a test knows every RunAt in advance.
func flatPolicy(delay time.Duration, maxAttempts int) *model.Policy {
	return &model.Policy{MaxAttempts: maxAttempts, Backoff: model.Backoff{Base: delay, Cap: delay, Multiplier: 1}}
}

// partners returns n partner configs sharing one policy and a concurrency
// limit.
func partners(n, concurrency int, pol *model.Policy) []PartnerConfig {
	pcs := make([]PartnerConfig, n)
	for i := range pcs {
		pcs[i] = PartnerConfig{Name: fmt.Sprintf("p%d", i), Policy: pol, Concurrency: concurrency}
	}
	return pcs
}

func mustNew(t testing.TB, cfg Config) *Core {
	t.Helper()
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// offerN offers n items to partner p, due at runAt, created at t0.
func offerN(t testing.TB, c *Core, p int32, n int, runAt time.Time) []*Item {
	t.Helper()
	items := make([]*Item, n)
	for i := range items {
		items[i] = &Item{Ref: uint64(p)<<32 | uint64(i), Partner: p, FirstSeen: t0.UnixNano(), RunAt: runAt.UnixNano()}
		if err := c.Offer(items[i], runAt.UnixNano()); err != nil {
			t.Fatalf("offer %d: %v", items[i].Ref, err)
		}
	}
	return items
}

// startAll calls Next until it returns nil and returns what it started. A
// dead-letter verdict is a test failure here; tests that expect one call
// Next themselves.
func startAll(t testing.TB, c *Core, now time.Time) []*Item {
	t.Helper()
	var out []*Item
	for {
		it, v, reason := c.Next(now.UnixNano())
		if it == nil {
			return out
		}
		if v != Start {
			t.Fatalf("Next dead-lettered %d (%s), want a start", it.Ref, reason)
		}
		out = append(out, it)
	}
}

func perPartner(items []*Item) map[int32]int {
	m := map[int32]int{}
	for _, it := range items {
		m[it.Partner]++
	}
	return m
}
