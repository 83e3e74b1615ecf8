package live

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/stormdrill/stormdrill/drills"
	"github.com/stormdrill/stormdrill/model/runtime/queue"
)

// maxReplayedIDs bounds the delivery ids the live report follows through
// replays; past it a replayed delivery counts as any other.
const maxReplayedIDs = 1 << 20

// liveReplays runs a drill's dlq-replay actions against the store, each in
// its own goroutine, through queue.RunReplay: the same code as `stormdrill
// dlq replay`. It remembers which ids each replay moved and when, for the
// report.
type liveReplays struct {
	r  *runner
	wg sync.WaitGroup

	mu      sync.Mutex
	moved   map[string]replayedID // id → its (latest) replay
	batches []replayBatch
	results []replayResult // per replay (index into d.Replays())
	err     error
}

type replayedID struct {
	replay int
	at     time.Duration // drill time it was moved back
}

type replayBatch struct {
	replay int
	at     time.Duration
	n      int64
}

type replayResult struct {
	started, done bool
	matched       int64
}

// running reports whether a replay that has started has not returned yet.
func (lr *liveReplays) running() bool {
	lr.mu.Lock()
	defer lr.mu.Unlock()
	for _, res := range lr.results {
		if res.started && !res.done {
			return true
		}
	}
	return false
}

func newLiveReplays(r *runner) *liveReplays {
	return &liveReplays{r: r, moved: map[string]replayedID{}, results: make([]replayResult, len(r.d.Replays()))}
}

// start runs replay k (an index into d.Replays()) from now on.
func (lr *liveReplays) start(ctx context.Context, k int) {
	r := lr.r
	i := r.d.Replays()[k]
	a := &r.d.Actions[i]
	req := a.ReplayRequest()
	// The action's rate is in drill time; the replay paces in wall time.
	req.Rate *= r.clock.Speed
	lr.mu.Lock()
	lr.results[k].started = true
	lr.mu.Unlock()
	lr.wg.Add(1)
	go func() {
		defer lr.wg.Done()
		opts := queue.ReplayOptions{
			Who: drillsActionWho(i),
			Now: r.clock.Now,
			OnMoved: func(at time.Time, ids []string) {
				dt := at.Sub(r.clock.Start)
				lr.mu.Lock()
				defer lr.mu.Unlock()
				lr.batches = append(lr.batches, replayBatch{replay: k, at: dt, n: int64(len(ids))})
				for _, id := range ids {
					if _, ok := lr.moved[id]; ok || len(lr.moved) < maxReplayedIDs {
						lr.moved[id] = replayedID{replay: k, at: dt}
					}
				}
			},
		}
		res, err := queue.RunReplay(ctx, r.st, req, queue.DLQFilter{}, opts)
		lr.mu.Lock()
		defer lr.mu.Unlock()
		lr.results[k].matched = int64(res.Matched)
		lr.results[k].done = true
		if err != nil && ctx.Err() == nil && lr.err == nil {
			lr.err = fmt.Errorf("live: %s: %w", drillsActionWho(i), err)
		}
	}()
}

// wait waits for every replay to return and reports the first error.
func (lr *liveReplays) wait() error {
	lr.wg.Wait()
	lr.mu.Lock()
	defer lr.mu.Unlock()
	return lr.err
}

// of returns the replay that moved id and when, if one did.
func (lr *liveReplays) of(id string) (replayedID, bool) {
	lr.mu.Lock()
	defer lr.mu.Unlock()
	rid, ok := lr.moved[id]
	return rid, ok
}

func drillsActionWho(i int) string { return drills.ActionWho(i) }

// actionStep is one operator action the live run carries out at a drill
// time (dlq-replay; outage-end is in the partner specs, pause-source in
// the injector).
type actionStep struct {
	at     time.Duration
	replay int // index into d.Replays()
}

func actionSteps(d *drills.Drill) []actionStep {
	var out []actionStep
	for k, i := range d.Replays() {
		out = append(out, actionStep{at: d.Actions[i].At.D, replay: k})
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j].at < out[j-1].at; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}
