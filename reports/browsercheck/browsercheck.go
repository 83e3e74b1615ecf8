// Package browsercheck opens a report.html in headless Chromium with the
// network blocked and reports what a reader would see: errors, requests
// that leave the page, dead links, images, the gates table, the rendered
// text, whether the interactive uPlot charts draw and show values on
// hover, and screenshots. Tests of the
// reports and of the CLI share it.
package browsercheck

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// Laptop screen the page is looked at on, and the bound on one check.
const (
	ViewportWidth  = 1366
	ViewportHeight = 768
	Timeout        = 90 * time.Second
)

// ErrNoChromium is returned when chromium is not installed.
var ErrNoChromium = errors.New("chromium is not installed (Debian package chromium)")

// Chromium returns the path of the chromium binary, or ErrNoChromium.
func Chromium() (string, error) {
	p, err := exec.LookPath("chromium")
	if err != nil {
		return "", ErrNoChromium
	}
	return p, nil
}

// Image is what the page says of one <img>.
type Image struct {
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

// GateRow is one row of the gates table as the page shows it.
type GateRow struct {
	Cells []string `json:"cells"`
}

// Layout is the size of the page against the viewport.
type Layout struct {
	ReadyState   string `json:"readyState"`
	ScrollWidth  int    `json:"scrollWidth"`
	InnerWidth   int    `json:"innerWidth"`
	ScrollHeight int    `json:"scrollHeight"`
	Noscript     int    `json:"noscript"`    // <noscript> fallbacks
	ChartsDrawn  string `json:"chartsDrawn"` // data-charts set by the chart script
}

// Chart is one interactive chart: its canvas size and how many of its
// pixels are painted.
type Chart struct {
	ID      string  `json:"id"`
	Width   float64 `json:"width"`
	Height  float64 `json:"height"`
	Painted int     `json:"painted"`
	Series  int     `json:"series"`
}

// Hover is what the first chart's legend shows before and after the mouse
// moves over the middle of its plot area.
type Hover struct {
	Chart  string   `json:"chart"`
	Before []string `json:"before"`
	After  []string `json:"after"`
}

// Page is everything one visit found.
type Page struct {
	Problems  []string // console errors, exceptions, failed loads, requests leaving the page
	Title     string
	Images    []Image
	GateRows  []GateRow
	Layout    Layout
	Charts    []Chart
	Hover     Hover
	DeadLinks []string
	// Text is the page's text as rendered (document.body.innerText), for
	// the leak scan of what a reader sees.
	Text string
	// FirstScreen is the viewport as the page opens; Screenshot the whole
	// page.
	FirstScreen []byte
	Screenshot  []byte
}

type problems struct {
	mu   sync.Mutex
	list []string
}

func (p *problems) add(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.list) < 100 { // a broken page could log without end
		p.list = append(p.list, fmt.Sprintf(format, args...))
	}
}

// listen records console errors, uncaught exceptions, browser log errors,
// failed loads and any request that is not for the page itself or a data:
// URI it carries.
func (p *problems) listen(ev any) {
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
		if u, err := url.Parse(ev.Request.URL); err != nil || (u.Scheme != "file" && u.Scheme != "data") {
			p.add("request that is not file: or data: %.120s", ev.Request.URL)
		}
	case *network.EventLoadingFailed:
		p.add("load failed (%s): %s", ev.Type, ev.ErrorText)
	}
}

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
	scrollHeight: document.documentElement.scrollHeight,
	noscript: document.querySelectorAll('noscript').length,
	chartsDrawn: document.documentElement.getAttribute('data-charts') || ''})`

// chartsJS counts the painted pixels of each chart's canvas.
const chartsJS = `Array.from(document.querySelectorAll('div.chart')).map(div => {
	const c = div.querySelector('canvas');
	if (!c) return {id: div.id, width: 0, height: 0, painted: 0, series: 0};
	const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
	let painted = 0;
	for (let i = 3; i < d.length; i += 4) if (d[i] !== 0) painted++;
	return {id: div.id, width: c.width, height: c.height, painted: painted,
		series: div.querySelectorAll('.u-legend .u-series').length - 1};
})`

// legendJS reads the first chart's legend values (the x value first).
const legendJS = `(() => {
	const div = document.querySelector('div.chart');
	if (!div) return {chart: '', before: [], after: []};
	return Array.from(div.querySelectorAll('.u-legend .u-value')).map(e => e.textContent.trim());
})()`

const overJS = `(() => {
	const o = document.querySelector('div.chart .u-over');
	if (!o) return null;
	o.scrollIntoView({block: 'center'});
	const r = o.getBoundingClientRect();
	return [r.left + r.width / 2, r.top + r.height / 2];
})()`

// deadLinksJS lists links and sources that lead nowhere: in-page anchors
// without their element, and anything that is neither such an anchor nor
// a data: URI.
const deadLinksJS = `(() => {
	const dead = [];
	document.querySelectorAll('a[href]').forEach(a => {
		const h = a.getAttribute('href');
		if (h.startsWith('#')) {
			if (!document.getElementById(decodeURIComponent(h.slice(1)))) dead.push(h);
		} else {
			dead.push(h + ' (leaves the page)');
		}
	});
	document.querySelectorAll('[src]').forEach(e => {
		const s = e.getAttribute('src');
		if (!s.startsWith('data:')) dead.push(s + ' (not inside the page)');
	});
	return dead;
})()`

// Option changes what Visit does.
type Option func(*options)

type options struct{ screenshots bool }

// Screenshots makes Visit take screenshots of the first screen and of the
// whole page (Page.FirstScreen, Page.Screenshot); they cost seconds.
func Screenshots() Option { return func(o *options) { o.screenshots = true } }

// Visit opens path in headless Chromium with every host name unresolvable,
// waits for the page to load and its images to decode, hovers the first
// chart, and reports. userDir is a scratch directory for the profile.
func Visit(ctx context.Context, chromium, path, userDir string, opts ...Option) (*Page, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	pageURL := (&url.URL{Scheme: "file", Path: path}).String()
	ctx, cancel := context.WithTimeout(ctx, Timeout)
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
		chromedp.UserDataDir(userDir),
		chromedp.WindowSize(ViewportWidth, ViewportHeight),
	)
	// Cancelling the allocator kills the browser and waits for it.
	defer allocCancel()
	tabCtx, tabCancel := chromedp.NewContext(allocCtx)
	defer tabCancel()

	var pr problems
	if err := chromedp.Listen(tabCtx, pr.listen); err != nil {
		return nil, fmt.Errorf("start chromium: %w", err)
	}
	if err := chromedp.Do(tabCtx,
		chromedp.EmulateViewport(ViewportWidth, ViewportHeight),
		chromedp.Navigate(pageURL),
	); err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	p := &Page{}
	var err error
	if p.Title, err = chromedp.Run(tabCtx, chromedp.Title()); err != nil {
		return nil, err
	}
	if o.screenshots {
		if p.FirstScreen, err = chromedp.Run(tabCtx, chromedp.CaptureScreenshot()); err != nil {
			return nil, err
		}
	}
	if p.Images, err = chromedp.Run(tabCtx, chromedp.Evaluate[[]Image](imagesJS, chromedp.EvalAwaitPromise)); err != nil {
		return nil, err
	}
	if p.GateRows, err = chromedp.Run(tabCtx, chromedp.Evaluate[[]GateRow](gatesJS)); err != nil {
		return nil, err
	}
	if p.Layout, err = chromedp.Run(tabCtx, chromedp.Evaluate[Layout](layoutJS)); err != nil {
		return nil, err
	}
	if p.Charts, err = chromedp.Run(tabCtx, chromedp.Evaluate[[]Chart](chartsJS)); err != nil {
		return nil, err
	}
	if p.DeadLinks, err = chromedp.Run(tabCtx, chromedp.Evaluate[[]string](deadLinksJS)); err != nil {
		return nil, err
	}
	if p.Text, err = chromedp.Run(tabCtx, chromedp.Evaluate[string](`document.body.innerText`)); err != nil {
		return nil, err
	}
	if len(p.Charts) > 0 {
		p.Hover.Chart = p.Charts[0].ID
		if p.Hover.Before, err = chromedp.Run(tabCtx, chromedp.Evaluate[[]string](legendJS)); err != nil {
			return nil, err
		}
		at, err := chromedp.Run(tabCtx, chromedp.Evaluate[[]float64](overJS))
		if err != nil {
			return nil, err
		}
		if len(at) == 2 {
			// uPlot updates the legend on the next animation frame.
			if err := chromedp.Do(tabCtx, chromedp.MouseEvent(chromedp.MouseMoved, at[0], at[1]), chromedp.Sleep(300*time.Millisecond)); err != nil {
				return nil, err
			}
			if p.Hover.After, err = chromedp.Run(tabCtx, chromedp.Evaluate[[]string](legendJS)); err != nil {
				return nil, err
			}
		}
	}
	if o.screenshots {
		if p.Screenshot, err = chromedp.Run(tabCtx, chromedp.FullScreenshot(100)); err != nil {
			return nil, err
		}
	}
	// Stop the browser now, so that the events it sent are all in.
	tabCancel()
	allocCancel()
	pr.mu.Lock()
	p.Problems = append([]string(nil), pr.list...)
	pr.mu.Unlock()
	return p, nil
}

// SaveScreenshot writes the screenshot of the whole page to the file
// named by the environment variable env, if it is set, and that of the
// first screen beside it (name.png → name.first.png); it returns the path
// of the first.
func (p *Page) SaveScreenshot(env string) (string, error) {
	path := os.Getenv(env)
	if path == "" {
		return "", nil
	}
	if err := os.WriteFile(path, p.Screenshot, 0o644); err != nil {
		return path, err
	}
	first := strings.TrimSuffix(path, ".png") + ".first.png"
	return path, os.WriteFile(first, p.FirstScreen, 0o644)
}

// HoverProblems says what is wrong with the hover check, if anything: the
// legend must show no series value before the mouse moves over the chart,
// and at least one number after.
func (p *Page) HoverProblems() []string {
	var out []string
	if p.Hover.Chart == "" {
		return []string{"no chart to hover"}
	}
	if len(p.Hover.After) < 2 {
		return []string{fmt.Sprintf("chart %s: legend after hovering is %q; want the x value and the series' values", p.Hover.Chart, p.Hover.After)}
	}
	number := false
	for _, v := range p.Hover.After[1:] {
		if v != "" && v != "–" && v != "--" && strings.ContainsAny(v, "0123456789") {
			number = true
		}
	}
	if !number {
		out = append(out, fmt.Sprintf("chart %s: hovering shows no value in the legend: %q", p.Hover.Chart, p.Hover.After))
	}
	if fmt.Sprint(p.Hover.Before) == fmt.Sprint(p.Hover.After) {
		out = append(out, fmt.Sprintf("chart %s: the legend did not change on hover (%q)", p.Hover.Chart, p.Hover.After))
	}
	return out
}
