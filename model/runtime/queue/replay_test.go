package queue

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stormdrill/stormdrill/model"
)

// TestRunReplayByCohort: RunReplay, the path of `stormdrill dlq replay`
// and of a drill's dlq-replay action, selects dead letters by cohort and
// reports each batch's ids to OnMoved, oldest first.
func TestRunReplayByCohort(t *testing.T) {
	forEach(t, func(t *testing.T, s Store, _ func(Store) Store) Store {
		ctx := context.Background()
		acme := makeDead(t, s, "a", 7, "max-attempts", t0)
		// Another cohort's dead letters stay where they are.
		other := delivery("o-000:globex-0", t0.Add(-time.Minute))
		other.Partner, other.Cohort = "globex-0", "globex"
		mustEnqueue(t, s, other)
		got := mustClaim(t, s, "o", t0, time.Minute, 10)
		if len(got) != 1 {
			t.Fatalf("claimed %v", ids(got))
		}
		mustComplete(t, s, Completion{ID: other.ID, Owner: "o", Kind: KindDeadLetter, At: t0, Attempt: 6, Reason: "max-attempts"})

		var moved [][]string
		req := model.ReplayRequest{Cohort: "acme", Reason: "max-attempts", Batch: 3}
		res, err := RunReplay(ctx, s, req, DLQFilter{}, ReplayOptions{Who: "drill action 1",
			Now: func() time.Time { return t0.Add(time.Hour) }, OnMoved: func(_ time.Time, ids []string) { moved = append(moved, ids) }})
		if err != nil {
			t.Fatal(err)
		}
		if res != (ReplayResult{Matched: 7, Moved: 7, Batches: 3}) {
			t.Fatalf("replay %+v", res)
		}
		if fmt.Sprint(moved) != fmt.Sprint([][]string{acme[:3], acme[3:6], acme[6:]}) {
			t.Fatalf("moved %v, want %v in batches of 3", moved, acme)
		}
		left, _ := s.DeadLetters(ctx, DLQFilter{})
		if len(left) != 1 || left[0].ID != other.ID {
			t.Fatalf("left %+v", left)
		}
		// A request the replay rules refuse is a ReplayProblemError.
		_, err = RunReplay(ctx, s, model.ReplayRequest{Reason: "bogus", Batch: 0}, DLQFilter{}, ReplayOptions{Now: time.Now})
		var pe *ReplayProblemError
		if !errors.As(err, &pe) || len(pe.Problems) != 2 {
			t.Fatalf("bad request: %v", err)
		}
		return s
	})
}
