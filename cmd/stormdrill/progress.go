package main

import (
	"io"
	"sync"
	"time"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"

	"github.com/stormdrill/stormdrill/drills"
	"github.com/stormdrill/stormdrill/reports"
)

// progressBarDelay: runs shorter than this never show a bar.
const progressBarDelay = time.Second

// progress shows an mpb bar on stderr for a run that lasts longer than
// about a second: drill time against total, deliveries so far, the DLQ count
// and an ETA. It draws nothing when stderr is not a terminal or --quiet.
type progress struct {
	w           io.Writer
	interactive bool
	name        string
	started     time.Time
	p           *mpb.Progress
	bar         *mpb.Bar

	// last is written by the run and read by mpb's drawing goroutine.
	mu   sync.Mutex
	last drills.Progress
}

// snapshot is the latest progress report, safe to read from any goroutine.
func (p *progress) snapshot() drills.Progress {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.last
}

// timeText is "drill time / total", with "draining" once the source has
// stopped and the run waits for the backlog.
func timeText(pr drills.Progress) string {
	s := reports.FormatDuration(pr.DrillTime.Truncate(time.Second).Seconds()) + " / " + reports.FormatDuration(pr.Total.Seconds())
	if pr.DrillTime > pr.Total {
		s += " (draining)"
	}
	return s
}

// countsText is "deliveries N  DLQ M" with thousands separators.
func countsText(pr drills.Progress) string {
	return "deliveries " + reports.FormatValue(reports.Count, float64(pr.Created)) + "  DLQ " + reports.FormatValue(reports.Count, float64(pr.DLQ))
}

// etaText estimates the wall time left from the share of drill time done
// since the run started. mpb's own ETA would count from when the bar
// appeared, a second in, and so come out too short.
func etaText(pr drills.Progress, elapsed time.Duration) string {
	if pr.Total <= 0 || pr.DrillTime <= 0 {
		return "ETA ?"
	}
	done := min(float64(pr.DrillTime)/float64(pr.Total), 1)
	if done >= 1 {
		return "ETA draining"
	}
	left := time.Duration(float64(elapsed) * (1 - done) / done)
	return "ETA " + reports.FormatDuration(left.Round(time.Second).Seconds())
}

func newProgress(w io.Writer, interactive bool, d *drills.Drill) *progress {
	return &progress{w: w, interactive: interactive, name: d.Name, started: time.Now()}
}

func (p *progress) update(pr drills.Progress) {
	if !p.interactive {
		return
	}
	p.mu.Lock()
	p.last = pr
	p.mu.Unlock()
	if p.bar == nil {
		if time.Since(p.started) < progressBarDelay {
			return
		}
		// AutoRefresh: the caller has decided the output is a terminal.
		p.p = mpb.New(mpb.WithOutput(p.w), mpb.WithWidth(40), mpb.WithAutoRefresh())
		total := int64(pr.Total / time.Second)
		p.bar = p.p.New(max(total, 1),
			mpb.BarStyle(),
			mpb.PrependDecorators(
				decor.Name(p.name+" ", decor.WCSyncSpaceR),
				decor.Any(func(decor.Statistics) string { return timeText(p.snapshot()) }, decor.WCSyncSpace),
			),
			mpb.AppendDecorators(
				decor.Any(func(decor.Statistics) string { return countsText(p.snapshot()) }, decor.WCSyncSpace),
				decor.Any(func(decor.Statistics) string { return etaText(p.snapshot(), time.Since(p.started)) }, decor.WCSyncSpace),
			),
		)
	}
	p.bar.SetCurrent(min(int64(pr.DrillTime/time.Second), int64(pr.Total/time.Second)))
}

func (p *progress) finish() {
	if p.bar == nil {
		return
	}
	p.bar.SetTotal(-1, true)
	p.p.Wait()
}
