package main

import (
	"bytes"
	"io"
	"math"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
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

// dispatcherScrape is what one scrape of a dispatcher's /metrics says:
// attempts (ended) and first attempts (started), summed over partners and
// statuses, and the exposition text itself.
type dispatcherScrape struct {
	attempts, first float64
	text            string
}

// scrapeDispatcher scrapes a dispatcher's /metrics; ok is false when it
// is not up.
func scrapeDispatcher(url string) (sc dispatcherScrape, ok bool) {
	c := &http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return sc, false
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil || resp.StatusCode != http.StatusOK {
		return sc, false
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		return sc, false
	}
	sum := func(name string) float64 {
		total := 0.0
		for _, m := range fams[name].GetMetric() {
			total += m.GetCounter().GetValue()
		}
		return total
	}
	return dispatcherScrape{sum("stormdrill_dispatcher_attempts_total"), sum("stormdrill_dispatcher_first_attempts_total"), string(body)}, true
}

// freeAddr is a loopback address with a port nothing listens on now.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// TestLiveMetricsEndWithTheSummarysCounters: a live drill's --metrics
// endpoint (the partner server's), scraped while it runs, ends with the
// request counters of the summary: attempts in all and per cohort. The
// dispatcher's (--dispatcher-metrics), scraped likewise, answers the
// README's amplification query, sum(rate(attempts_total)) ÷
// sum(rate(first_attempts_total)) over the run, within 5% of the
// summary's amplification. Both pass Prometheus' metric lint.
func TestLiveMetricsEndWithTheSummarysCounters(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a live drill for a few seconds")
	}
	addr, dispatcherAddr := freeAddr(t), freeAddr(t)
	url := "http://" + addr + "/metrics"
	var dispatcherScrapes []dispatcherScrape
	var lastPartnerText string

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
			if sc, ok := scrapeDispatcher("http://" + dispatcherAddr + "/metrics"); ok {
				mu.Lock()
				dispatcherScrapes = append(dispatcherScrapes, sc)
				mu.Unlock()
			}
			if text, ok := scrapeText(url); ok {
				mu.Lock()
				lastPartnerText = text
				mu.Unlock()
			}
		}
	}()
	out := t.TempDir()
	code, stdout, stderr := stormdrill(t, "run", "cmd/stormdrill/testdata/live-metrics.toml", "--out", out, "--quiet", "--metrics", addr, "--dispatcher-metrics", dispatcherAddr)
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

	// The README's query over a window that covers the whole run: the
	// dispatcher process started with its counters at 0, so the increase
	// of each is its last scraped value.
	if len(dispatcherScrapes) < 10 {
		t.Fatalf("%d scrapes of the dispatcher during the run", len(dispatcherScrapes))
	}
	end := dispatcherScrapes[len(dispatcherScrapes)-1]
	if s.Amplification == nil || *s.Amplification < 1.2 || end.first == 0 {
		t.Fatalf("summary amplification %v, %v first attempts scraped: the drill should retry", s.Amplification, end.first)
	}
	query := end.attempts / end.first
	diff := (query - *s.Amplification) / *s.Amplification
	t.Logf("amplification: query %.4f (%v attempts ÷ %v first attempts), summary %.4f: %+.2f%%", query, end.attempts, end.first, *s.Amplification, 100*diff)
	if math.Abs(diff) > 0.05 {
		t.Errorf("the amplification query reads %.4f, the summary %.4f: %+.1f%%, want within 5%%", query, *s.Amplification, 100*diff)
	}
	for name, text := range map[string]string{"dispatcher": end.text, "partner": lastPartnerText} {
		problems, err := promlint.New(strings.NewReader(text)).Lint()
		if err != nil || len(problems) > 0 {
			t.Errorf("%s /metrics: lint %v: %v", name, err, problems)
		}
		if !strings.Contains(text, "stormdrill_build_info{") {
			t.Errorf("%s /metrics has no stormdrill_build_info", name)
		}
	}
}

// scrapeText returns the exposition text at url.
func scrapeText(url string) (string, bool) {
	c := &http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return "", false
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	return string(body), err == nil && resp.StatusCode == http.StatusOK
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
