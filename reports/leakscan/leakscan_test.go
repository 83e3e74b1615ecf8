package leakscan

import (
	"strings"
	"testing"
)

func TestFindsSourceText(t *testing.T) {
	for _, leak := range []string{
		"Across 5 seeds d.External = ExternalRows(r.Summary.External) more",
		"value {{.Title}} here",
		"stray }} here",
		"count %!d(string=12)",
		"a %v in the text",
		"figure <nil>",
		"x := buildView(r, plots)",
		"map[string]int64{}",
		"latency NaN s",
		"at 0xc000123456 now",
	} {
		if got := Find(leak); len(got) == 0 {
			t.Errorf("Find(%q) found nothing", leak)
		}
	}
}

func TestPassesReportProse(t *testing.T) {
	for _, prose := range []string{
		"PASS: all 3 gates hold on all 5 seeds",
		"acme unavailable 20m: 1,234 retries, drained 4m46s after it ended, 0 dead letters",
		"healthy.latency.p99 < 30m",
		"lost == 0",
		"amplification <= 3 · healthy_within_slo >= 99.9%",
		"created 10 = delivered 9 + dead-lettered 1 + pending 0 + lost 0",
		"Retry-After honoured: 0 of 12 retries early",
		"95% CI: confidence interval of the mean, Student's t with n−1 degrees of freedom.",
		"p50 / p90 / p99 / p99.9 / max: 0.4ms / 1.1ms",
		"gate drain_time < 10m failed: measured not drained",
	} {
		if got := Find(prose); len(got) > 0 {
			t.Errorf("Find(%q) = %q, want nothing", prose, got)
		}
	}
}

func TestVisibleText(t *testing.T) {
	page := `<html><head><style>a { b: c }</style><script>var x = f(1); if (a}}b) {}</script></head>
<body><h1>Title &amp; more</h1><!-- {{ hidden }} --><noscript><img alt="x"></noscript><p>shown</p></body></html>`
	got := strings.Join(strings.Fields(VisibleText(page)), " ")
	if got != "Title & more shown" {
		t.Errorf("VisibleText = %q", got)
	}
}
