package render

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/stormdrill/stormdrill/reports"
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
	// CohortLines are the same sides one line each, for the terminal;
	// a run without faulty cohorts has its pipeline line alone.
	CohortLines        []string
	CohortLinesOmitted int
	// Accounting is the accounting identity with its figures when it
	// does not hold, else empty.
	Accounting string

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
	Seed        uint64 // the seed whose run the tables show
	SeedList    string
	SeedRange   string // "7–11", or the list
	SeedFigures []seedFigureRow
	// SeedFailures are the failures a multi-seed run saw on its other
	// seeds ("seed 8: …").
	SeedFailures        []string
	SeedFailuresOmitted bool

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
		v.Title = "stormdrill run"
		v.Verdict = "FAIL: no summary"
		return v
	}
	viewHeadline(v, s)
	viewSeeds(v, s)
	viewGates(v, s)
	v.Figures = keyFigures(s)
	viewCohorts(v, s)
	viewEvents(v, s)
	viewRunFiles(v, r, plots)
	viewWallClock(v, s)
	return v
}

// viewHeadline fills the first screen: title, verdict, findings, failures,
// outage lines and the faulty cohorts against the healthy ones.
func viewHeadline(v *reportView, s *reports.Summary) {
	v.Title = s.Drill
	if v.Title == "" {
		v.Title = "drill"
	}
	v.Description = reports.OneLine(s.Description)
	v.Pass = s.Pass

	v.Verdict = reports.VerdictText(s)
	for _, f := range s.Findings {
		row := findingRow{Kind: reports.OneLine(f.Kind), Text: reports.FindingText(f), Expected: f.Expected}
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
	sides, omitted := cohortSides(s)
	for _, sd := range sides {
		v.CohortLines = append(v.CohortLines, cohortLine(s, sd))
	}
	v.CohortLinesOmitted = omitted
	if len(s.Cohorts) > 0 && anyFaulty(s) {
		v.Sides, v.SidesOmitted = sides, omitted
	}
	if !reports.AccountingHolds(s) {
		v.Accounting = reports.AccountingText(s)
	}
	for _, t := range s.Tolerances {
		v.Tolerances = append(v.Tolerances, reports.ToleranceResult{
			Expr: reports.OneLine(t.Expr), Base: reports.OneLine(t.Base), Candidate: reports.OneLine(t.Candidate),
			Change: reports.OneLine(t.Change), Test: reports.OneLine(t.Test), Pass: t.Pass,
		})
	}
}

// viewSeeds fills the meta line and, for a multi-seed run, the figures
// across seeds and the note on whose tables follow.
func viewSeeds(v *reportView, s *reports.Summary) {
	v.Seed = s.Seed
	if s.Seeds != nil {
		v.SeedCount = len(s.Seeds.Runs)
		var seeds []string
		for _, r := range s.Seeds.Runs {
			seeds = append(seeds, strconv.FormatUint(r.Seed, 10))
		}
		v.SeedList = reports.OneLine(strings.Join(seeds, ", "))
		for i, f := range s.Failures {
			if !strings.HasPrefix(f, "seed ") {
				continue
			}
			if i >= maxTerminalFailures {
				v.SeedFailuresOmitted = true
				break
			}
			v.SeedFailures = append(v.SeedFailures, reports.OneLine(f))
		}
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
		v.SeedRange = seedRangeText(s.Seeds)
		meta = append(meta, strconv.Itoa(v.SeedCount)+" seeds ("+v.SeedRange+")")
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

}

// viewGates fills the gates: each seed's verdict and the spread of its
// figure for a multi-seed run, else each gate's figure.
func viewGates(v *reportView, s *reports.Summary) {
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

}

// viewCohorts fills the cohort table, their status codes, what the
// partners saw of an external system, and the dead letters by reason.
func viewCohorts(v *reportView, s *reports.Summary) {
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

}

// viewEvents fills what happened over the run: outages, operator actions,
// DLQ replays and breaker transitions.
func viewEvents(v *reportView, s *reports.Summary) {
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

}

// viewRunFiles fills what the run carries beside its summary: plots,
// policy and the baseline comparison.
func viewRunFiles(v *reportView, r *reports.Run, plots []PlotRef) {
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

}

// viewWallClock fills the live and external sections: arrival lateness,
// alerts and restarts.
func viewWallClock(v *reportView, s *reports.Summary) {
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
}

// buildComparisonView is a comparison as display text: its verdict, how it
// decides and the rows that changed.
func buildComparisonView(c *reports.Comparison) *comparisonView {
	cv := &comparisonView{Base: reports.OneLine(c.Base), Candidate: reports.OneLine(c.Candidate), Failed: c.Failed}
	rows, same := shownRows(c)
	cv.Same = same
	for _, r := range rows {
		cv.Rows = append(cv.Rows, r.View())
	}
	cv.Verdict = comparisonVerdict(c)
	cv.Method = comparisonMethod(c)
	cv.Seeds = c.BaseSeeds > 0
	return cv
}

// replayViewRow is one dlq-replay action as display text.
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

// keyFigures is the key-figure table: what a reviewer reads first, each
// linked to its definition.
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
