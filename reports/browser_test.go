package reports

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// Laptop screen the page is looked at on.
const (
	browserViewportWidth  = 1366
	browserViewportHeight = 768
	browserTimeout        = 60 * time.Second
)

// browserRun is the golden fixture (gates, cohorts, outages, baseline) with
// an hour of synthetic samples and both latency CDFs, so that every plot is
// drawn from realistic data rather than from three samples.
func browserRun(t *testing.T) *Run {
	t.Helper()
	run := fixtureRun(t)
	synthetic := syntheticRun(int(run.Summary.DurationS), []string{"acme", "globex"})
	run.Timeseries = synthetic.Timeseries
	// Name the synthetic dead-letter columns after the fixture's reasons,
	// so that the plot's legend agrees with the dead-letter table: the
	// third column fills late in the outage, as window-expired does.
	run.Timeseries.Reasons = []string{"permanent", "zz-custom", "window-expired"}
	run.HealthyCDF = synthetic.HealthyCDF
	run.HealthyOutageCDF = synthetic.HealthyOutageCDF
	return run
}

// pageProblems collects what the browser reports while the page loads. The
// listener runs on chromedp's reader goroutine, so it only appends under
// the lock; the test reads after the checks.
type pageProblems struct {
	mu       sync.Mutex
	problems []string
}

func (p *pageProblems) add(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	// Bounded: a broken page could log without end.
	if len(p.problems) < 100 {
		p.problems = append(p.problems, fmt.Sprintf(format, args...))
	}
}

func (p *pageProblems) list() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.problems...)
}

// listen records console errors, uncaught exceptions, browser log errors,
// failed loads and any request that would leave the machine.
func (p *pageProblems) listen(ev any) {
	switch ev := ev.(type) {
	case *runtime.EventConsoleAPICalled:
		if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeAssert {
			var args []string
			for _, a := range ev.Args {
				args = append(args, string(a.Value)+a.Description)
			}
			p.add("console.%s: %s", ev.Type, strings.Join(args, " "))
		}
	case *runtime.EventExceptionThrown:
		d := ev.ExceptionDetails
		text := d.Text
		if d.Exception != nil {
			text += " " + d.Exception.Description
		}
		p.add("uncaught exception: %s", text)
	case *log.EventEntryAdded:
		if ev.Entry.Level == log.EntryLevelError {
			p.add("browser log error (%s): %s %s", ev.Entry.Source, ev.Entry.Text, ev.Entry.URL)
		}
	case *network.EventRequestWillBeSent:
		// The page must be self-contained: it reads only itself and the
		// data: URIs it carries.
		if u, err := url.Parse(ev.Request.URL); err != nil || (u.Scheme != "file" && u.Scheme != "data") {
			p.add("request that is not file: or data: %.120s", ev.Request.URL)
		}
	case *network.EventLoadingFailed:
		p.add("load failed (%s): %s", ev.Type, ev.ErrorText)
	}
}

// imageState is what the page says of one <img>.
type imageState struct {
	Alt           string  `json:"alt"`
	Complete      bool    `json:"complete"`
	Decoded       bool    `json:"decoded"`
	NaturalWidth  int     `json:"naturalWidth"`
	NaturalHeight int     `json:"naturalHeight"`
	Left          float64 `json:"left"`
	Right         float64 `json:"right"`
	Width         float64 `json:"width"`
	Height        float64 `json:"height"`
}

// gateRowText is one row of the gates table as the page shows it.
type gateRowText struct {
	Cells []string `json:"cells"`
}

// pageLayout is the size of the page against the viewport.
type pageLayout struct {
	ReadyState   string `json:"readyState"`
	ScrollWidth  int    `json:"scrollWidth"`
	InnerWidth   int    `json:"innerWidth"`
	ScrollHeight int    `json:"scrollHeight"`
}

// imagesJS waits for every image to decode (decode() rejects for a broken
// image) and then reports its state and where it is drawn.
const imagesJS = `Promise.all(Array.from(document.images).map(img =>
	img.decode().then(() => true, () => false).then(decoded => {
		const r = img.getBoundingClientRect();
		return {alt: img.alt, complete: img.complete, decoded: decoded,
			naturalWidth: img.naturalWidth, naturalHeight: img.naturalHeight,
			left: r.left, right: r.right, width: r.width, height: r.height};
	})))`

const gatesJS = `Array.from(document.querySelectorAll('#gates tbody tr')).map(tr =>
	({cells: Array.from(tr.cells).map(td => td.innerText.trim())}))`

const layoutJS = `({readyState: document.readyState,
	scrollWidth: document.documentElement.scrollWidth,
	innerWidth: window.innerWidth,
	scrollHeight: document.documentElement.scrollHeight})`

// TestReportHTMLInBrowser opens report.html, as WriteRunFiles writes it, in
// headless Chromium with the network blocked, and checks what a reader
// would: no errors, every plot drawn, the gates table complete, the title,
// nothing wider than a laptop screen. It keeps a full-page screenshot; set
// STORMDRILL_SCREENSHOT=file.png to get a copy.
func TestReportHTMLInBrowser(t *testing.T) {
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		msg := "chromium is not installed (Debian package chromium), so report.html is not checked in a browser"
		if os.Getenv("CI") != "" {
			t.Fatal(msg + "; .ci/run should have installed it")
		}
		t.Skip(msg)
	}

	run := browserRun(t)
	dir := t.TempDir()
	if err := WriteRunFiles(dir, run); err != nil {
		t.Fatal(err)
	}
	svgs, err := filepath.Glob(filepath.Join(dir, "*.svg"))
	if err != nil || len(svgs) == 0 {
		t.Fatalf("WriteRunFiles wrote no plots (err %v)", err)
	}
	pageURL := (&url.URL{Scheme: "file", Path: filepath.ToSlash(filepath.Join(dir, "report.html"))}).String()

	start := time.Now()
	ctx, cancel := context.WithTimeout(t.Context(), browserTimeout)
	defer cancel()
	allocCtx, allocCancel := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(chromium),
		chromedp.Headless,
		chromedp.NoSandbox, // tests run as root, where the sandbox refuses to start
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-default-apps", true),
		chromedp.Flag("disable-extensions", true),
		// Every host name fails to resolve: a page that reaches out fails
		// loudly here instead of leaking traffic.
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND"),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(browserViewportWidth, browserViewportHeight),
	)
	// Cancelling the allocator kills the browser and waits for it, before
	// t.TempDir's cleanup removes the profile.
	defer allocCancel()
	tabCtx, tabCancel := chromedp.NewContext(allocCtx)
	defer tabCancel()

	var problems pageProblems
	if err := chromedp.Listen(tabCtx, problems.listen); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	if err := chromedp.Do(tabCtx,
		chromedp.EmulateViewport(browserViewportWidth, browserViewportHeight),
		chromedp.Navigate(pageURL),
	); err != nil {
		t.Fatalf("open report.html: %v", err)
	}
	title, err := chromedp.Run(tabCtx, chromedp.Title())
	if err != nil {
		t.Fatal(err)
	}
	images, err := chromedp.Run(tabCtx, chromedp.Evaluate[[]imageState](imagesJS, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	gateRows, err := chromedp.Run(tabCtx, chromedp.Evaluate[[]gateRowText](gatesJS))
	if err != nil {
		t.Fatal(err)
	}
	layout, err := chromedp.Run(tabCtx, chromedp.Evaluate[pageLayout](layoutJS))
	if err != nil {
		t.Fatal(err)
	}
	shot, err := chromedp.Run(tabCtx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	// Stop the browser now, so that the events it sent are all in.
	tabCancel()
	allocCancel()
	t.Logf("browser checks took %v", time.Since(start).Round(time.Millisecond))

	shotPath := filepath.Join(t.TempDir(), "report.png")
	if err := os.WriteFile(shotPath, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	if p := os.Getenv("STORMDRILL_SCREENSHOT"); p != "" {
		if err := os.WriteFile(p, shot, 0o644); err != nil {
			t.Errorf("STORMDRILL_SCREENSHOT: %v", err)
		} else {
			t.Logf("screenshot of report.html (%dx%d viewport) in %s", browserViewportWidth, browserViewportHeight, p)
		}
	}

	for _, p := range problems.list() {
		t.Errorf("page: %s", p)
	}

	if !strings.Contains(title, run.Summary.Drill) {
		t.Errorf("title %q does not name the drill %q", title, run.Summary.Drill)
	}
	if layout.ReadyState != "complete" {
		t.Errorf("document.readyState %q after load, want complete", layout.ReadyState)
	}

	// One image per plot written, each loaded, decoded and drawn inside
	// the viewport's width.
	if len(images) != len(svgs) {
		t.Errorf("%d images on the page, want one per plot (%d)", len(images), len(svgs))
	}
	for i, img := range images {
		name := fmt.Sprintf("image %d (%q)", i, img.Alt)
		if !img.Complete || !img.Decoded || img.NaturalWidth <= 0 || img.NaturalHeight <= 0 {
			t.Errorf("%s did not load: complete %v, decoded %v, natural size %dx%d",
				name, img.Complete, img.Decoded, img.NaturalWidth, img.NaturalHeight)
		}
		if img.Width <= 0 || img.Height <= 0 {
			t.Errorf("%s is drawn %vx%v", name, img.Width, img.Height)
		}
		if img.Left < 0 || img.Right > float64(layout.InnerWidth) {
			t.Errorf("%s spans x %v..%v, outside the %dpx viewport", name, img.Left, img.Right, layout.InnerWidth)
		}
	}
	if layout.ScrollWidth > layout.InnerWidth {
		t.Errorf("page is %dpx wide, wider than the %dpx viewport: it scrolls sideways", layout.ScrollWidth, layout.InnerWidth)
	}

	// One row per gate, in order, with the gate's own verdict.
	gates := run.Summary.Gates
	if len(gateRows) != len(gates) {
		t.Fatalf("#gates has %d rows, want one per gate (%d)", len(gateRows), len(gates))
	}
	for i, g := range gates {
		cells := gateRows[i].Cells
		if len(cells) != 3 {
			t.Errorf("gate row %d has %d cells, want 3: %q", i, len(cells), cells)
			continue
		}
		want := "FAIL"
		if g.Pass {
			want = "pass"
		}
		if cells[0] != g.Expr || !strings.Contains(cells[2], want) {
			t.Errorf("gate row %d reads %q, want %q with verdict %q", i, cells, g.Expr, want)
		}
	}
}
