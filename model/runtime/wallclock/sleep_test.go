package wallclock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"
)

func TestUntilNeverReturnsEarly(t *testing.T) {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for _, tc := range []struct {
		name  string
		wait  time.Duration
		timer *time.Timer
	}{
		{"past instant: returns at once", -time.Millisecond, nil},
		{"inside the tail: one precise sleep", 300 * time.Microsecond, nil},
		{"past the tail: timer, then the tail", Tail + 500*time.Microsecond, nil},
		{"past the tail with a reused timer", Tail + 500*time.Microsecond, timer},
		{"the reused timer again (Reset after it fired)", Tail + time.Millisecond, timer},
	} {
		t.Run(tc.name, func(t *testing.T) {
			at := time.Now().Add(tc.wait)
			if err := Until(context.Background(), at, tc.timer); err != nil {
				t.Fatal(err)
			}
			if now := time.Now(); now.Before(at) {
				t.Errorf("returned %v before the instant", at.Sub(now))
			}
		})
	}
}

func TestUntilReturnsWhenCancelled(t *testing.T) {
	// Given a wait of an hour, when its context is cancelled,
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Until(ctx, time.Now().Add(time.Hour), nil) }()
	cancel()
	// then it returns the context's error rather than sleeping on.
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("err %v, want context.Canceled", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("still waiting 30 s after the cancel")
	}
	// A context already done returns at once, even for an instant inside
	// the tail.
	if err := Until(ctx, time.Now().Add(Tail/2), nil); !errors.Is(err, context.Canceled) {
		t.Errorf("err %v on a done context, want context.Canceled", err)
	}
}

func TestSleepSurvivesSignals(t *testing.T) {
	// The runtime preempts goroutines with signals, which interrupt a
	// nanosleep (EINTR): the rest must still be slept. Busy goroutines
	// beside it make preemption signals likely.
	stop := make(chan struct{})
	defer close(stop)
	for range 2 {
		go func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
			}
		}()
	}
	for range 50 {
		start := time.Now()
		Sleep(Tail)
		if got := time.Since(start); got < Tail {
			t.Fatalf("slept %v, want at least %v", got, Tail)
		}
	}
}

// BenchmarkLateness prints how late a wait of 1.4 ms (an arrival every
// 1.4 ms, as at 7,000 deliveries/s in events of 10) returns: on a Go
// timer and with Until.
//
//	go test -run '^$' -bench Lateness ./model/runtime/wallclock/
func BenchmarkLateness(b *testing.B) {
	const wait = 1400 * time.Microsecond
	for _, m := range []struct {
		name string
		wait func(at time.Time)
	}{
		{"go-timer", func(at time.Time) { time.Sleep(time.Until(at)) }},
		{"until", func(at time.Time) { _ = Until(context.Background(), at, nil) }},
	} {
		b.Run(m.name, func(b *testing.B) {
			late := make([]time.Duration, 0, b.N)
			for b.Loop() {
				at := time.Now().Add(wait)
				m.wait(at)
				late = append(late, time.Since(at))
			}
			slices.Sort(late)
			p := func(q float64) time.Duration { return late[int(q*float64(len(late)-1))] }
			b.ReportMetric(float64(p(0.5).Microseconds()), "late-p50-µs")
			b.ReportMetric(float64(p(0.99).Microseconds()), "late-p99-µs")
			fmt.Printf("%s: %d waits of %v, late p50 %v, p99 %v\n", m.name, len(late), wait, p(0.5), p(0.99))
		})
	}
}
