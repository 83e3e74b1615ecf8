package model_test

import (
	"fmt"
	"time"

	"github.com/stormdrill/stormdrill/model"
)

// Capped exponential backoff: the delay before each retry, before jitter,
// doubles from Base until it reaches Cap. Full jitter then draws the delay
// uniformly below that; u is the uniform number the caller draws from the
// drill's seed.
func ExampleBackoff() {
	b := model.Backoff{Base: 2 * time.Second, Cap: 10 * time.Second, Jitter: model.JitterFull}
	for n := 1; n <= 4; n++ {
		fmt.Println(n, b.Capped(n), b.Delay(n, 0, model.JitterKeyOf("evt-1:acme-0"), 0.5))
	}
	// Output:
	// 1 2s 1s
	// 2 4s 2s
	// 3 8s 4s
	// 4 10s 5s
}

// A consecutive-failure breaker opens after Threshold failures, refuses
// calls for Cooldown, then admits a probe half-open; the probe's success
// closes it. Time is passed in, so the example steps it by hand.
func ExampleBreaker() {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	br := model.NewBreaker(model.BreakerSettings{Trip: model.TripConsecutive, Threshold: 3, Cooldown: 30 * time.Second})
	for i := range 3 {
		gen, _ := br.Admit(t0.Add(time.Duration(i) * time.Second))
		br.Record(gen, false, t0.Add(time.Duration(i)*time.Second))
	}
	_, ok := br.Admit(t0.Add(10 * time.Second))
	fmt.Println(br.State(t0.Add(10*time.Second)), "admits:", ok)
	gen, ok := br.Admit(t0.Add(40 * time.Second))
	fmt.Println(br.State(t0.Add(40*time.Second)), "admits:", ok)
	br.Record(gen, true, t0.Add(41*time.Second))
	fmt.Println(br.State(t0.Add(41 * time.Second)))
	// Output:
	// open admits: false
	// half-open admits: true
	// closed
}
