package main

import (
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/stormdrill/stormdrill/reports"
)

// scrapeRequests scrapes url and returns stormdrill_partner_requests_total
// summed over its series, by partner and in all; ok is false when the
// endpoint is not up or the metric is not there.
func scrapeRequests(url string) (byPartner map[string]float64, total float64, ok bool) {
	c := &http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return nil, 0, false
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, 0, false
	}
	f, found := fams["stormdrill_partner_requests_total"]
	if !found {
		return nil, 0, false
	}
	byPartner = map[string]float64{}
	for _, m := range f.GetMetric() {
		var partner string
		for _, l := range m.GetLabel() {
			if l.GetName() == "partner" {
				partner = l.GetValue()
			}
		}
		byPartner[partner] += m.GetCounter().GetValue()
		total += m.GetCounter().GetValue()
	}
	return byPartner, total, true
}

// TestLiveMetricsEndWithTheSummarysCounters: a live drill's --metrics
// endpoint, scraped while it runs, ends with the request counters of the
// summary: attempts in all and per cohort.
func TestLiveMetricsEndWithTheSummarysCounters(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a live drill for a few seconds")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	url := "http://" + addr + "/metrics"

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var scrapes []float64 // totals, in scrape order
	var last map[string]float64
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
			if byPartner, total, ok := scrapeRequests(url); ok {
				mu.Lock()
				scrapes = append(scrapes, total)
				last = byPartner
				mu.Unlock()
			}
		}
	}()
	out := t.TempDir()
	code, stdout, stderr := stormdrill(t, "run", "cmd/stormdrill/testdata/live-metrics.toml", "--out", out, "--quiet", "--metrics", addr)
	close(stop)
	wg.Wait()
	if code != exitOK {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	if !strings.Contains(stderr, "metrics: "+url) {
		t.Errorf("stderr does not name the metrics URL: %q", stderr)
	}
	s, err := reports.ReadSummary(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(scrapes) < 10 {
		t.Fatalf("%d scrapes during the run", len(scrapes))
	}
	for i := 1; i < len(scrapes); i++ {
		if scrapes[i] < scrapes[i-1] {
			t.Fatalf("the counter went down: scrape %d %v, scrape %d %v", i-1, scrapes[i-1], i, scrapes[i])
		}
	}
	if scrapes[0] >= scrapes[len(scrapes)-1] {
		t.Errorf("the counter did not move during the run: %v → %v", scrapes[0], scrapes[len(scrapes)-1])
	}
	if got := scrapes[len(scrapes)-1]; got != float64(s.Attempts.Total) || s.Attempts.Total == 0 {
		t.Errorf("last scrape: %v requests; summary: %d attempts", got, s.Attempts.Total)
	}
	for _, c := range s.Cohorts {
		if last[c.Name] != float64(c.Attempts) {
			t.Errorf("cohort %s: last scrape %v requests, summary %d attempts", c.Name, last[c.Name], c.Attempts)
		}
	}
	t.Logf("%d scrapes; the last: %v requests, the summary: %d attempts", len(scrapes), scrapes[len(scrapes)-1], s.Attempts.Total)
}

// Every /metrics (the partner's and the dispatcher's share serveMetrics)
// refuses a web page as the control API does: a foreign Host (DNS
// rebinding) gets 421, a foreign Origin 403; a local scrape gets 200.
func TestMetricsRefuseWebPages(t *testing.T) {
	var out strings.Builder
	ms, err := serveMetrics("dispatch", "127.0.0.1:0", &out, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	defer ms.Close()
	url := strings.TrimSpace(strings.TrimPrefix(out.String(), "metrics: "))
	for _, c := range []struct {
		name, host, origin string
		want               int
	}{
		{"local", "", "", 200},
		{"foreign Host", "evil.example", "", 421},
		{"foreign Origin", "", "http://evil.example", 403},
	} {
		req, _ := http.NewRequest("GET", url, nil)
		if c.host != "" {
			req.Host = c.host
		}
		if c.origin != "" {
			req.Header.Set("Origin", c.origin)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("%s: %d, want %d", c.name, resp.StatusCode, c.want)
		}
	}
}
