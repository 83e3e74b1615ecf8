package queue

import (
	"context"
	"errors"

	"github.com/stormdrill/stormdrill/model"
)

// ReplayProblemError is a replay request that model.ReplayRequest.Problems
// refuses; callers report it as bad input, not as a failed replay.
type ReplayProblemError struct{ Problems []model.Problem }

func (e *ReplayProblemError) Error() string {
	msg := "queue: replay:"
	for i, p := range e.Problems {
		if i > 0 {
			msg += ";"
		}
		msg += " " + p.Key + ": " + p.Msg
	}
	return msg
}

// RunReplay carries out an operator's replay request on st: the one replay
// path of `stormdrill dlq replay` and of a live drill's dlq-replay action.
// It checks the request, then moves the selected dead letters back to the
// queue in batches (see Store.Replay); opts carries who asks, the clock and
// the per-batch hook (the caller passes the clock in: opts.Now or f.Now),
// and its Batch and Rate are taken from req.
func RunReplay(ctx context.Context, st Store, req model.ReplayRequest, f DLQFilter, opts ReplayOptions) (ReplayResult, error) {
	if ps := req.Problems(); len(ps) > 0 {
		return ReplayResult{}, &ReplayProblemError{Problems: ps}
	}
	if st == nil {
		return ReplayResult{}, errors.New("queue: replay: no store")
	}
	f.Reason, f.Partner, f.Cohort = req.Reason, req.Partner, req.Cohort
	opts.Batch, opts.Rate = req.Batch, req.Rate
	return st.Replay(ctx, f, opts)
}
