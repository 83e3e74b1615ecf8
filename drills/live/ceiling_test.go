package live

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stormdrill/stormdrill/fakepartner"
	"github.com/stormdrill/stormdrill/model/dispatcher"
	"github.com/stormdrill/stormdrill/reports"
)

// ceilingDrill fans each event out to 10 subscribers that answer in 1ms;
// RATE and DURATION are filled in per run.
const ceilingDrill = `
name = "ceiling"
mode = "live"
seed = 5
duration = "DURATION"
drain = "30s"
sample_interval = "100ms"
[source]
arrival = "constant"
rate = "RATE/s"
[[partners]]
name = "fast"
count = 10
latency = { dist = "constant", value = "1ms" }
[dispatcher]
workers = 64
claim_batch = 512
attempt_timeout = "2s"
lease_timeout = "30s"
`

// rawClientWorkers is the minimal client loop's concurrency: as many
// requests in flight as the pipeline's dispatcher has workers.
const rawClientWorkers = 64

// rawHTTPRate is the reference: a minimal Go client loop (rawClientWorkers
// goroutines, one keep-alive client, the dispatcher's headers and body)
// POSTing to the same partner server for dur. It returns requests/s.
func rawHTTPRate(tb testing.TB, dur time.Duration) float64 {
	d := parseDrill(tb, strings.NewReplacer("RATE", "1", "DURATION", "1s").Replace(ceilingDrill))
	specs, err := d.PartnerSpecs()
	if err != nil {
		tb.Fatal(err)
	}
	srv, err := fakepartner.NewServer(specs, fakepartner.ServerOptions{Speed: 1, Seed: d.Seed})
	if err != nil {
		tb.Fatal(err)
	}
	defer srv.Close()
	l, err := fakepartner.ListenLoopback("127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	go func() { _ = srv.Serve(l) }()
	srv.SetStart(time.Now())
	base := "http://" + l.Addr().String()
	client := &http.Client{Transport: &http.Transport{Proxy: nil, MaxConnsPerHost: rawClientWorkers,
		MaxIdleConnsPerHost: rawClientWorkers, MaxIdleConns: rawClientWorkers, DisableCompression: true}}
	defer client.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), dur)
	defer cancel()
	var done, failed atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < rawClientWorkers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ctx.Err() == nil; i++ {
				m := (w + i) % 10
				id := "raw-" + strconv.Itoa(w) + "-" + strconv.Itoa(i) + ":fast-" + strconv.Itoa(m)
				body := []byte(`{"id":` + strconv.Quote(id) + `}`)
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, PartnerURL(base, "fast", m), bytes.NewReader(body))
				req.Header.Set(dispatcher.HeaderIdempotencyKey, id)
				req.Header.Set(dispatcher.HeaderAttempt, "1")
				req.Header.Set("Content-Type", "application/json")
				resp, err := client.Do(req)
				if err != nil {
					if ctx.Err() == nil {
						failed.Add(1)
					}
					continue
				}
				_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, dispatcher.MaxResponseBytes))
				resp.Body.Close()
				if resp.StatusCode/100 == 2 {
					done.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if n := failed.Load(); n > 0 {
		tb.Logf("raw client: %d requests failed", n)
	}
	return float64(done.Load()) / time.Since(start).Seconds()
}

// liveRun runs the ceiling drill offering perSecond deliveries for dur.
func liveRun(tb testing.TB, perSecond float64, dur time.Duration) *reports.Run {
	events := perSecond / 10 // fan-out 10
	src := strings.NewReplacer("RATE", strconv.FormatFloat(events, 'f', 3, 64), "DURATION", dur.String()).Replace(ceilingDrill)
	run, err := Run(parseDrill(tb, src), tb.TempDir(), Options{Executable: testExecutable(tb), Log: io.Discard})
	if err != nil {
		tb.Fatal(err)
	}
	return run
}

// busyRate is the pipeline's delivery rate while it had work waiting: the
// mean successes/s over the samples with deliveries ready and due. It is
// the rate the pipeline sustains at its limit, start-up and the idle tail
// left out. A run that never had a backlog gives delivered ÷ drill time.
func busyRate(run *reports.Run) float64 {
	var sum float64
	n := 0
	if run.Timeseries != nil {
		for _, s := range run.Timeseries.Samples {
			if s.Ready > 0 {
				sum += s.SuccessesPerS
				n++
			}
		}
	}
	if n == 0 {
		return float64(run.Summary.Deliveries.Delivered) / run.Summary.DrillTimeS
	}
	return sum / float64(n)
}

// BenchmarkLiveCeiling measures, in one run on one machine, the raw HTTP
// rate of a minimal client loop against the partner server, the live
// pipeline's end-to-end rate (injector → SQLite → dispatcher process →
// partner server → SQLite) offered 1.5× that raw rate, and the highest offered
// rate at which arrival lateness p99 stays under 2 ms, and the rate it
// sustains offered twice its end-to-end rate; it prints the ratios. Absolute figures depend on the machine and on what else runs on
// it; the ratios are the result.
//
//	go test -run '^$' -bench LiveCeiling -benchtime 1x ./drills/live/
func BenchmarkLiveCeiling(b *testing.B) {
	const probe = 3 * time.Second
	for i := 0; i < b.N; i++ {
		raw := rawHTTPRate(b, probe)
		// Offered above the wire's rate, the pipeline runs at its own limit.
		run := liveRun(b, 1.5*raw, probe)
		s := run.Summary
		e2e := busyRate(run)
		// The highest offered rate with lateness p99 < 2ms: bisection
		// between 0 and the end-to-end rate, 4 probes.
		lo, hi := 0.0, e2e
		var loP99 float64
		for k := 0; k < 4; k++ {
			mid := (lo + hi) / 2
			p := liveRun(b, mid, probe).Summary
			if p.Lateness.P99*1e3 < 2 && p.Deliveries.Pending == 0 {
				lo, loP99 = mid, p.Lateness.P99*1e3
			} else {
				hi = mid
			}
		}
		// Overload: twice the end-to-end rate; the rate sustained while the
		// backlog lasts, against the end-to-end rate.
		over := liveRun(b, 2*e2e, probe)
		overRatio := busyRate(over) / e2e
		b.ReportMetric(raw, "raw-req/s")
		b.ReportMetric(overRatio, "overload/e2e")
		b.ReportMetric(e2e, "e2e-deliveries/s")
		b.ReportMetric(e2e/raw, "e2e/raw")
		b.ReportMetric(lo, "lateness<2ms-deliveries/s")
		fmt.Printf("live ceiling: raw HTTP %.0f req/s (%d workers); end to end %.0f deliveries/s = %.2f× raw (pending %d, lateness p99 %.1fms); lateness p99 < 2ms up to %.0f/s offered = %.2f× raw (p99 %.2fms)\n",
			raw, rawClientWorkers, e2e, e2e/raw, s.Deliveries.Pending, s.Lateness.P99*1e3, lo, lo/raw, loP99)
		fmt.Printf("live overload: offered %.0f/s (2× end to end): sustained %.0f/s = %.2f× end to end, %d pending at the end\n",
			2*e2e, busyRate(over), overRatio, over.Summary.Deliveries.Pending)
	}
}
