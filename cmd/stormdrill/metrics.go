package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/stormdrill/stormdrill/fakepartner"
)

// metricsServer serves a registry's /metrics on a loopback address, or,
// with a token, on any address with the token required.
type metricsServer struct {
	srv  *http.Server
	done chan error
}

// serveMetrics registers the Go runtime and process collectors besides
// cs, listens on addr (loopback) and prints the URL to scrape on w.
func serveMetrics(cmd, addr string, w io.Writer, reg *prometheus.Registry, cs ...prometheus.Collector) (*metricsServer, error) {
	return serveMetricsToken(cmd, addr, "", w, reg, cs...)
}

// serveMetricsToken is serveMetrics where, when token is set, addr may be
// any address (fakepartner.Listen) and GET /metrics requires the token as
// "Authorization: Bearer TOKEN", which Prometheus sends with
// `authorization: { credentials_file: ... }` in its scrape config. The
// metrics are read-only, but they name the drill's partners and its traffic,
// and with a token set the rule is one: everything but the partner paths
// needs it.
func serveMetricsToken(cmd, addr, token string, w io.Writer, reg *prometheus.Registry, cs ...prometheus.Collector) (*metricsServer, error) {
	cs = append(cs, buildInfoCollector(), collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return nil, runError{fmt.Errorf("metrics: %w", err)}
		}
	}
	l, err := fakepartner.Listen(addr, token)
	if err != nil {
		return nil, usagef("stormdrill %s: --metrics: %v", cmd, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", fakepartner.Guard(token, promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg, Timeout: 10 * time.Second})))
	ms := &metricsServer{
		srv:  &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 10 * time.Second, WriteTimeout: 30 * time.Second},
		done: make(chan error, 1),
	}
	go func() { ms.done <- ms.srv.Serve(l) }()
	fmt.Fprintf(w, "metrics: http://%s/metrics\n", l.Addr())
	return ms, nil
}

// buildInfoCollector is stormdrill_build_info{version, goversion} 1, the
// series a dashboard joins on to show which build it is watching.
func buildInfoCollector() prometheus.Collector {
	b := readBuildInfo()
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "stormdrill_build_info",
		Help:        "The stormdrill build serving these metrics: its version and Go toolchain; always 1.",
		ConstLabels: prometheus.Labels{"version": b.Version, "goversion": b.GoVersion}})
	g.Set(1)
	return g
}

// Close stops serving.
func (ms *metricsServer) Close() {
	if ms == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = ms.srv.Shutdown(ctx)
	if err := <-ms.done; err != nil && !errors.Is(err, http.ErrServerClosed) {
		_ = err // the listener failed; the command's own work is what matters
	}
}
