package dispatchcore_test

import (
	"fmt"
	"time"

	"github.com/stormdrill/stormdrill/model"
	"github.com/stormdrill/stormdrill/model/dispatchcore"
)

// The core makes no call and reads no clock: the caller offers deliveries,
// asks Next what to start at a time it passes in, makes the attempt
// itself, and reports the outcome with Complete. Here one worker serves
// one partner whose first answer is a 503; the policy retries it after a
// flat 2 s, and the retry succeeds.
func ExampleCore() {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	pol := &model.Policy{MaxAttempts: 3, Backoff: model.Backoff{Base: 2 * time.Second, Cap: 2 * time.Second, Multiplier: 1}}
	core, err := dispatchcore.New(dispatchcore.Config{Workers: 1,
		Partners: []dispatchcore.PartnerConfig{{Name: "acme-0", Policy: pol}}})
	if err != nil {
		fmt.Println(err)
		return
	}
	it := &dispatchcore.Item{Ref: 1, JitterKey: model.JitterKeyOf("evt-000001:acme-0"), FirstSeen: t0.UnixNano(), RunAt: t0.UnixNano()}
	if err := core.Offer(it, t0.UnixNano()); err != nil {
		fmt.Println(err)
		return
	}
	now := t0
	for _, status := range []int{503, 200} {
		got, verdict, _ := core.Next(now.UnixNano())
		fmt.Printf("at %v: delivery %d attempt %d (start: %v)\n", now.Sub(t0), got.Ref, got.Attempts, verdict == dispatchcore.Start)
		now = now.Add(100 * time.Millisecond) // the partner answers
		dec := core.Complete(got, model.Outcome{Status: status}, now.UnixNano(), 0.5)
		fmt.Printf("  %d -> %v\n", status, dec.Action)
		if dec.Action == model.ActReschedule {
			wake, _ := core.NextWake()
			fmt.Printf("  nothing to start until %v\n", wake.Sub(t0))
			now = wake
		}
	}
	// Output:
	// at 0s: delivery 1 attempt 1 (start: true)
	//   503 -> reschedule
	//   nothing to start until 2.1s
	// at 2.1s: delivery 1 attempt 2 (start: true)
	//   200 -> ack
}
