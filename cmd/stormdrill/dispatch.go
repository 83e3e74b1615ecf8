package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/stormdrill/stormdrill/drills"
	"github.com/stormdrill/stormdrill/drills/live"
	"github.com/stormdrill/stormdrill/fakepartner"
	"github.com/stormdrill/stormdrill/model/runtime/dispatcher"
	"github.com/stormdrill/stormdrill/model/runtime/queue"
)

const dispatchExamples = `  # deliver what a replay put back into the queue a live run left behind
  stormdrill run drills/live-restart.toml --out out/live-restart
  stormdrill dlq replay --store sqlite:out/live-restart/queue.db --reason max-attempts
  stormdrill partner drills/live-restart.toml --listen 127.0.0.1:8080 &
  stormdrill dispatch --store sqlite:out/live-restart/queue.db --drill drills/live-restart.toml \
      --partners http://127.0.0.1:8080 --alert-url http://127.0.0.1:8080/alerts
  # the same from a configuration file: write it once, edit, run
  stormdrill dispatch --drill drills/live-restart.toml --partners http://127.0.0.1:8080 \
      --print-config > out/dispatcher.json
  stormdrill dispatch --store sqlite:out/live-restart/queue.db --config out/dispatcher.json
  # take events from outside: POST /events enqueues one event's deliveries
  # (an external drill's HTTP ingest sends that body); 503 when the queue is full
  stormdrill dispatch --store sqlite:out/queue.db --drill drills/external-dispatch.toml \
      --partners http://127.0.0.1:8080 --ingest 127.0.0.1:8081
  # SIGTERM (or Ctrl-C) stops claiming, finishes the attempts in flight,
  # gives the leases back and exits 0`

func cmdDispatch(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("dispatch", "--store DSN (--config FILE | --drill DRILL.toml) [--partners URL] [flags]", dispatchExamples, stdout)
	store := fs.String("store", "", "the durable queue: sqlite:PATH, or postgres://USER@127.0.0.1:PORT/DB for several dispatchers on one queue (password in $PGPASSWORD); default $"+live.StoreEnv)
	configPath := fs.String("config", "", "the dispatcher's configuration file (JSON): workers, leases, partners and their policies")
	drillPath := fs.String("drill", "", "instead of --config: run this drill's policy, breaker, budget and dispatcher settings")
	partners := fs.String("partners", "", "base URL of the partner server (loopback), e.g. http://127.0.0.1:8080; overrides the file's partners_url")
	host, _ := os.Hostname()
	owner := fs.String("owner", fmt.Sprintf("%s-%d", host, os.Getpid()), "lease owner name; unique per running dispatcher")
	alertURL := fs.String("alert-url", "", "POST dead-letter alerts here (loopback), with $"+fakepartner.TokenEnv+" as a bearer token when set; overrides the file's alert_url; empty: no alerts")
	speed := fs.Float64("speed", 0, "drill time runs this much faster than the wall clock (default: the file's or the drill's speed)")
	start := fs.Int64("start", 0, "wall time of drill time 0 in unix nanoseconds (default: now); needed with --speed other than 1")
	metricsAddr := fs.String("metrics", "", "serve Prometheus metrics on this loopback address, e.g. 127.0.0.1:9464 (GET /metrics); empty: none")
	ingestAddr := fs.String("ingest", "", "take events on this loopback address (POST /events, GET /healthz), e.g. 127.0.0.1:8081; empty: none")
	ingestCap := fs.Int("ingest-capacity", 0, "with --ingest: answer 503 while the queue holds this many waiting deliveries (default: the drill's dispatcher.queue_capacity, else 100000)")
	layout := fs.String("partner-layout", "", "with --drill: the partners as NAME:COUNT,… (each with the drill's first partner's settings) instead of the drill's; an external run passes $STORMDRILL_PARTNER_LAYOUT")
	printConfig := fs.Bool("print-config", false, "print the configuration file the dispatcher would run, and exit")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("stormdrill dispatch: unexpected argument %q (see --help)", pos[0])
	}
	if *store == "" {
		// A DSN with a password comes through the environment, out of ps.
		*store = os.Getenv(live.StoreEnv)
	}
	if (*configPath == "") == (*drillPath == "") {
		return usagef("stormdrill dispatch: one of --config and --drill is required (see --help)")
	}
	if (*store == "" && !*printConfig) || (*drillPath != "" && *partners == "") {
		return usagef("stormdrill dispatch: --store, and with --drill --partners, are required (see --help)")
	}
	if *partners != "" {
		if err := loopbackURL(*partners); err != nil {
			return usagef("stormdrill dispatch: --partners: %v", err)
		}
	}
	if *alertURL != "" {
		if err := loopbackURL(*alertURL); err != nil {
			return usagef("stormdrill dispatch: --alert-url: %v", err)
		}
	}
	if !(*speed >= 0) || *speed > dispatcher.MaxSpeed {
		return usagef("stormdrill dispatch: --speed %v: must be greater than 0 and at most %g", *speed, float64(dispatcher.MaxSpeed))
	}
	if *layout != "" && *drillPath == "" {
		return usagef("stormdrill dispatch: --partner-layout goes with --drill")
	}
	if *ingestCap < 0 || (*ingestCap > 0 && *ingestAddr == "") {
		return usagef("stormdrill dispatch: --ingest-capacity %d: must be positive, and goes with --ingest", *ingestCap)
	}
	capacity := *ingestCap
	var cfg dispatcher.Config
	if *configPath != "" {
		if cfg, err = dispatcher.ReadFile(*configPath); err != nil {
			return usageError{err}
		}
	} else {
		d, err := drills.Load(*drillPath, nil)
		if err != nil {
			return usageError{err}
		}
		if *layout != "" {
			if err := applyPartnerLayout(d, *layout); err != nil {
				return usagef("stormdrill dispatch: --partner-layout: %v", err)
			}
		}
		if cfg, err = d.DispatcherConfig(*partners); err != nil {
			return usageError{fmt.Errorf("%s: %w", *drillPath, err)}
		}
		cfg.AlertURL = "" // a drill names no alert sink; --alert-url does
		if capacity == 0 {
			capacity = d.Dispatcher.QueueCapacity
		}
	}
	if capacity == 0 {
		capacity = drills.DefaultQueueCapacity
	}
	if *partners != "" {
		cfg.PartnersURL = *partners
	}
	if *alertURL != "" {
		cfg.AlertURL = *alertURL
	}
	// A partner server started with a token requires it on /alerts.
	cfg.AlertToken = os.Getenv(fakepartner.TokenEnv)
	if *speed > 0 {
		cfg.Clock.Speed = *speed
	}
	cfg.Owner = *owner
	if *start != 0 {
		cfg.Clock.Start = time.Unix(0, *start)
	}
	// Every problem is reported here, before the store is opened and
	// anything claimed.
	if err := cfg.Validate(); err != nil {
		src := *configPath
		if src == "" {
			src = *drillPath
		}
		return usageError{eachPrefixed(src, err)}
	}
	if *printConfig {
		b, err := dispatcher.Marshal(cfg)
		if err != nil {
			return runError{err}
		}
		_, err = stdout.Write(b)
		return err
	}
	var st queue.Store
	if *ingestAddr != "" {
		// With an ingest the dispatcher is a system of its own: it makes
		// its queue if there is none yet.
		if st, err = queue.Open(*store); err != nil {
			return usagef("stormdrill dispatch: --store: %s", queue.RedactMessage(err.Error(), *store))
		}
	} else if st, err = openStore("dispatch", *store); err != nil {
		return err
	}
	defer st.Close()
	if sp := cfg.Clock.Speed; sp > 0 && sp != 1 && !cfg.Clock.Start.IsZero() {
		// The store's times will be drill-clock instants: record the
		// clock, so that `stormdrill dlq` shows them as wall-clock ones.
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := st.SetClock(cctx, queue.Clock{Start: cfg.Clock.Start, Speed: sp})
		cancel()
		if err != nil {
			return runError{err}
		}
	}
	cfg.Store, cfg.Events, cfg.Log = st, stdout, stderr
	if cfg.Clock.Start.IsZero() {
		cfg.Clock.Start = time.Now() // the ingest and the dispatcher share one clock
	}
	if *ingestAddr != "" {
		is, err := serveIngest(*ingestAddr, cfg, capacity, stderr)
		if err != nil {
			return err
		}
		defer is.Close()
	}
	if *metricsAddr != "" {
		reg := prometheus.NewRegistry()
		if cfg.Metrics, err = dispatcher.NewMetrics(reg); err != nil {
			return runError{err}
		}
		ms, err := serveMetrics("dispatch", *metricsAddr, stderr, reg)
		if err != nil {
			return err
		}
		defer ms.Close()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	stats, err := dispatcher.Run(ctx, cfg)
	fmt.Fprintf(stderr, "dispatch %s: claimed %d, attempts %d, acked %d, rescheduled %d, dead-lettered %d, stale %d, released %d leases, %d alerts\n",
		*owner, stats.Claimed, stats.Attempts, stats.Acked, stats.Rescheduled, stats.DeadLettered, stats.Stale, stats.Released, stats.AlertsSent)
	if err != nil {
		return runError{err}
	}
	return nil
}

// maxLayoutPartners bounds the entries of --partner-layout.
const maxLayoutPartners = 10_000

// applyPartnerLayout replaces d's partners by the NAME:COUNT list, each a
// copy of d's first partner without its outages: the dispatcher needs only
// their names and member counts, and the drill's policy.
func applyPartnerLayout(d *drills.Drill, layout string) error {
	if len(d.Partners) == 0 {
		return errors.New("the drill has no partner to copy the settings of")
	}
	tmpl := d.Partners[0]
	tmpl.Outages = nil
	var ps []drills.Partner
	for i, e := range strings.Split(layout, ",") {
		if i >= maxLayoutPartners {
			return fmt.Errorf("more than %d entries", maxLayoutPartners)
		}
		name, count, ok := strings.Cut(strings.TrimSpace(e), ":")
		n, err := strconv.Atoi(count)
		if !ok || name == "" || err != nil || n < 1 || n > dispatcher.MaxEndpoints {
			return fmt.Errorf("entry %d %q: want NAME:COUNT with COUNT from 1 to %d", i+1, clipArg(e), dispatcher.MaxEndpoints)
		}
		p := tmpl
		p.Name, p.Count = name, n
		ps = append(ps, p)
	}
	d.Partners = ps
	return nil
}

// serveIngest serves the dispatcher's ingest on a loopback address.
func serveIngest(addr string, cfg dispatcher.Config, capacity int, w io.Writer) (*metricsServer, error) {
	in, err := dispatcher.NewIngest(cfg, capacity)
	if err != nil {
		return nil, usageError{err}
	}
	l, err := fakepartner.ListenLoopback(addr)
	if err != nil {
		return nil, usagef("stormdrill dispatch: --ingest: %v", err)
	}
	is := &metricsServer{
		srv:  &http.Server{Handler: in, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second},
		done: make(chan error, 1),
	}
	go func() { is.done <- is.srv.Serve(l) }()
	fmt.Fprintf(w, "ingest: http://%s/events\n", l.Addr())
	return is, nil
}

// loopbackURL accepts only http URLs on a literal loopback address: live
// drills never leave the machine.
func loopbackURL(s string) error {
	_, err := dispatcher.LoopbackURL(s)
	return err
}

// eachPrefixed puts "prefix: " before each of a joined error's errors, so
// that every line of the message names the file.
func eachPrefixed(prefix string, err error) error {
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return fmt.Errorf("%s: %w", prefix, err)
	}
	var out []error
	for _, e := range j.Unwrap() {
		out = append(out, fmt.Errorf("%s: %w", prefix, e))
	}
	return errors.Join(out...)
}
