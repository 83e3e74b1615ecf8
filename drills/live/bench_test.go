package live

import (
	"fmt"
	"io"
	"testing"
)

// benchDrill offers 3,000 deliveries/s (300 events/s fanned out to 10
// subscribers that answer in 1ms) for 10 s of wall time (speed 1).
const benchDrill = `
name = "bench-live"
mode = "live"
seed = 5
duration = "10s"
drain = "20s"
sample_interval = "100ms"
[source]
arrival = "constant"
rate = "300/s"
[[partners]]
name = "fast"
count = 10
latency = { dist = "constant", value = "1ms" }
[dispatcher]
workers = 32
claim_batch = 512
attempt_timeout = "2s"
lease_timeout = "30s"
`

// BenchmarkLive prints end-to-end deliveries per second through SQLite and
// HTTP (injector → queue → dispatcher process → partner server → queue)
// and the arrival lateness p99.
//
//	go test -run '^$' -bench Live -benchtime 1x ./drills/live/
func BenchmarkLive(b *testing.B) {
	for i := 0; i < b.N; i++ {
		d := parseDrill(b, benchDrill)
		run, err := Run(d, b.TempDir(), Options{Executable: testExecutable(b), Log: io.Discard})
		if err != nil {
			b.Fatal(err)
		}
		s := run.Summary
		// Throughput over the drill: every delivery was created within the
		// source's 10 s and delivered by the end, so delivered ÷ the time
		// until the queue was empty is the rate the pipeline sustained.
		rate := float64(s.Deliveries.Delivered) / s.DrillTimeS
		b.ReportMetric(rate, "deliveries/s")
		b.ReportMetric(s.Lateness.P99*1e3, "lateness-p99-ms")
		b.ReportMetric(s.HealthyLatencyS.P99*1e3, "latency-p99-ms")
		fmt.Printf("live: %d delivered in %.2fs (%.0f deliveries/s), pending %d, lateness p50 %.2fms p99 %.2fms, delivery latency p99 %.1fms\n",
			s.Deliveries.Delivered, s.DrillTimeS, rate, s.Deliveries.Pending, s.Lateness.P50*1e3, s.Lateness.P99*1e3, s.HealthyLatencyS.P99*1e3)
	}
}
