package render

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/stormdrill/stormdrill/reports"
)

// PlotRef is one plot written by WritePlots: its title and the base names
// of its PNG and SVG files in the run directory.
type PlotRef struct{ Title, PNG, SVG string }

// Bounds on report tables; what is left out is counted in the report.
const (
	maxGateRows    = 200
	maxCohortRows  = 50
	maxOutageRows  = 50
	maxBreakerRows = 50
	maxPolicyRows  = 100
	maxAlertRows   = 50
	maxRestartRows = 50
	maxReasonRows  = 50
	maxPlots       = 50
	maxFailureRows = 50
	maxSeedRows    = 200
)

// reportView is a Run reduced to display text, shared by the Markdown,
// HTML and terminal writers so that they say the same thing.
type reportView struct {
	Title, Description string
	Pass               bool
	Verdict            string // "PASS: all 3 gates hold"
	Meta               string // mode, seed, durations

	// Findings come first under the verdict: what went wrong outside the
	// policy under test.
	Findings []findingRow

	// Failures names every other failed condition under the verdict.
	Failures        []string
	FailuresOmitted int

	// OutageLines say in one sentence each what each outage did; the
	// first screen shows them.
	OutageLines        []string
	OutageLinesOmitted int

	// Sides is the headline: each faulty cohort against the healthy ones,
	// then the pipeline totals.
	Sides        []sideView
	SidesOmitted int

	Gates        []gateRow
	GatesOmitted int
	// SeedGates is set for a multi-seed run: Gates then hold each gate's
	// verdict over every seed and the spread of its figure across them.
	SeedGates bool
	// SeedScope names, for a multi-seed run, whose figures the tables
	// after the gates show ("seed 7"); SeedNote says so on the first
	// screen.
	SeedScope, SeedNote string
	Tolerances          []reports.ToleranceResult
	Figures             []figureRow

	// Seeds: a multi-seed run's figures across seeds.
	SeedCount   int
	SeedList    string
	SeedFigures []seedFigureRow

	Cohorts        []cohortRow
	CohortsOmitted int
	// CohortCodes is each cohort's status codes, for cohorts with any.
	CohortCodes []reports.KV
	// External is what the partners saw of an external run's system.
	External [][2]string

	DeadLetters        []reasonRow
	DeadLettersOmitted int

	Outages        []outageRow
	OutagesOmitted int

	Actions        []ActionRecordRow
	ActionsOmitted int
	Replays        []replayRow

	Breaker        []breakerRow
	BreakerOmitted int

	Plots        []PlotRef
	PlotsOmitted int

	Policy        []reports.KV
	PolicyOmitted int

	Baseline *comparisonView

	Lateness string // live and external: p50 / p90 / p99 / p99.9 / max
	// RunHeading and RestartsHeading name the wall-clock section after the
	// mode: a live run restarts the dispatcher, an external run the system.
	RunHeading, RestartsHeading string
	Alerts                      []alertRow
	AlertsOmitted               int
	Restarts                    []restartRow
	RestartsOmitted             int

	Dir string
}

type seedFigureRow struct {
	Metric, Mean, CI, Range, N string
}

type gateRow struct {
	Expr, Measured string
	Pass           bool
	// Across the seeds of a multi-seed run: "3 of 3 seeds" and the
	// figure's smallest, mean and largest value.
	HeldOn, Min, Mean, Max string
}

type figureRow struct {
	Label, Anchor, Value string
}

type cohortRow struct {
	Name, Subscribers, Faulty, Deliveries, Delivered, DLQ, Pending, Attempts, Amplification, P99 string
}

type reasonRow struct {
	Reason, Count, Share string
	n                    int64
}

type outageRow struct {
	Partner, Kind, Start, End, Drain, Spread string
}

// ActionRecordRow is one operator action in the report.
type ActionRecordRow struct {
	At, Kind, Detail string
}

// replayRow is one dlq-replay action's figures in the report.
type replayRow struct {
	Action, Selection, Replayed, Batches, Amplification, Drain, LoadBefore, LoadDuring, LoadPeak, HealthyP99, Outcome string
}

type breakerRow struct {
	At, Partner, From, To string
}

// breakerRows is one row per transition, except that a run of failed
// probes (open → half-open → open, again and again, for one partner) is one
// row: a breaker held open through a 20-minute outage would otherwise fill
// the table with the same two lines.
func breakerRows(ts []reports.BreakerTransition) []breakerRow {
	isProbe := func(i int) bool { // ts[i], ts[i+1] is one failed probe
		return i+1 < len(ts) && ts[i].From == "open" && ts[i].To == "half-open" &&
			ts[i+1].From == "half-open" && ts[i+1].To == "open" && ts[i+1].Partner == ts[i].Partner
	}
	var rows []breakerRow
	for i := 0; i < len(ts); {
		probes := 0
		for isProbe(i+2*probes) && ts[i+2*probes].Partner == ts[i].Partner {
			probes++
		}
		if probes >= 2 {
			last := ts[i+2*probes-1]
			rows = append(rows, breakerRow{
				At:      reports.FormatDuration(ts[i].AtS) + " – " + reports.FormatDuration(last.AtS),
				Partner: reports.OneLine(ts[i].Partner), From: "open",
				To: fmt.Sprintf("half-open → open, %d times (each probe failed)", probes),
			})
			i += 2 * probes
			continue
		}
		b := ts[i]
		rows = append(rows, breakerRow{
			At: reports.FormatDuration(b.AtS), Partner: reports.OneLine(b.Partner), From: reports.OneLine(b.From), To: reports.OneLine(b.To),
		})
		i++
	}
	return rows
}

type alertRow struct {
	At, Partner, Reason, Count string
}

type restartRow struct {
	At, Down, Kind, InFlight string
}

type comparisonView struct {
	Base, Candidate, Verdict string
	Method                   string // how a multi-seed comparison decides
	Seeds                    bool   // multi-seed: means, CI and p columns
	Failed                   bool
	Rows                     []reports.CompareRowView
	Same                     int // unchanged rows left out
}

// Anchors the key figures link to; the glossary (GlossaryMarkdown) carries these headings.
const (
	anchorDelivery      = "delivery"
	anchorAttempt       = "attempt"
	anchorAmplification = "retry-amplification"
	anchorDrain         = "drain-time"
	anchorReadyAge      = "oldest-ready-age"
	anchorDelayedAge    = "oldest-delayed-age"
	anchorHealthy       = "healthy-subscriber-latency"
	anchorDeadLettered  = "dead-lettered"
	anchorLost          = "lost"
	anchorDuplicates    = "duplicates"
	anchorRetryAfter    = "retry-after"
	anchorBackPressure  = "back-pressure"
	anchorBreaker       = "circuit-breaker"
	anchorTimeSeries    = "time-series"
	anchorLateness      = "lateness"
	anchorStatusCodes   = "status-codes"
	anchorSeeds         = "seeds"
	anchorRetrySpread   = "retry-spread"
	anchorReplay        = "dlq-replay"
)

// buildView turns a run into display text; it never fails, and a nil
// summary gives an empty report that says so.
func buildView(r *reports.Run, plots []PlotRef) *reportView {
	v := &reportView{}
	if r == nil {
		r = &reports.Run{}
	}
	v.Dir = r.Dir
	s := r.Summary
	if s == nil {
		s = &reports.Summary{}
		v.Title = "stormdrill run"
		v.Verdict = "FAIL: no summary"
		return v
	}
	v.Title = s.Drill
	if v.Title == "" {
		v.Title = "drill"
	}
	v.Description = reports.OneLine(s.Description)
	v.Pass = s.Pass

	v.Verdict = reports.VerdictText(s)
	for _, f := range s.Findings {
		row := findingRow{Text: reports.FindingText(f), Expected: f.Expected}
		for _, d := range f.Detail {
			row.Detail = append(row.Detail, reports.OneLine(d))
		}
		v.Findings = append(v.Findings, row)
	}
	for _, f := range s.Failures {
		if strings.HasPrefix(f, "finding ") {
			continue // listed with the findings
		}
		if len(v.Failures) >= maxFailureRows {
			v.FailuresOmitted++
			continue
		}
		v.Failures = append(v.Failures, reports.OneLine(f))
	}
	v.OutageLines, v.OutageLinesOmitted = outageLines(s)
	if len(s.Cohorts) > 0 && anyFaulty(s) {
		v.Sides, v.SidesOmitted = cohortSides(s)
	}
	for _, t := range s.Tolerances {
		v.Tolerances = append(v.Tolerances, reports.ToleranceResult{
			Expr: reports.OneLine(t.Expr), Base: reports.OneLine(t.Base), Candidate: reports.OneLine(t.Candidate),
			Change: reports.OneLine(t.Change), Test: reports.OneLine(t.Test), Pass: t.Pass,
		})
	}
	if s.Seeds != nil {
		v.SeedCount = len(s.Seeds.Runs)
		var seeds []string
		for _, r := range s.Seeds.Runs {
			seeds = append(seeds, strconv.FormatUint(r.Seed, 10))
		}
		v.SeedList = reports.OneLine(strings.Join(seeds, ", "))
		for i, f := range s.Seeds.Figures {
			if i >= maxSeedRows {
				break
			}
			v.SeedFigures = append(v.SeedFigures, seedFigureView(f))
		}
	}
	meta := []string{}
	if s.Mode != "" {
		meta = append(meta, s.Mode)
	}
	if v.SeedCount > 1 {
		meta = append(meta, strconv.Itoa(v.SeedCount)+" seeds ("+seedRangeText(s.Seeds)+")")
		v.SeedScope = "seed " + strconv.FormatUint(s.Seed, 10)
		tolerances := ""
		if len(s.Tolerances) > 0 {
			tolerances = ", the tolerances their means"
		}
		v.SeedNote = fmt.Sprintf("The verdict and the gates cover all %d seeds%s. The other tables are %s's run; "+
			"\"Across %d seeds\" has every figure's mean.", v.SeedCount, tolerances, v.SeedScope, v.SeedCount)
	} else {
		meta = append(meta, "seed "+strconv.FormatUint(s.Seed, 10))
	}
	meta = append(meta, "arrivals for "+reports.FormatDuration(s.DurationS), "ended at "+reports.FormatDuration(s.DrillTimeS))
	if s.Speed > 0 && s.Mode == "live" {
		meta = append(meta, "speed ×"+reports.TrimFloat(s.Speed, 2))
	}
	v.Meta = strings.Join(meta, " · ")

	if v.SeedCount > 1 && s.Seeds.Gates != nil {
		v.SeedGates = true
		for i, g := range s.Seeds.Gates {
			if i >= maxGateRows {
				v.GatesOmitted = len(s.Seeds.Gates) - i
				break
			}
			v.Gates = append(v.Gates, seedGateRow(s, g))
		}
	} else {
		for i, g := range s.Gates {
			if i >= maxGateRows {
				v.GatesOmitted = len(s.Gates) - i
				break
			}
			v.Gates = append(v.Gates, gateRow{Expr: reports.OneLine(g.Expr), Measured: reports.OneLine(g.Display), Pass: g.Pass})
		}
	}

	v.Figures = keyFigures(s)

	for i, c := range s.Cohorts {
		if i >= maxCohortRows {
			v.CohortsOmitted = len(s.Cohorts) - i
			break
		}
		p99 := "—"
		if c.LatencyS.Count > 0 {
			p99 = reports.FormatDuration(c.LatencyS.P99)
		}
		faulty := "no"
		if c.Faulty {
			faulty = "yes"
		}
		v.Cohorts = append(v.Cohorts, cohortRow{
			Name: reports.OneLine(c.Name), Subscribers: reports.GroupDigits(int64(c.Subscribers)), Faulty: faulty,
			Deliveries: reports.GroupDigits(c.Deliveries), Delivered: reports.GroupDigits(c.Delivered),
			DLQ: reports.GroupDigits(c.DeadLettered), Pending: reports.GroupDigits(c.Pending),
			Attempts: reports.GroupDigits(c.Attempts), Amplification: reports.RatioText(c.Amplification), P99: p99,
		})
	}

	v.CohortCodes = cohortCodeRows(s)
	for _, kv := range reports.ExternalRows(s.External) {
		v.External = append(v.External, [2]string{reports.OneLine(kv[0]), reports.OneLine(kv[1])})
	}
	v.DeadLetters, v.DeadLettersOmitted = reasonRows(s.DeadLetterReasons, s.Deliveries.DeadLettered)

	for i, o := range s.Outages {
		if i >= maxOutageRows {
			v.OutagesOmitted = len(s.Outages) - i
			break
		}
		drain := "not drained"
		if o.DrainTimeS != nil {
			drain = reports.FormatDuration(*o.DrainTimeS)
		}
		spread := "—"
		if sp := o.RetrySpread; sp != nil {
			spread = fmt.Sprintf("p50 %s, max %s (%s groups)", reports.FormatValue(reports.Fraction, sp.P50), reports.FormatValue(reports.Fraction, sp.Max), reports.GroupDigits(sp.Groups))
		}
		v.Outages = append(v.Outages, outageRow{
			Partner: reports.OneLine(o.Partner), Kind: reports.OneLine(o.Kind),
			Start: reports.FormatDuration(o.StartS), End: reports.FormatDuration(o.EndS), Drain: drain, Spread: spread,
		})
	}
	for i, a := range s.Actions {
		if i >= maxOutageRows {
			v.ActionsOmitted = len(s.Actions) - i
			break
		}
		v.Actions = append(v.Actions, ActionRecordRow{At: reports.FormatDuration(a.AtS), Kind: reports.OneLine(a.Kind), Detail: reports.OneLine(a.Detail)})
	}
	for i, rp := range s.Replays {
		if i >= maxOutageRows {
			break
		}
		v.Replays = append(v.Replays, replayViewRow(rp))
	}

	rows := breakerRows(s.BreakerTransitions)
	for i, r := range rows {
		if i >= maxBreakerRows {
			v.BreakerOmitted = len(rows) - i
			break
		}
		v.Breaker = append(v.Breaker, r)
	}

	for i, p := range plots {
		if i >= maxPlots {
			v.PlotsOmitted = len(plots) - i
			break
		}
		v.Plots = append(v.Plots, PlotRef{Title: reports.OneLine(p.Title), PNG: p.PNG, SVG: p.SVG})
	}

	for i, kv := range r.Policy {
		if i >= maxPolicyRows {
			v.PolicyOmitted = len(r.Policy) - i
			break
		}
		v.Policy = append(v.Policy, reports.KV{Key: reports.OneLine(kv.Key), Value: reports.OneLine(kv.Value)})
	}

	if r.Baseline != nil {
		v.Baseline = buildComparisonView(r.Baseline)
	}

	if s.Lateness != nil {
		v.Lateness = percentileText(*s.Lateness)
	}
	v.RunHeading, v.RestartsHeading = "Live run", "Dispatcher restarts"
	if s.Mode == "external" {
		v.RunHeading, v.RestartsHeading = "External run", "System restarts"
	}
	for i, a := range s.Alerts {
		if i >= maxAlertRows {
			v.AlertsOmitted = len(s.Alerts) - i
			break
		}
		v.Alerts = append(v.Alerts, alertRow{
			At: reports.FormatDuration(a.AtS), Partner: reports.OneLine(a.Partner), Reason: reports.OneLine(a.Reason), Count: reports.GroupDigits(a.Count),
		})
	}
	for i, rs := range s.Restarts {
		if i >= maxRestartRows {
			v.RestartsOmitted = len(s.Restarts) - i
			break
		}
		kind := "SIGKILL"
		if rs.Graceful {
			kind = "graceful"
		}
		v.Restarts = append(v.Restarts, restartRow{
			At: reports.FormatDuration(rs.AtS), Down: reports.FormatDuration(rs.DownS), Kind: kind, InFlight: reports.GroupDigits(rs.InFlight),
		})
	}
	return v
}

func buildComparisonView(c *reports.Comparison) *comparisonView {
	cv := &comparisonView{Base: reports.OneLine(c.Base), Candidate: reports.OneLine(c.Candidate), Failed: c.Failed}
	exceeded := 0
	rows, same := shownRows(c)
	cv.Same = same
	for _, r := range rows {
		cv.Rows = append(cv.Rows, r.View())
		if r.Exceeded {
			exceeded++
		}
	}
	cv.Verdict = comparisonVerdict(c)
	cv.Method = comparisonMethod(c)
	cv.Seeds = c.BaseSeeds > 0
	return cv
}

// keyFigures is the key-figure table: what a reviewer reads first, each
// linked to its definition.
func replayViewRow(rp reports.Replay) replayRow {
	var sel []string
	if rp.Reason != "" {
		sel = append(sel, rp.Reason)
	}
	if rp.Cohort != "" {
		sel = append(sel, rp.Cohort)
	}
	drain := "not drained"
	if rp.DrainTimeS != nil {
		drain = reports.FormatDuration(*rp.DrainTimeS)
	}
	p99 := "—"
	if rp.HealthyLatencyS.Count > 0 {
		p99 = reports.FormatDuration(rp.HealthyLatencyS.P99)
	}
	amp := "—"
	if rp.Replayed > 0 {
		amp = reports.FormatValue(reports.Ratio, rp.Amplification)
	}
	return replayRow{
		Action:        fmt.Sprintf("%d at %s", rp.Action, reports.FormatDuration(rp.AtS)),
		Selection:     reports.OneLine(strings.Join(sel, ", ")),
		Replayed:      fmt.Sprintf("%s of %s", reports.GroupDigits(rp.Replayed), reports.GroupDigits(rp.Matched)),
		Batches:       fmt.Sprintf("%s (last at %s)", reports.GroupDigits(rp.Batches), reports.FormatDuration(rp.LastBatchS)),
		Amplification: amp, Drain: drain,
		LoadBefore: reports.FormatValue(reports.Ratio, rp.LoadBeforePerS) + "/s",
		LoadDuring: reports.FormatValue(reports.Ratio, rp.LoadDuringPerS) + "/s",
		LoadPeak:   reports.FormatValue(reports.Ratio, rp.LoadPeakPerS) + "/s",
		HealthyP99: p99,
		Outcome:    fmt.Sprintf("%s delivered, %s dead-lettered again, %s pending", reports.GroupDigits(rp.Delivered), reports.GroupDigits(rp.DeadLettered), reports.GroupDigits(rp.Pending)),
	}
}

func keyFigures(s *reports.Summary) []figureRow {
	d := s.Deliveries
	share := func(n int64) string {
		if d.Created == 0 {
			return reports.GroupDigits(n)
		}
		return fmt.Sprintf("%s (%s)", reports.GroupDigits(n), reports.FormatValue(reports.Fraction, float64(n)/float64(d.Created)))
	}
	rows := []figureRow{
		{"Deliveries created", anchorDelivery, reports.GroupDigits(d.Created)},
		{"Delivered", anchorDelivery, share(d.Delivered)},
		{"Dead-lettered", anchorDeadLettered, share(d.DeadLettered)},
		{"Pending at the end", anchorLost, share(d.Pending)},
		{"Lost", anchorLost, reports.GroupDigits(d.Lost)},
		{"Attempts", anchorAttempt, fmt.Sprintf("%s (first %s, retries %s)",
			reports.GroupDigits(s.Attempts.Total), reports.GroupDigits(s.Attempts.First), reports.GroupDigits(s.Attempts.Retries))},
		{"Retry amplification", anchorAmplification, reports.RatioText(s.Amplification)},
	}
	if d.Refused > 0 {
		rows = append(rows, figureRow{"Refused at the ingest (never created)", anchorLost, reports.GroupDigits(d.Refused)})
	}
	drain, _, _ := s.Metric("drain_time")
	if _, ok, _ := s.Metric("drain_time"); ok {
		rows = append(rows, figureRow{"Drain time (slowest outage)", anchorDrain, reports.FormatDuration(drain)})
	} else {
		rows = append(rows, figureRow{"Drain time (slowest outage)", anchorDrain, reports.NotApplicable(s, "drain_time")})
	}
	rows = append(rows,
		figureRow{"Oldest ready age (max)", anchorReadyAge, reports.FormatDuration(s.OldestReadyAgeMaxS)},
		figureRow{"Oldest delayed age (max)", anchorDelayedAge, reports.FormatDuration(s.OldestDelayedAgeMaxS)},
	)
	healthy := "no healthy deliveries"
	if s.HealthyLatencyS.Count > 0 {
		healthy = percentileText(s.HealthyLatencyS)
	}
	rows = append(rows, figureRow{"Healthy latency p50 / p90 / p99 / p99.9 / max", anchorHealthy, healthy})
	outage := "no healthy deliveries during outages"
	if s.HealthyLatencyOutageS.Count > 0 {
		outage = percentileText(s.HealthyLatencyOutageS)
	}
	rows = append(rows, figureRow{"Healthy latency during outages", anchorHealthy, outage})
	within := "no healthy deliveries"
	if s.HealthyLatencyS.Count > 0 {
		within = reports.FormatValue(reports.Fraction, s.HealthyWithinSLO)
	}
	label := "Healthy deliveries within the SLO"
	if s.SLOS > 0 {
		label += " (" + reports.FormatDuration(s.SLOS) + ")"
	}
	rows = append(rows, figureRow{label, anchorHealthy, within})
	beyond, _, _ := s.Metric("duplicates_beyond_in_flight")
	dup := reports.CountText(s.Duplicates)
	if len(s.Restarts) > 0 && s.Duplicates != nil {
		dup += fmt.Sprintf(" (%s beyond the attempts in flight at restarts)", reports.FormatValue(reports.Count, beyond))
	}
	rows = append(rows,
		figureRow{"Duplicates", anchorDuplicates, dup},
		figureRow{"Retry-After values ignored", anchorRetryAfter, reports.GroupDigits(s.RetryAfterIgnored)},
		figureRow{"Source held back (total / longest)", anchorBackPressure,
			reports.FormatDuration(s.SourceHeldBackS) + " / " + reports.FormatDuration(s.SourceHeldBackMaxS)},
		figureRow{"Peak attempts per second", anchorTimeSeries, reports.FormatValue(reports.Ratio, s.PeakAttemptsPerS)},
		figureRow{"Peak pending deliveries", anchorTimeSeries, reports.GroupDigits(s.PeakPending)},
		figureRow{"Breaker transitions", anchorBreaker, reports.GroupDigits(int64(len(s.BreakerTransitions)))},
	)
	if s.Lateness != nil {
		rows = append(rows, figureRow{"Arrival lateness p99", anchorLateness, reports.FormatDuration(s.Lateness.P99)})
	}
	return rows
}

// reasonRows lists dead-letter reasons with a non-zero count: the known
// reasons in their fixed order, then any others sorted by name.
func reasonRows(byReason map[string]int64, total int64) ([]reasonRow, int) {
	var names []string
	known := map[string]bool{}
	for _, r := range reports.DeadLetterReasons {
		known[r] = true
		if byReason[r] != 0 {
			names = append(names, r)
		}
	}
	var other []string
	for r, n := range byReason {
		if !known[r] && n != 0 {
			other = append(other, r)
		}
	}
	sort.Strings(other)
	names = append(names, other...)
	if total == 0 {
		for _, r := range names {
			total += byReason[r]
		}
	}
	var rows []reasonRow
	omitted := 0
	for i, r := range names {
		if i >= maxReasonRows {
			omitted = len(names) - i
			break
		}
		share := "—"
		if total > 0 {
			share = reports.FormatValue(reports.Fraction, float64(byReason[r])/float64(total))
		}
		rows = append(rows, reasonRow{Reason: reports.OneLine(r), Count: reports.GroupDigits(byReason[r]), Share: share, n: byReason[r]})
	}
	return rows, omitted
}

// WriteMarkdown writes report.md: the verdict and what failed; the faulty
// cohorts against the healthy ones (after the gates in a multi-seed run,
// whose gates cover every seed), then the pipeline totals; gates,
// tolerances, key figures, cohorts, dead letters, outages, breaker
// transitions, plots, policy, the baseline comparison, the spread across
// seeds, the live-mode sections when they apply, and the definitions every
// link points to (inside the report, so no link leaves it).
func WriteMarkdown(w io.Writer, r *reports.Run, plots []PlotRef) error {
	v := buildView(r, plots)
	m := &mdWriter{w: w}
	m.line("# " + mdCell(v.Title))
	m.line("")
	if v.Description != "" {
		m.line(mdCell(v.Description))
		m.line("")
	}
	m.line("**" + mdCell(v.Verdict) + "** · " + v.Meta)
	if r == nil || r.Summary == nil {
		return m.err
	}
	if len(v.Findings) > 0 {
		m.line("")
		m.line("## Findings")
		m.line("")
		for _, f := range v.Findings {
			mark := "⚠️ "
			if f.Expected {
				mark = ""
			}
			m.line("- " + mark + mdCell(f.Text))
			for _, d := range f.Detail {
				m.line("  - `" + strings.ReplaceAll(d, "`", "'") + "`")
			}
		}
	}
	if len(v.Failures) > 0 {
		m.line("")
		for _, f := range v.Failures {
			m.line("- ❌ " + mdCell(f))
		}
		m.omitted(v.FailuresOmitted, "failures")
	}
	if len(v.OutageLines) > 0 {
		m.line("")
		for _, o := range v.OutageLines {
			m.line("- " + mdCell(o))
		}
		if v.OutageLinesOmitted > 0 {
			m.line(fmt.Sprintf("- … and %d more outages (see Outages)", v.OutageLinesOmitted))
		}
	}
	if v.SeedNote != "" {
		m.line("")
		m.line(mdCell(v.SeedNote))
	}

	// A multi-seed run's gates cover every seed: they come before the
	// tables of the first seed's run.
	if v.SeedGates {
		writeMarkdownGates(m, v)
	}

	if len(v.Sides) > 0 {
		m.line("")
		m.line("## Faulty against healthy" + scopeSuffix(v))
		m.line("")
		head := "| |"
		align := "| --- |"
		for _, sd := range v.Sides {
			head += " " + mdCell(sd.Label) + " |"
			align += " ---: |"
		}
		m.line(head)
		m.line(align)
		rows := []struct {
			label, anchor string
			get           func(sideView) string
		}{
			{"subscribers", anchorDelivery, func(s sideView) string { return s.Subscribers }},
			{"retry amplification", anchorAmplification, func(s sideView) string { return s.Amplification }},
			{"dead letters by reason", anchorDeadLettered, func(s sideView) string { return s.DeadLetters }},
			{"drain time", anchorDrain, func(s sideView) string { return s.Drain }},
			{"oldest age (max)", anchorReadyAge, func(s sideView) string { return s.OldestAge }},
			{"latency p99", anchorHealthy, func(s sideView) string { return s.P99 }},
			{"attempts", anchorAttempt, func(s sideView) string { return s.Attempts }},
			{"status codes", anchorStatusCodes, func(s sideView) string { return s.StatusCodes }},
		}
		for _, row := range rows {
			cells := []string{fmt.Sprintf("[%s](#%s)", row.label, row.anchor)}
			for _, sd := range v.Sides {
				cells = append(cells, mdCell(row.get(sd)))
			}
			m.row(cells...)
		}
		m.omitted(v.SidesOmitted, "faulty cohorts (see Cohorts)")
	}

	if !v.SeedGates {
		writeMarkdownGates(m, v)
	}

	m.line("")
	m.line("## Pipeline totals" + scopeSuffix(v))
	m.line("")
	m.line("| figure | value |")
	m.line("| --- | ---: |")
	for _, f := range v.Figures {
		m.row(fmt.Sprintf("[%s](#%s)", mdCell(f.Label), f.Anchor), mdCell(f.Value))
	}

	if len(v.Cohorts) > 0 {
		m.line("")
		m.line("## Cohorts")
		m.line("")
		m.line("| cohort | subscribers | faulty | deliveries | delivered | DLQ | pending | attempts | amplification | p99 |")
		m.line("| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
		for _, c := range v.Cohorts {
			m.row(mdCell(c.Name), c.Subscribers, c.Faulty, c.Deliveries, c.Delivered, c.DLQ, c.Pending, c.Attempts, c.Amplification, c.P99)
		}
		m.omitted(v.CohortsOmitted, "cohorts")
		if codes := v.CohortCodes; len(codes) > 0 {
			m.line("")
			m.line(fmt.Sprintf("[Status codes](#%s) per cohort:", anchorStatusCodes))
			m.line("")
			m.line("| cohort | status codes |")
			m.line("| --- | --- |")
			for _, c := range codes {
				m.row(mdCell(c.Key), mdCell(c.Value))
			}
		}
	}

	m.line("")
	m.line(fmt.Sprintf("## [Dead letters](#%s)", anchorDeadLettered))
	m.line("")
	if len(v.DeadLetters) == 0 {
		m.line("No dead letters.")
	} else {
		m.line("| reason | count | share |")
		m.line("| --- | ---: | ---: |")
		for _, d := range v.DeadLetters {
			m.row(mdCode(d.Reason), d.Count, d.Share)
		}
		m.omitted(v.DeadLettersOmitted, "reasons")
	}

	if len(v.Outages) > 0 {
		m.line("")
		m.line(fmt.Sprintf("## Outages and [drain time](#%s)", anchorDrain))
		m.line("")
		m.line(fmt.Sprintf("| partner | kind | start | end | drain time | [retry spread](#%s) |", anchorRetrySpread))
		m.line("| --- | --- | ---: | ---: | ---: | --- |")
		for _, o := range v.Outages {
			m.row(mdCell(o.Partner), mdCell(o.Kind), o.Start, o.End, o.Drain, mdCell(o.Spread))
		}
		m.omitted(v.OutagesOmitted, "outages")
	}

	if len(v.Actions) > 0 {
		m.line("")
		m.line("## Operator actions")
		m.line("")
		m.line("| at | action | what it did |")
		m.line("| ---: | --- | --- |")
		for _, a := range v.Actions {
			m.row(a.At, mdCode(a.Kind), mdCell(a.Detail))
		}
		m.omitted(v.ActionsOmitted, "actions")
	}

	if len(v.Replays) > 0 {
		m.line("")
		m.line(fmt.Sprintf("## [DLQ replay](#%s)", anchorReplay))
		m.line("")
		m.line("| action | selection | replayed | batches | amplification | drain time | load before | load during | peak | healthy p99 during | outcome |")
		m.line("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
		for _, r := range v.Replays {
			m.row(r.Action, mdCell(r.Selection), r.Replayed, r.Batches, r.Amplification, r.Drain, r.LoadBefore, r.LoadDuring, r.LoadPeak, r.HealthyP99, r.Outcome)
		}
	}

	if len(v.Breaker) > 0 {
		m.line("")
		m.line(fmt.Sprintf("## [Breaker](#%s) transitions", anchorBreaker))
		m.line("")
		m.line("| at | partner | from | to |")
		m.line("| ---: | --- | --- | --- |")
		for _, b := range v.Breaker {
			m.row(b.At, mdCell(b.Partner), mdCell(b.From), mdCell(b.To))
		}
		m.omitted(v.BreakerOmitted, "rows of transitions")
	}

	if len(v.Plots) > 0 {
		m.line("")
		m.line("## Plots")
		for _, p := range v.Plots {
			m.line("")
			m.line("### " + mdCell(p.Title))
			m.line("")
			if p.PNG != "" {
				m.line(fmt.Sprintf("![%s](%s)", mdCell(p.Title), mdLink(p.PNG)))
			}
			if p.SVG != "" {
				m.line("")
				m.line(fmt.Sprintf("[SVG](%s)", mdLink(p.SVG)))
			}
		}
		m.omitted(v.PlotsOmitted, "plots")
	}

	if len(v.Policy) > 0 {
		m.line("")
		m.line("## Policy")
		m.line("")
		m.line("| setting | value |")
		m.line("| --- | --- |")
		for _, kv := range v.Policy {
			m.row(mdCode(kv.Key), mdCell(kv.Value))
		}
		m.omitted(v.PolicyOmitted, "settings")
	}

	if r.Baseline != nil {
		m.line("")
		m.line("## Compared with the baseline")
		m.line("")
		writeComparisonBody(m, r.Baseline)
	}

	if rows := v.External; len(rows) > 0 {
		m.line("")
		m.line("## Seen from the partners (external run)")
		m.line("")
		m.line("| figure | value |")
		m.line("| --- | --- |")
		for _, kv := range rows {
			m.row(mdCell(kv[0]), mdCell(kv[1]))
		}
	}

	if v.SeedCount > 0 {
		m.line("")
		m.line(fmt.Sprintf("## Across %d [seeds](#%s)", v.SeedCount, anchorSeeds))
		m.line("")
		m.line(fmt.Sprintf("Seeds %s. The rest of this report is seed %d; per-seed summaries are in `seeds/`. "+
			"95%% CI: confidence interval of the mean, Student's t with n−1 degrees of freedom.", v.SeedList, r.Summary.Seed))
		m.line("")
		m.line("| metric | mean | 95% CI | min – max | seeds |")
		m.line("| --- | ---: | ---: | ---: | ---: |")
		for _, f := range v.SeedFigures {
			m.row(mdCode(f.Metric), f.Mean, f.CI, f.Range, f.N)
		}
	}

	if v.Lateness != "" || len(v.Alerts) > 0 || len(v.Restarts) > 0 {
		m.line("")
		m.line("## " + v.RunHeading)
		if v.Lateness != "" {
			m.line("")
			m.line(fmt.Sprintf("[Arrival lateness](#%s) p50 / p90 / p99 / p99.9 / max: %s", anchorLateness, v.Lateness))
		}
		if len(v.Restarts) > 0 {
			m.line("")
			m.line("### " + v.RestartsHeading)
			m.line("")
			m.line("| at | down for | kind | in flight |")
			m.line("| ---: | ---: | --- | ---: |")
			for _, rs := range v.Restarts {
				m.row(rs.At, rs.Down, rs.Kind, rs.InFlight)
			}
			m.omitted(v.RestartsOmitted, "restarts")
		}
		if len(v.Alerts) > 0 {
			m.line("")
			m.line("### DLQ alerts")
			m.line("")
			m.line("| at | partner | reason | count |")
			m.line("| ---: | --- | --- | ---: |")
			for _, a := range v.Alerts {
				m.row(a.At, mdCell(a.Partner), mdCode(a.Reason), a.Count)
			}
			m.omitted(v.AlertsOmitted, "alerts")
		}
	}

	m.line("")
	m.line("## Definitions")
	m.line("")
	m.line("What the harness measures; the links above point here.")
	m.line("")
	for _, line := range strings.Split(strings.TrimRight(GlossaryMarkdown(), "\n"), "\n") {
		m.line(line)
	}
	return m.err
}

// writeMarkdownGates writes the gates and the tolerances.
func writeMarkdownGates(m *mdWriter, v *reportView) {
	m.line("")
	m.line("## Gates")
	m.line("")
	if len(v.Gates) == 0 {
		m.line("No gates.")
	} else {
		if v.SeedGates {
			m.line("| gate | held on | min | mean | max | verdict |")
			m.line("| --- | --- | ---: | ---: | ---: | --- |")
		} else {
			m.line("| gate | measured | verdict |")
			m.line("| --- | ---: | --- |")
		}
		for _, g := range v.Gates {
			if v.SeedGates {
				m.row(mdCode(g.Expr), mdCell(g.HeldOn), mdCell(g.Min), mdCell(g.Mean), mdCell(g.Max), passText(g.Pass))
				continue
			}
			m.row(mdCode(g.Expr), mdCell(g.Measured), passText(g.Pass))
		}
		m.omitted(v.GatesOmitted, "gates")
	}

	if len(v.Tolerances) > 0 {
		m.line("")
		m.line("## Tolerances against the baseline")
		m.line("")
		m.line("| tolerance | base | candidate | change | test | verdict |")
		m.line("| --- | ---: | ---: | ---: | --- | --- |")
		for _, t := range v.Tolerances {
			test := t.Test
			if test == "" {
				test = "—"
			}
			m.row(mdCode(t.Expr), mdCell(t.Base), mdCell(t.Candidate), mdCell(t.Change), mdCell(test), passText(t.Pass))
		}
	}
}

// scopeSuffix marks the headings of a multi-seed run's first-seed tables.
func scopeSuffix(v *reportView) string {
	if v.SeedScope == "" {
		return ""
	}
	return " (" + v.SeedScope + ")"
}

// cohortCodeRows lists each cohort's status-code counts, for cohorts that
// have them.
func cohortCodeRows(s *reports.Summary) []reports.KV {
	var rows []reports.KV
	for i, c := range s.Cohorts {
		if i >= maxCohortRows {
			break
		}
		if len(c.StatusCodes) > 0 {
			rows = append(rows, reports.KV{Key: reports.OneLine(c.Name), Value: statusCodeText(c.StatusCodes)})
		}
	}
	return rows
}

func passText(pass bool) string {
	if pass {
		return "✅ pass"
	}
	return "❌ FAIL"
}

// isFinite is used by writers that must not print NaN.
func isFinite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
