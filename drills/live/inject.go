package live

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stormdrill/stormdrill/drills"
	"github.com/stormdrill/stormdrill/model/queue"
)

// injector inserts deliveries into the store on the drill's arrival
// schedule. Each delivery's created time is its scheduled time, not the
// time it was inserted (no coordinated omission); how late the insert was
// is measured as lateness.
type injector struct {
	r       *runner
	st      queue.Store
	created atomic.Int64
	events  int64

	mu       sync.Mutex // guards lateness and perSub
	lateness *drills.LatencyHist
	perSub   []int64 // deliveries created per subscriber
}

func newInjector(r *runner, st queue.Store) *injector {
	return &injector{r: r, st: st, lateness: drills.NewLatencyHist(), perSub: make([]int64, len(r.subs))}
}

type scheduled struct {
	wall time.Time // when the event was due, wall clock
	n    int       // deliveries it made
}

func (in *injector) run(ctx context.Context) error {
	r := in.r
	arr := r.d.NewArrivals()
	var payload []byte
	if n := r.d.Source.Payload; n > 0 {
		payload = make([]byte, n)
		for i := range payload {
			payload[i] = 'x'
		}
	}
	batch := make([]queue.Delivery, 0, 256)
	var due []scheduled
	flush := func() error {
		if len(batch) == 0 && len(due) == 0 {
			return nil
		}
		if len(batch) > 0 {
			if err := in.enqueue(batch); err != nil {
				return err
			}
		}
		done := time.Now()
		in.mu.Lock()
		for _, s := range due {
			in.lateness.Record(int64(done.Sub(s.wall)))
		}
		in.mu.Unlock()
		in.created.Add(int64(len(batch)))
		clear(batch)
		batch, due = batch[:0], due[:0]
		return nil
	}
	timer := time.NewTimer(0)
	defer timer.Stop()
	<-timer.C
	for {
		at, n, ok := arr.Next()
		if !ok {
			return flush()
		}
		wallAt := r.clock.WallAt(r.clock.Start.Add(at))
		if wait := time.Until(wallAt); wait > 0 {
			if err := flush(); err != nil {
				return err
			}
			if wait = time.Until(wallAt); wait > 0 {
				timer.Reset(wait)
				select {
				case <-timer.C:
				case <-ctx.Done():
					return ctx.Err()
				}
			}
		} else if ctx.Err() != nil {
			return ctx.Err()
		}
		created := r.clock.Start.Add(at)
		for e := 0; e < n; e++ {
			for _, si := range r.fanout {
				s := &r.subs[si]
				batch = append(batch, queue.Delivery{
					ID: drills.DeliveryID(in.events, s.Name), Event: fmt.Sprintf("evt-%06d", in.events),
					Partner: s.Name, Cohort: r.specs[s.Cohort].Name, Payload: payload, Created: created,
				})
				in.mu.Lock()
				in.perSub[si]++
				in.mu.Unlock()
			}
			due = append(due, scheduled{wall: wallAt, n: len(r.fanout)})
			in.events++
			// due is bounded too: an event always adds to it, even one that
			// fans out to no subscriber.
			if len(batch) >= MaxInsertBatch || len(due) >= MaxInsertBatch {
				if err := flush(); err != nil {
					return err
				}
			}
		}
	}
}

// busyRetry is the pause between two tries of a busy store.
const busyRetry = 200 * time.Microsecond

// enqueue inserts one batch, retrying while the store is busy (another
// process holds the write lock), for at most storeTimeout.
func (in *injector) enqueue(batch []queue.Delivery) error {
	deadline := time.Now().Add(storeTimeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
		_, err := in.st.Enqueue(ctx, batch)
		cancel()
		if err == nil {
			return nil
		}
		if !isBusy(err) || time.Now().After(deadline) {
			return fmt.Errorf("live: injecting deliveries: %w", err)
		}
		time.Sleep(busyRetry)
	}
}

// isBusy reports whether err is SQLite's "another connection holds the
// lock".
func isBusy(err error) bool {
	s := err.Error()
	return strings.Contains(s, "SQLITE_BUSY") || strings.Contains(s, "database is locked")
}
