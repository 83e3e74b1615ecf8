package main

import (
	"os"
	"path/filepath"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/stormdrill/stormdrill/drills"
	"github.com/stormdrill/stormdrill/drills/live"
	"github.com/stormdrill/stormdrill/reports"
)

// liveExecutable is the binary whose `dispatch` command a live run starts;
// "" means this process's own executable. Tests point it elsewhere.
var liveExecutable = ""

// liveMetrics, when set (run --metrics), gets a live run's partner server
// collector.
var liveMetrics *prometheus.Registry

// liveDispatcherMetrics, when set (run --dispatcher-metrics), is the
// address on which a live run's dispatcher serves its metrics.
var liveDispatcherMetrics string

// metricsRegisterer is liveMetrics as a Registerer, nil when unset (a nil
// *Registry in the interface would not be nil).
func metricsRegisterer() prometheus.Registerer {
	if liveMetrics == nil {
		return nil
	}
	return liveMetrics
}

// runLive runs a mode = "live" drill; the dispatchers' diagnostics go to
// dispatch.log in the run directory.
func runLive(d *drills.Drill, dir string, progress func(drills.Progress)) (*reports.Run, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	logf, err := os.Create(filepath.Join(dir, "dispatch.log"))
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	return live.Run(d, dir, live.Options{Executable: liveExecutable, Progress: progress, Log: logf, Metrics: metricsRegisterer(), DispatcherMetrics: liveDispatcherMetrics})
}
