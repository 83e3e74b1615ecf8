package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/stormdrill/stormdrill/drills/live"
)

const dispatchExamples = `  # deliver what a replay put back into the queue a live run left behind
  stormdrill run drills/live-restart.toml --out out/live-restart
  stormdrill dlq replay --store sqlite:out/live-restart/queue.db --reason max-attempts
  stormdrill partner drills/live-restart.toml --listen 127.0.0.1:8080 &
  stormdrill dispatch --store sqlite:out/live-restart/queue.db --drill drills/live-restart.toml \
      --partners http://127.0.0.1:8080 --alert-url http://127.0.0.1:8080/alerts
  # SIGTERM (or Ctrl-C) stops claiming, finishes the attempts in flight,
  # gives the leases back and exits 0`

func cmdDispatch(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("dispatch", "--store sqlite:PATH --drill DRILL.toml --partners URL [flags]", dispatchExamples, stdout)
	store := fs.String("store", "", "the durable queue: sqlite:PATH, or postgres://USER:PASS@127.0.0.1:PORT/DB for several dispatchers on one queue")
	drillPath := fs.String("drill", "", "the drill whose policy, breaker, budget and dispatcher settings to run")
	partners := fs.String("partners", "", "base URL of the partner server (loopback), e.g. http://127.0.0.1:8080")
	host, _ := os.Hostname()
	owner := fs.String("owner", fmt.Sprintf("%s-%d", host, os.Getpid()), "lease owner name; unique per running dispatcher")
	alertURL := fs.String("alert-url", "", "POST dead-letter alerts here (loopback); empty: no alerts")
	speed := fs.Float64("speed", 0, "drill time runs this much faster than the wall clock (default: the drill's speed)")
	start := fs.Int64("start", 0, "wall time of drill time 0 in unix nanoseconds (default: now); needed with --speed other than 1")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("stormdrill dispatch: unexpected argument %q (see --help)", pos[0])
	}
	if *store == "" || *drillPath == "" || *partners == "" {
		return usagef("stormdrill dispatch: --store, --drill and --partners are required (see --help)")
	}
	if err := loopbackURL(*partners); err != nil {
		return usagef("stormdrill dispatch: --partners: %v", err)
	}
	if *alertURL != "" {
		if err := loopbackURL(*alertURL); err != nil {
			return usagef("stormdrill dispatch: --alert-url: %v", err)
		}
	}
	d, err := live.LoadDrill(*drillPath)
	if err != nil {
		return usageError{err}
	}
	if *speed < 0 {
		return usagef("stormdrill dispatch: --speed %v: must be greater than 0", *speed)
	}
	if *speed == 0 {
		*speed = d.Speed
	}
	clock := live.Clock{Start: time.Now(), Speed: *speed}
	if *start != 0 {
		clock.Start = time.Unix(0, *start)
	}
	st, err := openStore("dispatch", *store)
	if err != nil {
		return err
	}
	defer st.Close()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	stats, err := live.RunDispatcher(ctx, live.DispatcherConfig{
		Drill: d, Store: st, PartnersURL: *partners, Owner: *owner, AlertURL: *alertURL,
		Clock: clock, Events: stdout, Log: stderr,
	})
	fmt.Fprintf(stderr, "dispatch %s: claimed %d, attempts %d, acked %d, rescheduled %d, dead-lettered %d, stale %d, released %d leases, %d alerts\n",
		*owner, stats.Claimed, stats.Attempts, stats.Acked, stats.Rescheduled, stats.DeadLettered, stats.Stale, stats.Released, stats.AlertsSent)
	if err != nil {
		return runError{err}
	}
	return nil
}

// loopbackURL accepts only http URLs on a literal loopback address: live
// drills never leave the machine.
func loopbackURL(s string) error {
	_, err := live.LoopbackURL(s)
	return err
}
