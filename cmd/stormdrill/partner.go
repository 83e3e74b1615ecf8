package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/stormdrill/stormdrill/drills"
	"github.com/stormdrill/stormdrill/fakepartner"
)

const partnerExamples = `  stormdrill partner drills/fanout-outage.toml
  stormdrill partner drills/live-restart.toml --listen 127.0.0.1:8080 --speed 20
  curl -i -X POST -H 'Idempotency-Key: evt-1:acme-0' http://127.0.0.1:8080/p/acme/0
  curl http://127.0.0.1:8080/control/partners
  # reachable from other machines: opt in with a token (from the environment,
  # so that it is not on the command line); the control API, /alerts and
  # /dead-letters then require it, the partner paths /p/... stay open
  export STORMDRILL_PARTNER_TOKEN=$(openssl rand -hex 16)
  stormdrill partner drills/fanout-outage.toml --listen 0.0.0.0:8080
  curl -H "Authorization: Bearer $STORMDRILL_PARTNER_TOKEN" http://partner.example:8080/control/partners`

func cmdPartner(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("partner", "DRILL.toml [--listen 127.0.0.1:0] [--token T] [--speed F]", partnerExamples, stdout)
	listen := fs.String("listen", "127.0.0.1:0", "address to serve on; one that is not loopback (0.0.0.0:8080, a host name) needs a token")
	token := fs.String("token", "", "require \"Authorization: Bearer TOKEN\" on the control API, /alerts, /dead-letters and /metrics; 16 to 256 characters (default: $"+fakepartner.TokenEnv+", which keeps it out of ps)")
	speed := fs.Float64("speed", 0, "divide every scripted time by this factor (default: the drill's speed)")
	metricsAddr := fs.String("metrics", "", "serve Prometheus metrics (requests by partner, status and fault, response times, outages in force) on this loopback address, e.g. 127.0.0.1:9465 (any address with a token, which /metrics then requires); empty: none")
	var limits multiFlag
	fs.Var(&limits, "limit", limitUsage)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("stormdrill partner: name exactly one drill file (see --help)")
	}
	if *token == "" {
		*token = os.Getenv(fakepartner.TokenEnv)
	}
	// Before the drill is read and long before anything is bound.
	if _, err := fakepartner.CheckListen(*listen, *token); err != nil {
		return usagef("stormdrill partner: --listen: %v", err)
	}
	if *metricsAddr != "" {
		if _, err := fakepartner.CheckListen(*metricsAddr, *token); err != nil {
			return usagef("stormdrill partner: --metrics: %v", err)
		}
	}
	ov, err := limitOverrides("partner", limits, nil)
	if err != nil {
		return err
	}
	d, err := drills.Load(pos[0], ov)
	if err != nil {
		return usageError{err}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return servePartnersMetrics(ctx, d, partnerServe{listen: *listen, token: *token, speed: *speed, metrics: *metricsAddr}, stdout, stderr)
}

// partnerServe is how the partner command serves: its address, control
// token, speed and metrics address.
type partnerServe struct {
	listen, token string
	speed         float64
	metrics       string
}

// servePartners serves the drill's partners until ctx ends. Drill time 0 is
// when it starts listening. It prints the base URL on its own line first.
func servePartners(ctx context.Context, d *drills.Drill, listen string, speed float64, stdout io.Writer) error {
	return servePartnersMetrics(ctx, d, partnerServe{listen: listen, speed: speed}, stdout, io.Discard)
}

// servePartnersMetrics is servePartners with a control token and, when
// ps.metrics is not empty, Prometheus metrics on that address (its URL
// printed on stderr).
func servePartnersMetrics(ctx context.Context, d *drills.Drill, ps partnerServe, stdout, stderr io.Writer) error {
	speed := ps.speed
	if speed < 0 {
		return usagef("stormdrill partner: --speed %v: must be greater than 0", speed)
	}
	if speed == 0 {
		speed = d.Speed
	}
	specs, err := d.PartnerSpecs()
	if err != nil {
		return usageError{err}
	}
	srv, err := fakepartner.NewServer(specs, fakepartner.ServerOptions{Speed: speed, Seed: d.Seed, ControlToken: ps.token})
	if err != nil {
		return usageError{err}
	}
	if ps.metrics != "" {
		ms, err := serveMetricsToken("partner", ps.metrics, ps.token, stderr, prometheus.NewRegistry(), srv.Collector())
		if err != nil {
			return err
		}
		defer ms.Close()
	}
	l, err := fakepartner.Listen(ps.listen, ps.token)
	if err != nil {
		return usagef("stormdrill partner: --listen: %v", err)
	}
	if ps.token != "" {
		fmt.Fprintln(stderr, "partner: the control API, /alerts and /dead-letters require the token; /p/... are open")
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(l) }()
	fmt.Fprintf(stdout, "http://%s\n", l.Addr())
	select {
	case <-ctx.Done():
		srv.Close()
		<-errc
		return nil
	case err := <-errc:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return runError{err}
	}
}
