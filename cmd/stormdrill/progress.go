package main

import (
	"io"
	"strconv"
	"time"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"

	"github.com/stormdrill/stormdrill/drills"
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
	last        drills.Progress
}

func newProgress(w io.Writer, interactive bool, d *drills.Drill) *progress {
	return &progress{w: w, interactive: interactive, name: d.Name, started: time.Now()}
}

func (p *progress) update(pr drills.Progress) {
	if !p.interactive {
		return
	}
	p.last = pr
	if p.bar == nil {
		if time.Since(p.started) < progressBarDelay {
			return
		}
		p.p = mpb.New(mpb.WithOutput(p.w), mpb.WithWidth(40))
		total := int64(pr.Total / time.Second)
		p.bar = p.p.New(max(total, 1),
			mpb.BarStyle(),
			mpb.PrependDecorators(
				decor.Name(p.name+" ", decor.WCSyncSpaceR),
				decor.Any(func(decor.Statistics) string {
					return (time.Duration(p.last.DrillTime).Truncate(time.Second)).String() + " / " + p.last.Total.String()
				}, decor.WCSyncSpace),
			),
			mpb.AppendDecorators(
				decor.Any(func(decor.Statistics) string {
					return "deliveries " + strconv.FormatInt(p.last.Created, 10) + "  DLQ " + strconv.FormatInt(p.last.DLQ, 10)
				}, decor.WCSyncSpace),
				decor.AverageETA(decor.ET_STYLE_GO, decor.WCSyncSpace),
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
