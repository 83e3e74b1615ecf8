package external

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/stormdrill/stormdrill/drills"
	"github.com/stormdrill/stormdrill/fakepartner"
	"github.com/stormdrill/stormdrill/model/runtime/wallclock"
	"github.com/stormdrill/stormdrill/reports"
)

// checkEvery is how often the runner looks at faults, the system and the end.
const checkEvery = 50 * time.Millisecond

// Run runs an external drill and builds its report. dir receives what the
// system writes there (STORMDRILL_RUN_DIR). A broken accounting identity is
// returned with the run, wrapping drills.ErrAccounting.
func Run(d *drills.Drill, dir string, opt Options) (*reports.Run, error) {
	h, err := newHarness(d, dir, opt)
	if err != nil {
		return nil, err
	}
	defer h.close()
	if err := h.build(); err != nil {
		return nil, err
	}
	if err := h.startSystem(); err != nil {
		return nil, err
	}
	subs, _ := drills.Subscribers(d, h.specs)
	res, err := h.drive(subs)
	if err != nil {
		return nil, err
	}
	return assemble(h, subs, res)
}

// injectStats is what the injector measured about itself.
type injectStats struct {
	lateness            []float64 // seconds, wall time
	heldSum, heldMax    time.Duration
	refusedEvents       int64
	firstRefusal        error
	firstRefusalAt      time.Duration // drill time of the first refused event's scheduled arrival
	events, deliveries  int64
	restarts            []reports.Restart
	end                 time.Duration
	deadLetterListError error
	// crash is the system's own exit, which ended the drill early.
	crash *crash
}

// drive runs the drill's clock: injection, faults, and the end.
func (h *harness) drive(subs []drills.LiveSubscriber) (*injectStats, error) {
	d := h.d
	h.start = time.Now().Add(BootMargin)
	h.srv.SetStart(h.start)
	st := &injectStats{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	injDone := make(chan error, 1)
	go func() { injDone <- h.inject(ctx, subs, st) }()

	type step struct {
		at    time.Duration
		down  bool
		grace bool
		f     drills.Fault
	}
	var steps []step
	for _, f := range d.Faults {
		steps = append(steps, step{at: f.At.D, down: true, grace: f.Graceful(), f: f}, step{at: f.At.D + f.Down.D, f: f})
	}
	sort.SliceStable(steps, func(i, j int) bool { return steps[i].at < steps[j].at })
	hardEnd := d.Duration.D + d.Drain.D
	sourceDone := false
	tick := time.NewTicker(checkEvery)
	defer tick.Stop()
	for {
		dt := h.drillTime(time.Now())
		for len(steps) > 0 && steps[0].at <= dt {
			s := steps[0]
			steps = steps[1:]
			if s.down {
				if err := h.stopSystem(s.grace); err != nil {
					if errors.Is(err, ErrNeedsProcess) {
						return nil, err
					}
					fmt.Fprintln(h.log, "external:", err)
				}
				st.restarts = append(st.restarts, reports.Restart{AtS: dt.Seconds(), DownS: s.f.Down.D.Seconds(), Graceful: s.grace})
				fmt.Fprintf(h.log, "external: %s at %v\n", s.f.Kind, dt.Round(time.Millisecond))
			} else if err := h.startSystem(); err != nil {
				return nil, err
			}
		}
		if c := h.exited(dt); c != nil {
			// A crash is what a failure drill exists to report: the drill
			// ends here and the report shows what the partners saw.
			st.crash = c
			fmt.Fprintf(h.log, "external: the system exited on its own at %v: %s\n", dt.Round(time.Millisecond), c.status)
			break
		}
		if sourceDone {
			// Dead letters a command lists resolve deliveries too: without
			// them the run would wait for its hard end.
			h.pollDeadLetters(false)
		}
		created, pending := h.rec.pending()
		if h.opt.Progress != nil {
			h.opt.Progress(drills.Progress{DrillTime: dt, Total: d.Duration.D, Created: int64(created)})
		}
		if sourceDone && len(steps) == 0 && pending == 0 && outagesOver(h.specs, dt) {
			break
		}
		if dt >= hardEnd {
			break
		}
		select {
		case err := <-injDone:
			sourceDone = true
			injDone = nil
			if err != nil && !errors.Is(err, context.Canceled) {
				return nil, err
			}
		case <-tick.C:
		}
	}
	st.end = h.drillTime(time.Now())
	cancel()
	if injDone != nil {
		<-injDone
	}
	if err := h.listDeadLetters(); err != nil {
		st.deadLetterListError = err
		fmt.Fprintln(h.log, err)
	}
	if err := h.stopSystem(true); err != nil && !errors.Is(err, ErrNeedsProcess) {
		fmt.Fprintln(h.log, "external:", err)
	}
	h.rec.mu.Lock()
	overflow := h.rec.overflow
	h.rec.mu.Unlock()
	if overflow {
		return nil, fmt.Errorf("%w: more than %d attempts or %d deliveries", ErrTooMany, MaxObservations, MaxDeliveries)
	}
	return st, nil
}

// inject sends the drill's events on its arrival schedule.
func (h *harness) inject(ctx context.Context, subs []drills.LiveSubscriber, st *injectStats) error {
	arr := h.d.NewArrivals()
	// source.fanout picks each event's subscribers as the simulation does
	// (event n goes to the same ones); for all, every subscriber of source.to.
	fan := h.d.NewFanout(h.specs)
	var fanBuf []int32
	payload := h.payload()
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		at, n, ok := arr.Next()
		if !ok {
			return nil
		}
		due := h.start.Add(at)
		// Precise: a Go timer alone wakes up to a millisecond late, which
		// would count as lateness.
		if err := wallclock.Until(ctx, due, timer); err != nil {
			return err
		}
		for k := 0; k < n; k++ {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			st.lateness = appendBounded(st.lateness, time.Since(due).Seconds())
			ev := &Event{EventID: h.eventID(st.events), Created: due.UTC(), Payload: payload}
			picked := fan.Pick(st.events, fanBuf)
			if !fan.All() {
				fanBuf = picked
			}
			for _, si := range picked {
				s := subs[si]
				id := ev.EventID + ":" + s.Name
				ev.Deliveries = append(ev.Deliveries, Delivery{ID: id, URL: h.partnerURL(h.specs[s.Cohort].Name, s.Member)})
				if !h.rec.add(delivery{id: id, sub: int32(si), created: at}) {
					return fmt.Errorf("%w: more than %d deliveries", ErrTooMany, MaxDeliveries)
				}
			}
			st.events++
			st.deliveries += int64(len(ev.Deliveries))
			held, err := h.ing.send(ctx, ev)
			st.heldSum += held
			st.heldMax = max(st.heldMax, held)
			if err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				st.refusedEvents++
				if st.firstRefusal == nil {
					st.firstRefusal, st.firstRefusalAt = err, at
					fmt.Fprintf(h.log, "external: the ingest refused %s: %v\n", ev.EventID, err)
				}
				for _, dl := range ev.Deliveries {
					h.rec.refuse(dl.ID)
				}
			}
		}
	}
}

// maxLatenessSamples bounds the lateness samples kept.
const maxLatenessSamples = 1_000_000

func appendBounded(s []float64, v float64) []float64 {
	if len(s) < maxLatenessSamples {
		return append(s, v)
	}
	return s
}

func (h *harness) payload() json.RawMessage {
	n := h.d.Source.Payload
	if n <= 0 {
		return nil
	}
	return json.RawMessage(`{"data":"` + strings.Repeat("x", n) + `"}`)
}

func outagesOver(specs []fakepartner.Spec, dt time.Duration) bool {
	for _, sp := range specs {
		for _, o := range sp.Outages {
			if dt < o.End() {
				return false
			}
		}
	}
	return true
}

// maxDeadLetterOutput bounds what a dead-letter command may print.
const maxDeadLetterOutput = 256 << 20

// listedDeadLetter is one dead letter a dead_letter_command prints; dead_at
// (RFC 3339), when given, is when it was dead-lettered, else the listing's
// time is.
type listedDeadLetter struct {
	fakepartner.DeadLetter
	DeadAt time.Time `json:"dead_at"`
}

func (l *listedDeadLetter) entry(now time.Time) fakepartner.DeadLetter {
	dl := l.DeadLetter
	dl.At = now
	if !l.DeadAt.IsZero() && l.DeadAt.Before(now) {
		dl.At = l.DeadAt
	}
	return dl
}

// parseDeadLetters reads dead letters {"id","reason","attempts"} and an
// optional "dead_at" (other fields ignored) as one JSON array or one JSON
// object per line.
func parseDeadLetters(r io.Reader, add func(fakepartner.DeadLetter)) error {
	data, err := io.ReadAll(io.LimitReader(r, maxDeadLetterOutput+1))
	if err != nil {
		return err
	}
	if len(data) > maxDeadLetterOutput {
		return fmt.Errorf("external: dead_letter_command printed more than %d bytes", maxDeadLetterOutput)
	}
	now := time.Now()
	if t := bytes.TrimSpace(data); len(t) > 0 && t[0] == '[' {
		var all []listedDeadLetter
		if err := json.Unmarshal(t, &all); err != nil {
			return fmt.Errorf("external: dead_letter_command: want a JSON array of {\"id\",\"reason\",\"attempts\"}: %v", err)
		}
		for i := range all {
			if all[i].ID != "" {
				add(all[i].entry(now))
			}
		}
		return nil
	}
	for i, line := range bytes.Split(data, []byte("\n")) {
		t := bytes.TrimSpace(line)
		if len(t) == 0 {
			continue
		}
		var dl listedDeadLetter
		if err := json.Unmarshal(t, &dl); err != nil || dl.ID == "" {
			return fmt.Errorf("external: dead_letter_command line %d: want {\"id\",\"reason\",\"attempts\"}", i+1)
		}
		add(dl.entry(now))
	}
	return nil
}
