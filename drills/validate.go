package drills

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/stormdrill/stormdrill/fakepartner"
	"github.com/stormdrill/stormdrill/model"
	"github.com/stormdrill/stormdrill/model/runtime/queue"
	"github.com/stormdrill/stormdrill/reports"
)

// Limits checked by validation, so that a typo cannot ask for a run that
// never ends or a machine's worth of memory.
const (
	limPartnerCount   = 100000
	limDrillDuration  = 1000 * time.Hour
	limWorkers        = 100000
	limQueueCapacity  = 100_000_000
	limBurstEvents    = 10_000_000
	limPayloadBytes   = 1 << 20
	limRatePerSecond  = 1_000_000
	limClaimBatch     = 10000
	limProcesses      = 64
	limOutagesPerPeer = 1000
)

// problem is one validation failure on a key (with indices).
type problem struct{ key, msg string }

// badFunc reports a problem on key, its message formatted as by fmt.Sprintf.
type badFunc func(key, format string, args ...any)

// Validate checks a drill that already has its defaults (see SetDefaults)
// and returns Errors naming the keys, without file positions.
func (d *Drill) Validate() error {
	ps := validate(d, nil)
	if len(ps) == 0 {
		return nil
	}
	es := make(Errors, len(ps))
	for i, p := range ps {
		es[i] = &Error{Key: p.key, Msg: p.msg}
	}
	return boundErrors(es)
}

func oneOf(v string, kinds ...string) bool {
	for _, k := range kinds {
		if v == k {
			return true
		}
	}
	return false
}

// choices writes kinds as "a, b or c".
func choices(kinds ...string) string {
	if len(kinds) == 1 {
		return kinds[0]
	}
	return strings.Join(kinds[:len(kinds)-1], ", ") + " or " + kinds[len(kinds)-1]
}

// validate returns every problem of d. has reports whether a key was in the
// file; nil means unknown (a drill built in Go).
func validate(d *Drill, has func(string) bool) []problem {
	// Ceilings first: a drill above one is refused however else it is
	// wrong, and the rest of validation is then cheap.
	c := &checker{d: d, has: has, ps: validateLimits(d)}
	c.drillKeys()
	c.store()
	names := c.sourceAndPartners()
	c.policy()
	c.dispatcher()
	c.faults()
	c.ps = append(c.ps, validateActions(d, has, names)...)
	c.system()
	validatePartnerServer(d, has, c.bad)
	c.positive("slo.delivery_latency", d.SLO.DeliveryLatency)
	c.expectAndGates()
	c.ps = append(c.ps, checkRanges(d)...)
	if len(c.ps) == 0 {
		c.ps = append(c.ps, runnerChecks(d)...)
	}
	return c.ps
}

// checker collects the problems of one drill, section by section.
type checker struct {
	d   *Drill
	has func(string) bool // nil: unknown (a drill built in Go)
	ps  []problem
}

func (c *checker) bad(key, format string, args ...any) {
	c.ps = append(c.ps, problem{key, fmt.Sprintf(format, args...)})
}

// kind checks that v is one of kinds, suggesting the nearest when not.
func (c *checker) kind(key, v string, kinds ...string) bool {
	if oneOf(v, kinds...) {
		return true
	}
	if near, ok := nearest(v, kinds); ok {
		c.bad(key, "%q is not one of %s; did you mean %s?", clip(v), choices(kinds...), near)
	} else {
		c.bad(key, "%q is not one of %s", clip(v), choices(kinds...))
	}
	return false
}

func (c *checker) positive(key string, v Duration) {
	if v.D <= 0 {
		c.bad(key, "must be greater than 0 (got %v)", v.D)
	}
}

// given reports whether key was written in the file; when that is unknown,
// whether its value differs from the default (changed).
func (c *checker) given(key string, changed bool) bool {
	if c.has == nil {
		return changed
	}
	return c.has(key)
}

// drillKeys checks the top-level keys: name, duration, mode, sample
// interval and speed.
func (c *checker) drillKeys() {
	d := c.d
	switch {
	case d.Name == "":
		c.bad("name", "required")
	case !model.ValidName(d.Name):
		c.bad("name", "%q must be letters, digits, '.', '_' or '-', starting with a letter or digit, at most 100 characters (it names the output directory)", clip(d.Name))
	}
	if !d.Duration.Set || d.Duration.D <= 0 {
		c.bad("duration", "must be set and greater than 0 (how long the source produces events)")
	} else if d.Duration.D > limDrillDuration {
		c.bad("duration", "at most %v (got %v)", limDrillDuration, d.Duration.D)
	}
	c.kind("mode", d.Mode, "sim", "live", "external")
	c.positive("sample_interval", d.SampleInterval)
	if !(d.Speed > 0) || d.Speed > 1e6 {
		c.bad("speed", "must be greater than 0 and at most 1e6 (got %v)", d.Speed)
	} else if d.Mode == "sim" && c.given("speed", d.Speed != 1) {
		c.bad("speed", "applies only to mode = \"live\" (external systems run in wall time)")
	}
}

// store checks the live mode's durable queue.
func (c *checker) store() {
	d := c.d
	if d.Store == "" {
		return
	}
	scheme, _, _ := strings.Cut(d.Store, ":")
	switch {
	case d.Mode != "live":
		c.bad("store", "applies only to mode = \"live\"")
	case scheme != "sqlite" && scheme != "postgres" && scheme != "postgresql":
		c.bad("store", "want \"sqlite:PATH\" or \"postgres://USER:PASS@127.0.0.1:PORT/DB\" (got a %q store)", clip(scheme))
	case scheme == "sqlite" && d.Store == "sqlite:":
		c.bad("store", "sqlite needs a file path, like \"sqlite:out/queue.db\"")
	case scheme != "sqlite" && queue.InlineSecret(d.Store):
		c.bad("store", "holds a password: a drill file is no place for one; write postgres://USER@127.0.0.1:PORT/DB and set PGPASSWORD in the environment")
	case scheme != "sqlite":
		if err := queue.CheckPostgresDSN(d.Store); err != nil {
			c.bad("store", "%s", strings.TrimPrefix(err.Error(), "queue: "))
		}
	}
}

// sourceAndPartners checks [source], the partners and whom the source
// sends to, and returns the cohort names with their index.
func (c *checker) sourceAndPartners() map[string]int {
	d := c.d
	s := &d.Source
	if c.kind("source.arrival", s.Arrival, ArrivalKindNames()...) {
		c.ps = append(c.ps, arrivalKind(s.Arrival).Check(d)...)
	}
	if s.Rate.PerSecond > limRatePerSecond {
		c.bad("source.rate", "at most %d/s", limRatePerSecond)
	}
	if s.RateTo.PerSecond > limRatePerSecond {
		c.bad("source.rate_to", "at most %d/s", limRatePerSecond)
	}
	if s.Payload < 0 || s.Payload > limPayloadBytes {
		c.bad("source.payload_bytes", "must be between 0 and %d (got %d)", limPayloadBytes, s.Payload)
	}

	if len(d.Partners) == 0 {
		c.bad("partners", "a drill needs at least one partner ([[partners]])")
	}
	names := map[string]int{}
	for i := range d.Partners {
		c.ps = append(c.ps, validatePartner(d, i, names)...)
	}
	seenTo := map[string]bool{}
	for i, to := range s.To {
		key := "source.to[" + strconv.Itoa(i) + "]"
		if _, ok := names[to]; !ok {
			c.bad(key, "%q names no partner cohort", clip(to))
		}
		if seenTo[to] {
			c.bad(key, "%q is listed twice", clip(to))
		}
		seenTo[to] = true
	}
	validateFanout(d, names, c.bad)
	return names
}

// policy checks [policy]: each table's one validation.
func (c *checker) policy() {
	p := &c.d.Policy
	c.ps = append(c.ps, settingProblems("policy.retry.", p.Retry.Problems())...)
	c.ps = append(c.ps, settingProblems("policy.breaker.", p.Breaker.Problems())...)
	c.ps = append(c.ps, settingProblems("policy.budget.", p.Budget.Problems())...)
	if b := &p.Breaker; b.Trip == model.NoBreaker && c.given("policy.breaker.count", len(b.Count) > 0) {
		c.bad("policy.breaker.count", "applies to a breaker; trip = \"none\" has none")
	}
}

// dispatcher checks [dispatcher].
func (c *checker) dispatcher() {
	w := &c.d.Dispatcher
	if w.Workers < 1 || w.Workers > limWorkers {
		c.bad("dispatcher.workers", "must be between 1 and %d (got %d)", limWorkers, w.Workers)
	}
	if w.PerPartnerConcurrency < 0 {
		c.bad("dispatcher.per_partner_concurrency", "must be 0 (no limit) or more (got %d)", w.PerPartnerConcurrency)
	}
	if w.QueueCapacity < 1 || w.QueueCapacity > limQueueCapacity {
		c.bad("dispatcher.queue_capacity", "must be between 1 and %d (got %d)", limQueueCapacity, w.QueueCapacity)
	}
	c.kind("dispatcher.on_full", w.OnFull, "block", "reject")
	c.positive("dispatcher.attempt_timeout", w.AttemptTimeout)
	c.positive("dispatcher.lease_timeout", w.LeaseTimeout)
	if w.ClaimBatch < 1 || w.ClaimBatch > limClaimBatch {
		c.bad("dispatcher.claim_batch", "must be between 1 and %d (got %d)", limClaimBatch, w.ClaimBatch)
	}
	if w.Processes < 1 || w.Processes > limProcesses {
		c.bad("dispatcher.processes", "must be between 1 and %d (got %d)", limProcesses, w.Processes)
	}
	// Keys only the live dispatcher reads would be silently ignored.
	for _, k := range []string{"dispatcher.processes", "dispatcher.alert_interval"} {
		if c.d.Mode == "sim" && c.has != nil && c.has(k) {
			c.bad(k, "applies only to mode = \"live\" (dispatcher processes on a durable queue)")
		}
	}
}

// faults checks the pipeline faults, [[faults]].
func (c *checker) faults() {
	d := c.d
	procs := max(d.Dispatcher.Processes, 1)
	for i, f := range d.Faults {
		key := "faults[" + strconv.Itoa(i) + "]"
		c.kind(key+".kind", f.Kind, FaultKindNames()...)
		if !f.At.Set {
			c.bad(key+".at", "required: when the fault happens")
		} else if d.Duration.D > 0 && f.At.D >= d.Duration.D {
			c.bad(key+".at", "%v is not before duration (%v)", f.At.D, d.Duration.D)
		}
		if f.Process < 0 || f.Process > procs {
			c.bad(key+".process", "must be 0 (every process) or a process number from 1 to dispatcher.processes (%d) (got %d)", procs, f.Process)
		}
	}
}

// expectAndGates checks the findings a drill expects and its gates.
func (c *checker) expectAndGates() {
	d := c.d
	for i, k := range d.Expect {
		if i == 0 && !d.IsExternal() {
			c.bad("expect", "applies only to mode = \"external\" (findings come from a system under drill)")
		}
		c.kind("expect["+strconv.Itoa(i)+"]", k, reports.FindingKindNames()...)
	}
	for i, expr := range d.Gates {
		if _, err := reports.ParseGate(expr); err != nil {
			c.bad("gates["+strconv.Itoa(i)+"]", "%v", err)
		}
	}
}

// runnerChecks builds what the runners build from a valid drill (the
// partner specs, the policy, the breaker) and reports anything they would
// refuse, so that a drill that validates also runs: validate, run, plan and
// partner accept the same drills.
func runnerChecks(d *Drill) []problem {
	var ps []problem
	if _, err := d.PartnerSpecs(); err != nil {
		if es, ok := AsErrors(err); ok {
			for _, e := range es {
				ps = append(ps, problem{e.Key, e.Msg})
			}
		} else {
			ps = append(ps, problem{"partners", err.Error()})
		}
	}
	if _, err := d.ModelPolicy(); err != nil {
		ps = append(ps, problem{"policy.retry", err.Error()})
	}
	if _, err := d.ModelBreakerSettings(); d.BreakerEnabled() && err != nil {
		ps = append(ps, problem{"policy.breaker", err.Error()})
	}
	if len(ps) == 0 {
		ps = dispatcherChecks(d)
	}
	return ps
}

// settingProblems puts a table's problems under its key, suggesting the
// nearest choice for a value that is none of them.
func settingProblems(pre string, sps []model.SettingProblem) []problem {
	ps := make([]problem, len(sps))
	for i, p := range sps {
		ps[i] = problem{pre + p.Key, p.Msg}
		if near, ok := nearest(p.Value, p.Choices); ok && len(p.Choices) > 0 {
			ps[i].msg += "; did you mean " + near + "?"
		}
	}
	return ps
}

// validatePartner checks partners[i]; names collects cohort names.
func validatePartner(d *Drill, i int, names map[string]int) []problem {
	var ps []problem
	p := &d.Partners[i]
	pre := "partners[" + strconv.Itoa(i) + "]."
	bad := func(key, format string, args ...any) {
		ps = append(ps, problem{pre + key, fmt.Sprintf(format, args...)})
	}
	switch {
	case p.Name == "":
		bad("name", "required")
	case !model.ValidName(p.Name):
		bad("name", "%q must be letters, digits, '.', '_' or '-', starting with a letter or digit", clip(p.Name))
	default:
		if j, dup := names[p.Name]; dup {
			bad("name", "%q is also the name of partners[%d]", p.Name, j)
		} else {
			names[p.Name] = i
		}
	}
	if p.Count < 1 || p.Count > limPartnerCount {
		bad("count", "must be between 1 and %d (got %d)", limPartnerCount, p.Count)
	}
	for _, e := range []struct {
		key string
		v   float64
	}{{"transient_errors", p.TransientErrors}, {"permanent_errors", p.PermanentErrors}} {
		if !(e.v >= 0 && e.v <= 1) {
			bad(e.key, "must be a probability in [0, 1] (got %v)", e.v)
		}
	}
	if p.TransientErrors+p.PermanentErrors > 1 {
		bad("permanent_errors", "transient_errors + permanent_errors is %v; at most 1", p.TransientErrors+p.PermanentErrors)
	}
	ps = append(ps, validateCallFaults(p, pre)...)
	ps = append(ps, validateLatency(pre+"latency", &p.Latency)...)
	if p.Concurrency < 0 {
		bad("concurrency", "must be 0 (unlimited) or more (got %d)", p.Concurrency)
	}
	if oneOf(p.OnBusy, "queue", "reject") {
		if p.OnBusy == "reject" && p.Concurrency == 0 {
			bad("on_busy", "reject needs a concurrency limit (concurrency is 0, unlimited)")
		}
	} else {
		bad("on_busy", "%q is not one of queue or reject", p.OnBusy)
	}
	switch {
	case p.Contended && p.NetworkDelay.isZero():
		bad("network_delay", "contended partners need network_delay, the delay of one hop")
	case !p.NetworkDelay.isZero():
		ps = append(ps, validateLatency(pre+"network_delay", &p.NetworkDelay)...)
	}
	ps = append(ps, validateOutages(p, pre)...)
	return ps
}

// validateOutages checks a partner's scripted outages. The values of an
// outage are checked by the fake partner's own validation, the one the
// runners and the control API use; only the kind's name and the presence
// of for are the drill format's.
func validateOutages(p *Partner, pre string) []problem {
	var ps []problem
	bad := func(key, format string, args ...any) {
		ps = append(ps, problem{pre + key, fmt.Sprintf(format, args...)})
	}
	if len(p.Outages) > limOutagesPerPeer {
		bad("outages", "at most %d outages (got %d)", limOutagesPerPeer, len(p.Outages))
	}
	kinds := fakepartner.OutageKindNames()
	for j := range p.Outages {
		o := &p.Outages[j]
		okey := "outages[" + strconv.Itoa(j) + "]."
		if !oneOf(o.Kind, kinds...) {
			if o.Kind == "" {
				bad(okey+"kind", "required: %s", choices(kinds...))
			} else {
				bad(okey+"kind", "%q is not one of %s", clip(o.Kind), choices(kinds...))
			}
			continue
		}
		if !o.For.Set {
			bad(okey+"for", "required: how long the outage lasts")
		}
		if a := o.AnswerAfter; a.Dist == AnswerAfterPartner {
			if a.Dist = ""; !a.isZero() {
				bad(okey+"answer_after", "dist = %q (the partner's own latency) takes no other key", AnswerAfterPartner)
			}
		}
		if a := &o.AnswerAfter; !a.isZero() && a.Dist != AnswerAfterPartner {
			if ps1 := validateLatency(pre+okey+"answer_after", a); len(ps1) > 0 {
				ps = append(ps, ps1...)
				continue
			}
		}
		fo := p.fakeOutage(o)
		for _, pr := range fo.Problems(p.Count) {
			if pr.Key == "for" && !o.For.Set {
				continue
			}
			bad(okey+pr.Key, "%s", pr.Msg)
		}
	}
	return ps
}

// validateCallFaults checks the faults table and dribble_over.
func validateCallFaults(p *Partner, pre string) []problem {
	var ps []problem
	bad := func(key, format string, args ...any) {
		ps = append(ps, problem{pre + key, fmt.Sprintf(format, args...)})
	}
	var keys []string
	for _, n := range fakepartner.PerCallKindNames() {
		keys = append(keys, CallFaultKey(n))
	}
	names := make([]string, 0, len(p.Faults))
	for n := range p.Faults {
		names = append(names, n)
	}
	sort.Strings(names)
	total := 0.0
	for _, n := range names {
		pr := p.Faults[n]
		switch {
		case !oneOf(n, keys...):
			hint := ""
			if k, err := fakepartner.ParseOutageKind(strings.ReplaceAll(n, "_", "-")); err == nil {
				if k.Info().PerCall {
					hint = fmt.Sprintf(" (write %s)", CallFaultKey(k.String()))
				} else {
					hint = fmt.Sprintf(" (%s strikes only as an outage: partners[].outages)", k)
					if why := k.Info().NotPerCall; why != "" {
						hint = fmt.Sprintf(" (%s strikes only as an outage, partners[].outages: %s)", k, why)
					}
				}
			}
			bad("faults."+n, "%q is not a per-call fault%s; per call: %s", clip(n), hint, choices(keys...))
		case !(pr >= 0 && pr <= 1):
			bad("faults."+n, "must be a probability in [0, 1] (got %v)", pr)
		default:
			total += pr
		}
	}
	if total > 1 {
		bad("faults", "the per-call probabilities add up to %.4g; at most 1 (one fault at most strikes a call)", total)
	}
	dribble := p.Faults[CallFaultKey(fakepartner.OutageDribble.String())] > 0
	switch {
	case dribble && !p.DribbleOver.Set:
		bad("dribble_over", "required with faults.dribble: how long the body of a dribbled answer takes")
	case p.DribbleOver.Set && !dribble:
		bad("dribble_over", "only with faults.dribble above 0")
	case p.DribbleOver.Set && (p.DribbleOver.D <= 0 || p.DribbleOver.D > fakepartner.MaxSample):
		bad("dribble_over", "must be above 0 and at most %v (got %v)", fakepartner.MaxSample, p.DribbleOver.D)
	}
	return ps
}

// validateLatency checks a latency table at key.
func validateLatency(key string, l *Latency) []problem {
	var ps []problem
	bad := func(k, format string, args ...any) {
		ps = append(ps, problem{key + "." + k, fmt.Sprintf(format, args...)})
	}
	uses, known := checkLatencyDist(l, bad)
	if !known {
		return ps
	}
	// uses lists the keys the distribution uses; any other key given is a
	// mistake.
	given := []struct {
		name string
		set  bool
	}{
		{"value", l.Value.Set}, {"min", l.Min.Set}, {"max", l.Max.Set}, {"mean", l.Mean.Set},
		{"stddev", l.Stddev.Set}, {"p50", l.P50.Set}, {"p99", l.P99.Set}, {"alpha", l.Alpha != 0},
		{"quantiles", len(l.Quantiles) > 0},
	}
	for _, g := range given {
		if g.set && !oneOf(g.name, uses...) {
			bad(g.name, "does not apply to %s latency (it uses %s)", l.Dist, strings.Join(uses, ", "))
		}
	}
	return ps
}

// checkLatencyDist checks the keys l's distribution needs and returns
// them; known is false when dist names no distribution.
func checkLatencyDist(l *Latency, bad func(k, format string, args ...any)) (uses []string, known bool) {
	switch l.Dist {
	case "constant":
		if !l.Value.Set {
			bad("value", "constant latency needs value")
		}
		return []string{"value"}, true
	case "uniform":
		if !l.Min.Set || !l.Max.Set {
			bad("max", "uniform latency needs min and max")
		} else if l.Min.D >= l.Max.D {
			bad("max", "%v must be above min (%v)", l.Max.D, l.Min.D)
		}
		return []string{"min", "max"}, true
	case "normal", "abs-normal":
		if !l.Mean.Set || !l.Stddev.Set {
			bad("stddev", "%s latency needs mean and stddev", l.Dist)
		} else if l.Stddev.D <= 0 {
			bad("stddev", "must be greater than 0")
		}
		return []string{"mean", "stddev"}, true
	case "lognormal":
		checkLognormal(l, bad)
		return []string{"p50", "p99"}, true
	case "pareto":
		checkPareto(l, bad)
		return []string{"alpha", "min", "p50", "max"}, true
	case "empirical":
		checkEmpirical(l.Quantiles, bad)
		return []string{"quantiles"}, true
	case "":
		bad("dist", "required: constant, uniform, normal, lognormal, pareto or empirical")
	default:
		bad("dist", "%q is not one of constant, uniform, normal, abs-normal, lognormal, pareto or empirical", clip(l.Dist))
	}
	return nil, false
}

func checkLognormal(l *Latency, bad func(k, format string, args ...any)) {
	switch {
	case !l.P50.Set || !l.P99.Set:
		bad("p99", "lognormal latency needs p50 and p99")
	case l.P50.D <= 0:
		bad("p50", "must be greater than 0")
	case l.P99.D <= l.P50.D:
		bad("p99", "%v must be above p50 (%v)", l.P99.D, l.P50.D)
	}
}

func checkPareto(l *Latency, bad func(k, format string, args ...any)) {
	if !(l.Alpha > 0) {
		bad("alpha", "pareto latency needs alpha greater than 0 (got %v)", l.Alpha)
	}
	switch {
	case l.Min.D > 0 && l.P50.D > 0:
		bad("p50", "give either min (the scale) or p50, not both")
	case l.Min.D <= 0 && l.P50.D <= 0:
		bad("min", "pareto latency needs min (the scale) or p50, greater than 0")
	case l.Max.Set && l.Max.D < max(l.Min.D, l.P50.D):
		bad("max", "%v is below the scale", l.Max.D)
	}
}

// checkEmpirical checks an empirical distribution's quantiles: q rises
// from at least 0 to 1, and the values never fall.
func checkEmpirical(qs []Quantile, bad func(k, format string, args ...any)) {
	if len(qs) < 2 {
		bad("quantiles", "empirical latency needs at least 2 quantiles (got %d)", len(qs))
		return
	}
	for i, q := range qs {
		qk := "quantiles[" + strconv.Itoa(i) + "]"
		switch {
		case i == 0 && !(q.Q >= 0):
			bad(qk+".q", "the first q must be at least 0 (got %v)", q.Q)
		case i > 0 && !(q.Q > qs[i-1].Q):
			bad(qk+".q", "%v must be above the previous q (%v)", q.Q, qs[i-1].Q)
		case i > 0 && q.Value.D < qs[i-1].Value.D:
			bad(qk+".value", "%v must not be below the previous value (%v)", q.Value.D, qs[i-1].Value.D)
		}
		if !q.Value.Set {
			bad(qk+".value", "required")
		}
	}
	if last := qs[len(qs)-1]; last.Q != 1 {
		bad("quantiles["+strconv.Itoa(len(qs)-1)+"].q", "the last q must be 1 (got %v)", last.Q)
	}
}
