package drills

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/stormdrill/stormdrill/model"
	"github.com/stormdrill/stormdrill/reports"
)

// Action is one scripted operator action ([[actions]]): what an operator
// does during the drill, at a drill time.
type Action struct {
	Kind string   `toml:"kind"` // an ActionKinds name
	At   Duration `toml:"at"`
	// dlq-replay: which dead letters (reason and/or cohort), in batches of
	// Batch at Rate batches per unit of time (0: no pause).
	Reason string `toml:"reason"`
	Cohort string `toml:"cohort"` // dlq-replay, outage-end
	Batch  int    `toml:"batch"`
	Rate   Rate   `toml:"rate"`
	// outage-end: which of the cohort's outages (1-based, in the order the
	// drill lists them); 0: the one in force at At.
	Outage int `toml:"outage"`
	// pause-source: how long the source is paused.
	For Duration `toml:"for"`
}

// Action kinds.
const (
	ActionDLQReplay   = "dlq-replay"
	ActionOutageEnd   = "outage-end"
	ActionPauseSource = "pause-source"
)

// ActionKind declares one kind of operator action: its name, the one-line
// doc the key reference shows and the keys it reads besides kind and at.
type ActionKind struct {
	Name string
	Doc  string
	Uses []string
}

// ActionKinds lists every action kind; validation, the key reference and
// both runners read it.
var ActionKinds = []ActionKind{
	{ActionDLQReplay, "replay dead letters chosen by `reason` and/or `cohort` (those in the DLQ when it starts, oldest first), `batch` at a time at `rate` batches per unit of time, each with its delivery id and a fresh attempt budget; one audit record per batch", []string{"reason", "cohort", "batch", "rate"}},
	{ActionOutageEnd, "the operator fixes the partner: the `cohort`'s outage in force at `at` (or its `outage`-th) ends then", []string{"cohort", "outage"}},
	{ActionPauseSource, "the source is paused `for` a duration: the events it would produce meanwhile are held and released when it resumes, their latency still counted from their scheduled arrival", []string{"for"}},
}

// MaxReplayActions bounds the dlq-replay actions of one drill: the report
// follows each one's load over the whole time series.
const MaxReplayActions = 16

func actionKindNames() []string {
	out := make([]string, len(ActionKinds))
	for i, k := range ActionKinds {
		out[i] = k.Name
	}
	return out
}

func actionKindDoc() string {
	parts := make([]string, len(ActionKinds))
	for i, k := range ActionKinds {
		parts[i] = "`" + k.Name + "` (" + k.Doc + ")"
	}
	return "An operator's action: " + strings.Join(parts[:len(parts)-1], ", ") + " or " + parts[len(parts)-1] + "."
}

func actionUses(kind, key string) bool {
	for _, k := range ActionKinds {
		if k.Name == kind {
			for _, u := range k.Uses {
				if u == key {
					return true
				}
			}
		}
	}
	return false
}

// ReplayRequest is a dlq-replay action as the replay code takes it.
func (a *Action) ReplayRequest() model.ReplayRequest {
	return model.ReplayRequest{Reason: a.Reason, Cohort: a.Cohort, Batch: a.Batch, Rate: a.Rate.PerSecond}
}

// actionDefaults fills an action's absent keys.
func actionDefaults(a *Action) {
	if a.Kind == ActionDLQReplay && a.Batch == 0 {
		a.Batch = model.DefaultReplayBatch
	}
}

// validateActions checks the [[actions]] of d. has reports whether a key
// was in the file (nil: a drill built in Go, where a non-zero value counts
// as given).
func validateActions(d *Drill, has func(string) bool, names map[string]int) []problem {
	var ps []problem
	replays := 0
	for i := range d.Actions {
		pre := "actions[" + strconv.Itoa(i) + "]."
		bad := func(key, format string, args ...any) {
			ps = append(ps, problem{pre + key, fmt.Sprintf(format, args...)})
		}
		validateAction(d, &d.Actions[i], pre, has, names, &replays, bad)
	}
	ps = append(ps, overlappingPauses(d)...)
	ps = append(ps, outagesEndedTwice(d, names)...)
	return ps
}

// validateAction checks one action, whose keys start with pre; replays
// counts the dlq-replay actions so far.
func validateAction(d *Drill, a *Action, pre string, has func(string) bool, names map[string]int, replays *int, bad badFunc) {
	if !checkActionKind(a.Kind, bad) {
		return
	}
	checkActionKeys(a, pre, has, bad)
	switch end := d.Duration.D + d.Drain.D; {
	case !a.At.Set && (has != nil || a.At.D == 0):
		bad("at", "required: when the operator acts, from the drill's start")
	case a.At.D < 0 || a.At.D > end:
		bad("at", "%v is outside the drill (0 to duration + drain = %v)", a.At.D, end)
	}
	if a.Cohort != "" {
		if _, ok := names[a.Cohort]; !ok {
			bad("cohort", "%q names no partner cohort", clip(a.Cohort))
		}
	}
	if d.Mode == "external" && a.Kind != ActionOutageEnd {
		bad("kind", "%s runs in sim and live mode; an external system's queue and source are its own", a.Kind)
		return
	}
	switch a.Kind {
	case ActionDLQReplay:
		*replays++
		if *replays > MaxReplayActions {
			bad("kind", "at most %d dlq-replay actions in one drill", MaxReplayActions)
		}
		checkReplay(d, a, bad)
	case ActionOutageEnd:
		checkOutageEnd(d, a, names, bad)
	case ActionPauseSource:
		checkPauseSource(d, a, bad)
	}
}

// checkActionKind checks that kind names an action kind.
func checkActionKind(kind string, bad badFunc) bool {
	kinds := actionKindNames()
	switch {
	case kind == "":
		bad("kind", "required: one of %s", choices(kinds...))
	case oneOf(kind, kinds...):
		return true
	default:
		if near, ok := nearest(kind, kinds); ok {
			bad("kind", "%q is not one of %s; did you mean %s?", clip(kind), choices(kinds...), near)
		} else {
			bad("kind", "%q is not one of %s", clip(kind), choices(kinds...))
		}
	}
	return false
}

// checkActionKeys refuses the keys given that the action's kind does not
// read.
func checkActionKeys(a *Action, pre string, has func(string) bool, bad badFunc) {
	given := map[string]bool{
		"reason": a.Reason != "", "cohort": a.Cohort != "", "batch": a.Batch != 0,
		"rate": a.Rate.Set || a.Rate.PerSecond != 0, "outage": a.Outage != 0, "for": a.For.Set || a.For.D != 0,
	}
	if has != nil {
		for k := range given {
			given[k] = has(pre + k)
		}
	}
	for _, k := range []string{"reason", "cohort", "batch", "rate", "outage", "for"} {
		if given[k] && !actionUses(a.Kind, k) {
			bad(k, "does not apply to kind = %q", a.Kind)
		}
	}
}

// checkReplay checks a dlq-replay action: which dead letters, in what
// batches, and that the drill can dead-letter for its reason at all.
func checkReplay(d *Drill, a *Action, bad badFunc) {
	req := a.ReplayRequest()
	for _, p := range req.Problems() {
		key := p.Key
		if key == "reason" && a.Reason == "" {
			p.Msg = "say which dead letters to replay: give reason, cohort or both"
		}
		bad(key, "%s", p.Msg)
	}
	if a.Reason != "" {
		if why := reasonImpossible(d, model.Reason(a.Reason)); why != "" {
			bad("reason", "this drill never dead-letters as %q: %s", a.Reason, why)
		}
	}
}

// checkOutageEnd checks an outage-end action: whose outage, and that one
// is in force to end.
func checkOutageEnd(d *Drill, a *Action, names map[string]int, bad badFunc) {
	if a.Cohort == "" {
		bad("cohort", "required: whose outage the operator ends")
		return
	}
	ci, ok := names[a.Cohort]
	if !ok {
		return
	}
	if _, err := outageToEnd(&d.Partners[ci], a); err != nil {
		key := "at"
		if a.Outage != 0 {
			key = "outage"
		}
		bad(key, "%v", err)
	}
}

// checkPauseSource checks a pause-source action: it pauses a running
// source and ends before the source stops.
func checkPauseSource(d *Drill, a *Action, bad badFunc) {
	switch {
	case a.For.D <= 0:
		bad("for", "required and greater than 0: how long the source is paused")
	case a.At.D >= d.Duration.D && d.Duration.D > 0:
		bad("at", "%v is not before duration (%v): the source has stopped by then", a.At.D, d.Duration.D)
	case a.For.D > d.Duration.D-a.At.D && d.Duration.D > 0:
		// Events held past the source's end would be neither
		// delivered nor lost: never released.
		bad("for", "%v from %v ends after the source stops (duration %v): at most %v, so the events it holds back are released", a.For.D, a.At.D, d.Duration.D, d.Duration.D-a.At.D)
	}
}

// overlappingPauses refuses a pause of the source while another has it
// paused: the source resumes once.
func overlappingPauses(d *Drill) []problem {
	var ps []problem
	for i := range d.Actions {
		a := &d.Actions[i]
		if a.Kind != ActionPauseSource || a.For.D <= 0 {
			continue
		}
		for j := 0; j < i; j++ {
			b := &d.Actions[j]
			if b.Kind == ActionPauseSource && b.For.D > 0 && a.At.D < b.At.D+b.For.D && b.At.D < a.At.D+a.For.D {
				ps = append(ps, problem{"actions[" + strconv.Itoa(i) + "].at", fmt.Sprintf("pauses the source while actions[%d] has it paused (%v to %v); one pause at a time: make one pause that covers both", j, b.At.D, b.At.D+b.For.D)})
				break
			}
		}
	}
	return ps
}

// outagesEndedTwice refuses two outage-end actions on one outage: each
// would claim to end it.
func outagesEndedTwice(d *Drill, names map[string]int) []problem {
	var ps []problem
	seen := map[[2]int]int{}
	for i := range d.Actions {
		a := &d.Actions[i]
		ci, ok := names[a.Cohort]
		if a.Kind != ActionOutageEnd || !ok {
			continue
		}
		j, err := outageToEnd(&d.Partners[ci], a)
		if err != nil {
			continue
		}
		if k, dup := seen[[2]int{ci, j}]; dup {
			ps = append(ps, problem{"actions[" + strconv.Itoa(i) + "].at", fmt.Sprintf("ends the same outage as actions[%d]", k)})
		}
		seen[[2]int{ci, j}] = i
	}
	return ps
}

// reasonImpossible says why the drill's policy can never dead-letter a
// delivery for reason r, or "" when it can (or might).
func reasonImpossible(d *Drill, r model.Reason) string {
	return r.NeverUnder(&model.ReasonSettings{
		MaxAttempts: d.Policy.Retry.MaxAttempts, DeliveryWindow: d.Policy.Retry.DeliveryWindow.D,
		BreakerDeadLetter: d.Policy.Breaker.DeadLetters(),
		BudgetDeadLetter:  d.Policy.Budget.DeadLetters(),
		RejectWhenFull:    d.Dispatcher.OnFull == "reject",
	})
}

// outageToEnd returns the index, in p.Outages, of the outage an outage-end
// action ends: its outage-th, or the one in force at its time.
func outageToEnd(p *Partner, a *Action) (int, error) {
	if a.Outage != 0 {
		j := a.Outage - 1
		if j < 0 || j >= len(p.Outages) {
			return 0, fmt.Errorf("cohort %q has %d outages; outage must be 1 to %d (or 0: the one in force at at)", p.Name, len(p.Outages), len(p.Outages))
		}
		o := &p.Outages[j]
		if a.At.D <= o.Start.D || a.At.D >= o.Start.D+o.For.D {
			return 0, fmt.Errorf("outage %d of %q runs from %v to %v; at (%v) must be inside it to end it early", a.Outage, p.Name, o.Start.D, o.Start.D+o.For.D, a.At.D)
		}
		return j, nil
	}
	for j := range p.Outages {
		o := &p.Outages[j]
		if a.At.D > o.Start.D && a.At.D < o.Start.D+o.For.D {
			return j, nil
		}
	}
	return 0, fmt.Errorf("no outage of cohort %q is in force at %v, so there is none to end", p.Name, a.At.D)
}

// OutageEnds maps (cohort index, outage index) to the drill time an
// outage-end action ends that outage at. It assumes a valid drill.
func (d *Drill) OutageEnds() map[[2]int]time.Duration {
	var out map[[2]int]time.Duration
	for i := range d.Actions {
		a := &d.Actions[i]
		if a.Kind != ActionOutageEnd {
			continue
		}
		for ci := range d.Partners {
			if d.Partners[ci].Name != a.Cohort {
				continue
			}
			if j, err := outageToEnd(&d.Partners[ci], a); err == nil {
				if out == nil {
					out = map[[2]int]time.Duration{}
				}
				out[[2]int{ci, j}] = a.At.D
			}
		}
	}
	return out
}

// Replays lists the drill's dlq-replay actions with their index in
// d.Actions.
func (d *Drill) Replays() []int {
	var out []int
	for i := range d.Actions {
		if d.Actions[i].Kind == ActionDLQReplay {
			out = append(out, i)
		}
	}
	return out
}

// Pauses returns the source's pauses, [at, at+for), in time order.
func (d *Drill) Pauses() [][2]time.Duration {
	var out [][2]time.Duration
	for i := range d.Actions {
		if a := &d.Actions[i]; a.Kind == ActionPauseSource {
			out = append(out, [2]time.Duration{a.At.D, a.At.D + a.For.D})
		}
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j][0] < out[j-1][0]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// ActionRecords describes the drill's actions for the summary: kind, time
// and what each does, in words.
func (d *Drill) ActionRecords() []reports.ActionRecord {
	out := []reports.ActionRecord{}
	for i := range d.Actions {
		a := &d.Actions[i]
		var detail string
		switch a.Kind {
		case ActionDLQReplay:
			var sel []string
			if a.Reason != "" {
				sel = append(sel, "reason "+a.Reason)
			}
			if a.Cohort != "" {
				sel = append(sel, "cohort "+a.Cohort)
			}
			pace := "with no pause between batches"
			if a.Rate.PerSecond > 0 {
				pace = "at " + strconv.FormatFloat(a.Rate.PerSecond, 'g', 4, 64) + " batches/s"
			}
			detail = fmt.Sprintf("replay the dead letters of %s in batches of %d %s", strings.Join(sel, ", "), a.Batch, pace)
		case ActionOutageEnd:
			detail = "the operator ends " + a.Cohort + "'s outage"
			for ci := range d.Partners {
				if p := &d.Partners[ci]; p.Name == a.Cohort {
					if j, err := outageToEnd(p, a); err == nil {
						o := &p.Outages[j]
						detail = fmt.Sprintf("the operator ends %s's %s outage (scripted %v to %v), %v early",
							a.Cohort, o.Kind, o.Start.D, o.Start.D+o.For.D, o.Start.D+o.For.D-a.At.D)
					}
				}
			}
		case ActionPauseSource:
			detail = fmt.Sprintf("the source pauses for %v; its events are held and released at %v", a.For.D, a.At.D+a.For.D)
		}
		out = append(out, reports.ActionRecord{Kind: a.Kind, AtS: a.At.D.Seconds(), Detail: detail})
	}
	return out
}
