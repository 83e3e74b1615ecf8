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

// dispatchFlags is dispatch's command line.
type dispatchFlags struct {
	store, configPath, drillPath, partners, owner, alertURL string
	metricsAddr, token, ingestAddr, layout                  string
	speed                                                   float64
	start                                                   int64
	ingestCap                                               int
	printConfig                                             bool
}

func cmdDispatch(args []string, stdout, stderr io.Writer) error {
	df, err := parseDispatchFlags(args, stdout)
	if err != nil {
		return err
	}
	cfg, capacity, err := df.config()
	if err != nil {
		return err
	}
	if df.printConfig {
		b, err := dispatcher.Marshal(cfg)
		if err != nil {
			return runError{err}
		}
		_, err = stdout.Write(b)
		return err
	}
	st, err := df.openStore(cfg)
	if err != nil {
		return err
	}
	defer st.Close()
	cfg.Store, cfg.Events, cfg.Log = st, stdout, stderr
	if cfg.Clock.Start.IsZero() {
		cfg.Clock.Start = time.Now() // the ingest and the dispatcher share one clock
	}
	if df.ingestAddr != "" {
		is, err := serveIngest(df.ingestAddr, cfg, capacity, stderr)
		if err != nil {
			return err
		}
		defer is.Close()
	}
	if df.metricsAddr != "" {
		reg := prometheus.NewRegistry()
		if cfg.Metrics, err = dispatcher.NewMetrics(reg); err != nil {
			return runError{err}
		}
		ms, err := serveMetricsToken("dispatch", df.metricsAddr, df.token, stderr, reg)
		if err != nil {
			return err
		}
		defer ms.Close()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	stats, err := dispatcher.Run(ctx, cfg)
	fmt.Fprintf(stderr, "dispatch %s: claimed %d, attempts %d, acked %d, rescheduled %d, dead-lettered %d, stale %d, released %d leases, %d alerts\n",
		df.owner, stats.Claimed, stats.Attempts, stats.Acked, stats.Rescheduled, stats.DeadLettered, stats.Stale, stats.Released, stats.AlertsSent)
	if err != nil {
		return runError{err}
	}
	return nil
}

// parseDispatchFlags parses dispatch's command line and checks what it can
// alone.
func parseDispatchFlags(args []string, stdout io.Writer) (*dispatchFlags, error) {
	df := &dispatchFlags{}
	fs := newFlags("dispatch", "--store DSN (--config FILE | --drill DRILL.toml) [--partners URL] [flags]", dispatchExamples, stdout)
	fs.StringVar(&df.store, "store", "", "the durable queue: sqlite:PATH, or postgres://USER@127.0.0.1:PORT/DB for several dispatchers on one queue (password in $PGPASSWORD); default $"+live.StoreEnv)
	fs.StringVar(&df.configPath, "config", "", "the dispatcher's configuration file (JSON): workers, leases, partners and their policies")
	fs.StringVar(&df.drillPath, "drill", "", "instead of --config: run this drill's policy, breaker, budget and dispatcher settings")
	fs.StringVar(&df.partners, "partners", "", "base URL of the partner server (loopback), e.g. http://127.0.0.1:8080; overrides the file's partners_url")
	host, _ := os.Hostname()
	fs.StringVar(&df.owner, "owner", fmt.Sprintf("%s-%d", host, os.Getpid()), "lease owner name; unique per running dispatcher")
	fs.StringVar(&df.alertURL, "alert-url", "", "POST dead-letter alerts here (loopback), with $"+fakepartner.TokenEnv+" as a bearer token when set; overrides the file's alert_url; empty: no alerts")
	fs.Float64Var(&df.speed, "speed", 0, "drill time runs this much faster than the wall clock (default: the file's or the drill's speed)")
	fs.Int64Var(&df.start, "start", 0, "wall time of drill time 0 in unix nanoseconds (default: now); needed with --speed other than 1")
	fs.StringVar(&df.metricsAddr, "metrics", "", "serve Prometheus metrics (GET /metrics) on this loopback address, e.g. 127.0.0.1:9464, or on any address with a token, which /metrics then requires; empty: none")
	fs.StringVar(&df.token, "token", "", "with --metrics: require \"Authorization: Bearer TOKEN\" on /metrics, which may then listen on any address; 16 to 256 characters (default: $"+fakepartner.TokenEnv+", which keeps it out of ps)")
	fs.StringVar(&df.ingestAddr, "ingest", "", "take events on this loopback address (POST /events, GET /healthz), e.g. 127.0.0.1:8081; empty: none")
	fs.IntVar(&df.ingestCap, "ingest-capacity", 0, "with --ingest: answer 503 while the queue holds this many waiting deliveries (default: the drill's dispatcher.queue_capacity, else 100000)")
	fs.StringVar(&df.layout, "partner-layout", "", "with --drill: the partners as NAME:COUNT,… (each with the drill's first partner's settings) instead of the drill's; an external run passes $STORMDRILL_PARTNER_LAYOUT")
	fs.BoolVar(&df.printConfig, "print-config", false, "print the configuration file the dispatcher would run, and exit")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return nil, err
	}
	if len(pos) > 0 {
		return nil, usagef("stormdrill dispatch: unexpected argument %q (see --help)", pos[0])
	}
	if df.store == "" {
		// A DSN with a password comes through the environment, out of ps.
		df.store = os.Getenv(live.StoreEnv)
	}
	if df.token == "" {
		df.token = os.Getenv(fakepartner.TokenEnv)
	}
	return df, df.check()
}

// check refuses contradictory or unsafe flags before anything is read.
func (df *dispatchFlags) check() error {
	if (df.configPath == "") == (df.drillPath == "") {
		return usagef("stormdrill dispatch: one of --config and --drill is required (see --help)")
	}
	if (df.store == "" && !df.printConfig) || (df.drillPath != "" && df.partners == "") {
		return usagef("stormdrill dispatch: --store, and with --drill --partners, are required (see --help)")
	}
	for _, u := range []struct{ flag, url string }{{"--partners", df.partners}, {"--alert-url", df.alertURL}} {
		if u.url == "" {
			continue
		}
		if err := loopbackURL(u.url); err != nil {
			return usagef("stormdrill dispatch: %s: %v", u.flag, err)
		}
	}
	if df.metricsAddr != "" {
		if _, err := fakepartner.CheckListen(df.metricsAddr, df.token); err != nil {
			return usagef("stormdrill dispatch: --metrics: %v", err)
		}
	}
	if !(df.speed >= 0) || df.speed > dispatcher.MaxSpeed {
		return usagef("stormdrill dispatch: --speed %v: must be greater than 0 and at most %g", df.speed, float64(dispatcher.MaxSpeed))
	}
	if df.layout != "" && df.drillPath == "" {
		return usagef("stormdrill dispatch: --partner-layout goes with --drill")
	}
	if df.ingestCap < 0 || (df.ingestCap > 0 && df.ingestAddr == "") {
		return usagef("stormdrill dispatch: --ingest-capacity %d: must be positive, and goes with --ingest", df.ingestCap)
	}
	return nil
}

// config reads the configuration file or the drill, applies the flags and
// validates the result: every problem is reported here, before the store
// is opened and anything claimed. capacity is the ingest's queue bound.
func (df *dispatchFlags) config() (cfg dispatcher.Config, capacity int, err error) {
	capacity = df.ingestCap
	if df.configPath != "" {
		if cfg, err = dispatcher.ReadFile(df.configPath); err != nil {
			return cfg, 0, usageError{err}
		}
	} else {
		d, err := drills.Load(df.drillPath, nil)
		if err != nil {
			return cfg, 0, usageError{err}
		}
		if df.layout != "" {
			if err := applyPartnerLayout(d, df.layout); err != nil {
				return cfg, 0, usagef("stormdrill dispatch: --partner-layout: %v", err)
			}
		}
		if cfg, err = d.DispatcherConfig(df.partners); err != nil {
			return cfg, 0, usageError{fmt.Errorf("%s: %w", df.drillPath, err)}
		}
		cfg.AlertURL = "" // a drill names no alert sink; --alert-url does
		if capacity == 0 {
			capacity = d.Dispatcher.QueueCapacity
		}
	}
	if capacity == 0 {
		capacity = drills.DefaultQueueCapacity
	}
	if df.partners != "" {
		cfg.PartnersURL = df.partners
	}
	if df.alertURL != "" {
		cfg.AlertURL = df.alertURL
	}
	// A partner server started with a token requires it on /alerts.
	cfg.AlertToken = os.Getenv(fakepartner.TokenEnv)
	if df.speed > 0 {
		cfg.Clock.Speed = df.speed
	}
	cfg.Owner = df.owner
	if df.start != 0 {
		cfg.Clock.Start = time.Unix(0, df.start)
	}
	if err := cfg.Validate(); err != nil {
		src := df.configPath
		if src == "" {
			src = df.drillPath
		}
		return cfg, 0, usageError{eachPrefixed(src, err)}
	}
	return cfg, capacity, nil
}

// openStore opens the durable queue and records the drill clock in it.
func (df *dispatchFlags) openStore(cfg dispatcher.Config) (queue.Store, error) {
	var st queue.Store
	var err error
	if df.ingestAddr != "" {
		// With an ingest the dispatcher is a system of its own: it makes
		// its queue if there is none yet.
		if st, err = queue.Open(df.store); err != nil {
			return nil, usagef("stormdrill dispatch: --store: %s", queue.RedactMessage(err.Error(), df.store))
		}
	} else if st, err = openStore("dispatch", df.store); err != nil {
		return nil, err
	}
	if sp := cfg.Clock.Speed; sp > 0 && sp != 1 && !cfg.Clock.Start.IsZero() {
		// The store's times will be drill-clock instants: record the
		// clock, so that `stormdrill dlq` shows them as wall-clock ones.
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := st.SetClock(cctx, queue.Clock{Start: cfg.Clock.Start, Speed: sp})
		cancel()
		if err != nil {
			st.Close()
			return nil, runError{err}
		}
	}
	return st, nil
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
