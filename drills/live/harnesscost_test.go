//go:build unix

package live

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stormdrill/stormdrill/internal/testsuite"
	"github.com/stormdrill/stormdrill/model/runtime/dispatcher"
)

// pacedRequests sends n requests at perSecond to the server behind l, from
// rawClientWorkers goroutines on one keep-alive client (bounded: an
// unbounded open-loop client on two cores collapses through connections
// left in TIME_WAIT), with the dispatcher's headers and body, to the
// ceiling drill's ten subscribers' paths. It returns the requests that
// got a 2xx.
func pacedRequests(tb testing.TB, base string, n int, perSecond float64) int {
	client := &http.Client{Transport: &http.Transport{Proxy: nil, MaxConnsPerHost: rawClientWorkers,
		MaxIdleConnsPerHost: rawClientWorkers, MaxIdleConns: rawClientWorkers, DisableCompression: true}}
	defer client.CloseIdleConnections()
	tickets := make(chan int, rawClientWorkers)
	go func() {
		// One tick a millisecond releases that millisecond's requests.
		defer close(tickets)
		start := time.Now()
		sent := 0
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for sent < n {
			<-tick.C
			due := min(n, int(time.Since(start).Seconds()*perSecond)+1)
			for ; sent < due; sent++ {
				tickets <- sent
			}
		}
	}()
	var mu sync.Mutex
	ok := 0
	var wg sync.WaitGroup
	for w := 0; w < rawClientWorkers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			good := 0
			for i := range tickets {
				m := i % 10
				id := "cost-" + strconv.Itoa(i) + ":fast-" + strconv.Itoa(m)
				body := []byte(`{"id":` + strconv.Quote(id) + `}`)
				req, _ := http.NewRequest(http.MethodPost, PartnerURL(base, "fast", m), bytes.NewReader(body))
				req.Header.Set(dispatcher.HeaderIdempotencyKey, id)
				req.Header.Set(dispatcher.HeaderAttempt, "1")
				req.Header.Set("Content-Type", "application/json")
				resp, err := client.Do(req)
				if err != nil {
					continue
				}
				_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, dispatcher.MaxResponseBytes))
				resp.Body.Close()
				if resp.StatusCode/100 == 2 {
					good++
				}
			}
			mu.Lock()
			ok += good
			mu.Unlock()
		}()
	}
	wg.Wait()
	return ok
}

// bareServer is the least a partner can do: read the body (bounded) and
// answer 200 after the ceiling drill's 1 ms.
func bareServer() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, 64<<10))
		// The subscribers' scripted latency, held as the partner holds it:
		// on a timer, given up when the caller leaves.
		t := time.NewTimer(time.Millisecond)
		defer t.Stop()
		select {
		case <-t.C:
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"ok":true}`))
	})
}

// serveLoopback serves h on a loopback port until the returned stop.
func serveLoopback(tb testing.TB, h http.Handler) (base string, stop func()) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	return "http://" + l.Addr().String(), func() { _ = srv.Close() }
}

// BenchmarkHarnessCost sets the harness's own CPU per delivery beside a
// bare net/http server and client doing the same requests, all measured
// in one run at the same offered rate:
//   - bare: a net/http server that reads the body and answers 200, and the
//     paced client loop (rawClientWorkers workers, keep-alive);
//   - the partner server (fakepartner) with the same client;
//   - a live run of the ceiling drill: this process then holds the
//     runner's parts (the partner server, the injector writing the store,
//     the sampler and the recorder), while the client is the dispatcher,
//     a child process whose CPU is not counted.
//
// The ratio of the live run's to the bare pair's is the harness's cost;
// the target is at most 2×. The bare pair runs before and after the live
// run, and the ratio is to their mean.
func BenchmarkHarnessCost(b *testing.B) {
	const perSecond = 2000.0 // a fifth of the two-core machine's ceiling
	const dur = 3 * time.Second
	n := int(perSecond * dur.Seconds())
	perRequest := func(base string, stop func()) float64 {
		defer stop()
		cpu0 := testsuite.ProcessCPU(b)
		ok := pacedRequests(b, base, n, perSecond)
		cpu := testsuite.ProcessCPU(b) - cpu0
		if ok < n*9/10 {
			b.Fatalf("%d of %d requests answered 2xx", ok, n)
		}
		return float64(cpu.Microseconds()) / float64(ok)
	}
	bareCost := func() float64 { return perRequest(serveLoopback(b, bareServer())) }
	partnerCost := func() float64 { return perRequest(ceilingPartners(b)) }
	for b.Loop() {
		bare0 := bareCost()
		partner := partnerCost()
		cpu0 := testsuite.ProcessCPU(b)
		run := liveRun(b, perSecond, dur)
		liveCPU := testsuite.ProcessCPU(b) - cpu0
		delivered := run.Summary.Deliveries.Delivered
		if delivered < int64(n)*9/10 {
			b.Fatalf("the live run delivered %d of %d", delivered, n)
		}
		live := float64(liveCPU.Microseconds()) / float64(delivered)
		bare1 := bareCost()
		bare := (bare0 + bare1) / 2
		b.ReportMetric(live/bare, "harness/bare")
		b.ReportMetric(partner/bare, "partner/bare")
		fmt.Printf("\nharness cost at %.0f deliveries/s for %s, %s (target: the runner's parts ≤ 2× the bare server and client)\n", perSecond, dur, machineLoad())
		fmt.Printf("| what | CPU µs per delivery | ÷ bare |\n| --- | ---: | ---: |\n")
		fmt.Printf("| bare net/http server + client loop (before %.1f, after %.1f) | %.1f | 1.00 |\n", bare0, bare1, bare)
		fmt.Printf("| partner server + the same client loop | %.1f | %.2f |\n", partner, partner/bare)
		fmt.Printf("| live run's process: partner server, injector, sampler, recorder (%d delivered) | %.1f | **%.2f** |\n\n", delivered, live, live/bare)
	}
}
