package experiments

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"sync"

	"github.com/stormdrill/stormdrill/drills"
	"github.com/stormdrill/stormdrill/drills/sim"
)

// Capacity search limits.
const (
	// DefaultMaxProbes bounds a search: bracketing and bisection together.
	DefaultMaxProbes = 30
	// DefaultRatePrecision is where bisection on a rate stops: the bracket
	// is within 2% of its lower end.
	DefaultRatePrecision = 0.02
	// maxBracketSteps: bracketing gives up 2^30 times away from the start.
	maxBracketSteps = 30
	maxIntegerValue = 1_000_000
	// DefaultCapacitySeeds is how many seeds `capacity` runs unless told:
	// enough for the answer to carry a 95% confidence interval.
	DefaultCapacitySeeds = 5
)

// CapacityOptions tune Capacity.
type CapacityOptions struct {
	// Key is the drill key to vary: "source.rate" (default; the largest
	// passing rate is searched) or an integer key such as
	// "dispatcher.workers" (the smallest passing value is searched).
	Key string
	// Min and Max bound the search; 0 means unbounded on that side (the
	// search brackets from the drill's own value).
	Min, Max float64
	// Seeds (default 1): seed, seed+1, …. With several, the search runs
	// once per seed; the answer is the most conservative per-seed boundary,
	// stated with the mean and 95% confidence interval of the per-seed
	// boundaries.
	Seeds int
	// Precision is the relative width at which a rate search stops
	// (default DefaultRatePrecision); integer keys stop at a step of 1.
	Precision float64
	// MaxProbes bounds the number of probes (default DefaultMaxProbes).
	MaxProbes int
	// Overrides apply to every probe (dotted drill key → TOML literal).
	Overrides map[string]string
	// Workers bounds the runs at once (0: NumCPU). The result does not
	// depend on it.
	Workers int
	// Progress is called after each probe with probes done and the bound.
	Progress func(done, bound int)
}

// Probe is one value tried, over every seed.
type Probe struct {
	Value  float64
	Seeds  int
	Passed int
	Pass   bool
	// Means over the seeds where each applies; NaN when none.
	Amplification, HealthyP99S, DrainTimeS, DeadLettered float64
	// FailedGates are the gates that failed on some seed, in drill order.
	FailedGates []string
	Err         string // the first run error, if a run did not complete
}

// CapacityResult is a finished search.
type CapacityResult struct {
	Drill    string // drill name
	Path     string
	Key      string
	Largest  bool    // true: the largest passing value was searched; false: the smallest
	Integer  bool    // the key takes integers
	Answer   float64 // the boundary: the best passing value found
	Found    bool    // some probed value passes
	Failing  float64 // the nearest failing value beyond the answer; NaN if none
	Bracket  bool    // a failing value bounds the answer (else it is at least/most Answer)
	Seeds    int
	Probes   []Probe // in value order
	Note     string  // why the search stopped, in words
	Gates    []string
	Baseline float64 // the drill's own value of the key
	// SeedAnswers are the per-seed boundaries of a multi-seed search, in
	// seed order; AnswerMean and AnswerCILow/High their mean and 95%
	// confidence interval (Student's t). Empty with one seed.
	SeedAnswers               []float64
	AnswerMean                float64
	AnswerCILow, AnswerCIHigh float64
}

// rateKeys are the keys whose values are rates; everything else is searched
// as an integer.
var rateKeys = map[string]bool{"source.rate": true, "source.rate_to": true}

// Capacity searches one parameter of the drill at path (or of the drill a
// bundled experiment of that name sweeps) for the boundary at
// which every gate still holds: bracketing outward from the drill's own
// value by factors of two, then bisection to the precision, one probe at a
// time, each where the probes so far leave the answer open. With several
// seeds the per-seed searches run in parallel; the result depends only on
// the drill, the options and seeds.
func Capacity(path string, opt CapacityOptions) (*CapacityResult, error) {
	c, err := prepareCapacity(path, opt)
	if err != nil {
		return nil, err
	}
	if c.opt.Seeds == 1 {
		res := c.res
		s := &search{res: res, opt: c.opt, path: path, seed: c.seed, tried: map[float64]*Probe{}}
		s.run(c.start)
		sort.Slice(res.Probes, func(i, j int) bool { return res.Probes[i].Value < res.Probes[j].Value })
		return res, nil
	}
	// One search per seed: the spread of the per-seed boundaries is the
	// noise of the answer, and it is stated with it. The searches run side
	// by side, each probing one value at a time: a search's next probe
	// depends on its last, and the seeds keep the cores busy instead.
	subs := make([]*CapacityResult, c.opt.Seeds)
	runPool(len(subs), c.opt.Workers, nil, func(k int) { subs[k] = c.searchSeed(k) })
	c.combine(subs)
	return c.res, nil
}

// capacitySearch is a search set up: its options with defaults applied,
// the result's header, the drill's own value of the key and its seed.
type capacitySearch struct {
	res   *CapacityResult
	opt   CapacityOptions
	path  string
	start float64
	seed  uint64

	mu   sync.Mutex // guards done
	done []int      // probes done by each seed's search, for Progress
}

// prepareCapacity checks the options, loads the drill and fills in the
// result's header; it runs nothing.
func prepareCapacity(path string, opt CapacityOptions) (*capacitySearch, error) {
	if opt.Key == "" {
		opt.Key = "source.rate"
	}
	opt.Seeds = max(opt.Seeds, 1)
	if opt.Seeds > MaxSeeds {
		return nil, fmt.Errorf("--seeds: at most %d", MaxSeeds)
	}
	if opt.MaxProbes <= 0 {
		opt.MaxProbes = DefaultMaxProbes
	}
	if opt.Precision <= 0 {
		opt.Precision = DefaultRatePrecision
	}
	if opt.Min < 0 || opt.Max < 0 || (opt.Max > 0 && opt.Min > opt.Max) {
		return nil, fmt.Errorf("want 0 ≤ min ≤ max (got min %g, max %g)", opt.Min, opt.Max)
	}
	path, ov, err := resolveDrillArg(path, opt.Overrides)
	if err != nil {
		return nil, err
	}
	opt.Overrides = ov
	base, err := loadDrill(path, opt.Overrides)
	if err != nil {
		return nil, err
	}
	res := &CapacityResult{Drill: base.Name, Path: path, Key: opt.Key, Seeds: opt.Seeds, Largest: rateKeys[opt.Key], Integer: !rateKeys[opt.Key], Failing: math.NaN()}
	res.Gates = base.Gates
	if len(base.Gates) == 0 {
		return nil, errors.New("the drill has no gates: nothing decides where capacity ends")
	}
	start, err := currentValue(base, opt.Key)
	if err != nil {
		return nil, err
	}
	res.Baseline = start
	// Check that the key takes the kind of value we will give it.
	if _, err := loadDrill(path, withOverride(opt.Overrides, opt.Key, literalFor(res, start))); err != nil {
		return nil, err
	}
	return &capacitySearch{res: res, opt: opt, path: path, start: start, seed: base.Seed}, nil
}

// searchSeed runs the search of a multi-seed search's k-th seed on its
// own; the result depends on nothing else, so seeds may be searched on
// different machines (capacity --shard) and combined.
func (c *capacitySearch) searchSeed(k int) *CapacityResult {
	one := c.opt
	one.Seeds, one.Workers = 1, 1
	if progress := c.opt.Progress; progress != nil {
		// Seeds may be searched at once: each reports its own count, and
		// the total is their sum.
		one.Progress = func(done, bound int) {
			c.mu.Lock()
			defer c.mu.Unlock()
			if c.done == nil {
				c.done = make([]int, c.opt.Seeds)
			}
			c.done[k] = done
			total := 0
			for _, d := range c.done {
				total += d
			}
			progress(total, c.opt.Seeds*bound)
		}
	}
	sub := *c.res
	sub.Probes, sub.Found, sub.Bracket, sub.Seeds = nil, false, false, 1
	s := &search{res: &sub, opt: one, path: c.path, seed: c.seed + uint64(k), tried: map[float64]*Probe{}}
	s.run(c.start)
	return &sub
}

// combine puts the per-seed searches (in seed order) into c.res: the
// answer is the most conservative per-seed boundary.
func (c *capacitySearch) combine(subs []*CapacityResult) {
	res := c.res
	res.Found, res.Bracket = true, true
	s := &search{res: res}
	var worst *CapacityResult
	for k, sub := range subs {
		res.Probes = append(res.Probes, sub.Probes...)
		res.Found = res.Found && sub.Found
		res.Bracket = res.Bracket && sub.Bracket
		if !sub.Found {
			res.Note = fmt.Sprintf("seed %d: %s", c.seed+uint64(k), sub.Note)
			continue
		}
		res.SeedAnswers = append(res.SeedAnswers, sub.Answer)
		if worst == nil || s.better(worst.Answer, sub.Answer) {
			worst = sub
		}
	}
	if worst != nil && res.Found {
		res.Answer, res.Failing = worst.Answer, worst.Failing
		res.Note = worst.Note + fmt.Sprintf("; the least of %d per-seed boundaries", len(subs))
	}
	if len(res.SeedAnswers) > 0 {
		st := describe(res.SeedAnswers)
		res.AnswerMean, res.AnswerCILow, res.AnswerCIHigh = st.Mean, st.Mean-st.CIHalf, st.Mean+st.CIHalf
	}
	sort.SliceStable(res.Probes, func(i, j int) bool { return res.Probes[i].Value < res.Probes[j].Value })
}

func withOverride(m map[string]string, k, v string) map[string]string {
	out := make(map[string]string, len(m)+1)
	for a, b := range m {
		out[a] = b
	}
	out[k] = v
	return out
}

// currentValue reads the drill's own value of the key being searched.
func currentValue(d *drills.Drill, key string) (float64, error) {
	switch key {
	case "source.rate":
		return d.Source.Rate.PerSecond, nil
	case "source.rate_to":
		return d.Source.RateTo.PerSecond, nil
	case "dispatcher.workers":
		return float64(d.Dispatcher.Workers), nil
	case "dispatcher.per_partner_concurrency":
		return float64(d.Dispatcher.PerPartnerConcurrency), nil
	case "dispatcher.queue_capacity":
		return float64(d.Dispatcher.QueueCapacity), nil
	case "policy.retry.max_attempts":
		return float64(d.Policy.Retry.MaxAttempts), nil
	case "policy.breaker.threshold":
		return float64(d.Policy.Breaker.Threshold), nil
	case "source.events":
		return float64(d.Source.Events), nil
	}
	// Any other integer key: start from 1 unless --min says otherwise.
	return 1, nil
}

func literalFor(res *CapacityResult, v float64) string {
	if res.Integer {
		return strconv.FormatInt(int64(v), 10)
	}
	return strconv.Quote(strconv.FormatFloat(v, 'g', 8, 64) + "/s")
}

type search struct {
	res   *CapacityResult
	opt   CapacityOptions
	path  string
	seed  uint64
	tried map[float64]*Probe
}

// passSide reports whether v is on the passing side of u (v "better").
func (s *search) better(v, u float64) bool {
	if s.res.Largest {
		return v > u
	}
	return v < u
}

func (s *search) clamp(v float64) float64 {
	if s.opt.Min > 0 {
		v = math.Max(v, s.opt.Min)
	}
	if s.opt.Max > 0 {
		v = math.Min(v, s.opt.Max)
	}
	if s.res.Integer {
		v = math.Min(math.Max(math.Round(v), 1), maxIntegerValue)
	} else {
		// Four significant digits: values a table can show.
		v = roundSig(v, 4)
	}
	return v
}

func roundSig(v float64, digits int) float64 {
	if v <= 0 {
		return v
	}
	p := math.Pow(10, float64(digits)-math.Ceil(math.Log10(v)))
	return math.Round(v*p) / p
}

// probe runs the values not yet tried, in parallel, and returns every
// value's probe.
func (s *search) probe(values []float64) []*Probe {
	var fresh []float64
	seen := map[float64]bool{}
	for _, v := range values {
		if _, ok := s.tried[v]; !ok && !seen[v] && len(s.tried)+len(fresh) < s.opt.MaxProbes {
			fresh = append(fresh, v)
			seen[v] = true
		}
	}
	seeds := s.opt.Seeds
	runs := make([]SweepRun, len(fresh)*seeds)
	names := []string{"amplification", "healthy.latency.p99", "drain_time", "dead_lettered"}
	gateFails := make([][]bool, len(runs))
	runPool(len(runs), s.opt.Workers, nil, func(i int) {
		v := fresh[i/seeds]
		ov := withOverride(s.opt.Overrides, s.opt.Key, literalFor(s.res, v))
		runs[i], gateFails[i] = runForCapacity(s.path, ov, s.seed+uint64(i%seeds), names)
	})
	for k, v := range fresh {
		p := &Probe{Value: v, Seeds: seeds}
		cols := make([][]float64, len(names))
		failed := make([]bool, len(s.res.Gates))
		for j := 0; j < seeds; j++ {
			r := runs[k*seeds+j]
			if r.Pass {
				p.Passed++
			}
			if r.Err != "" && p.Err == "" {
				p.Err = r.Err
			}
			for g, f := range gateFails[k*seeds+j] {
				if g < len(failed) && f {
					failed[g] = true
				}
			}
			for c := range names {
				if x := r.Values[c]; !math.IsNaN(x) {
					cols[c] = append(cols[c], x)
				}
			}
		}
		p.Pass = p.Passed == seeds
		means := make([]float64, len(names))
		for c := range names {
			means[c] = describe(cols[c]).Mean
		}
		p.Amplification, p.HealthyP99S, p.DrainTimeS, p.DeadLettered = means[0], means[1], means[2], means[3]
		for g, f := range failed {
			if f {
				p.FailedGates = append(p.FailedGates, s.res.Gates[g])
			}
		}
		s.tried[v] = p
		s.res.Probes = append(s.res.Probes, *p)
		if s.opt.Progress != nil {
			s.opt.Progress(len(s.tried), s.opt.MaxProbes)
		}
	}
	out := make([]*Probe, 0, len(values))
	for _, v := range values {
		if p, ok := s.tried[v]; ok {
			out = append(out, p)
		}
	}
	return out
}

// runForCapacity is runOneSeed that also says which gates failed.
func runForCapacity(path string, ov map[string]string, seed uint64, names []string) (SweepRun, []bool) {
	r := SweepRun{Seed: seed, Values: make([]float64, len(names))}
	for i := range r.Values {
		r.Values[i] = math.NaN()
	}
	d, err := loadDrill(path, ov)
	if err != nil {
		r.Err = err.Error()
		return r, nil
	}
	d.Seed = seed
	run, err := sim.Run(d, sim.Options{})
	if err != nil {
		r.Err = err.Error()
		if run == nil {
			return r, nil
		}
	}
	r.Pass = err == nil && run.Summary.Pass
	for i, n := range names {
		if v, ok, merr := RunMetric(run, n); merr == nil && ok {
			r.Values[i] = v
		}
	}
	fails := make([]bool, len(run.Summary.Gates))
	for i, g := range run.Summary.Gates {
		fails[i] = !g.Pass
	}
	return r, fails
}

// bounds recomputes, over every probe so far, the best passing value and
// the nearest failing value beyond it. With no passing value, bad is the
// failing value nearest the passing side.
func (s *search) bounds() (good, bad float64, haveGood, haveBad bool) {
	for v, p := range s.tried {
		if p.Pass && (!haveGood || s.better(v, good)) {
			good, haveGood = v, true
		}
	}
	for v, p := range s.tried {
		if p.Pass || (haveGood && !s.better(v, good)) {
			continue
		}
		if !haveBad || s.better(bad, v) {
			bad, haveBad = v, true
		}
	}
	return good, bad, haveGood, haveBad
}

// run brackets the boundary, then bisects it.
func (s *search) run(start float64) {
	res := s.res
	if start <= 0 {
		start = 1
	}
	first := []float64{s.clamp(start)}
	if s.opt.Min > 0 && s.opt.Max > 0 {
		first = []float64{s.clamp(s.opt.Min), s.clamp((s.opt.Min + s.opt.Max) / 2), s.clamp(s.opt.Max)}
	}
	s.probe(first)
	// Bracketing: step away from what has been seen by factors of two,
	// one value at a time, until a pass and a failure beyond it are seen.
	// A failure ends the steps toward failure: the values past it are
	// taken to fail too, so they are not run (the rates past the boundary
	// are the dearest probes).
	for step := 0; step < maxBracketSteps && len(s.tried) < s.opt.MaxProbes; step++ {
		good, bad, haveGood, haveBad := s.bounds()
		if haveGood && haveBad {
			break
		}
		from, up := good, res.Largest // from a pass, toward failure
		if !haveGood {
			from, up = bad, !res.Largest // from a failure, toward passing
		}
		v := s.clamp(from / 2)
		if up {
			v = s.clamp(from * 2)
		}
		before := len(s.tried)
		s.probe([]float64{v})
		if len(s.tried) == before {
			break // clamped to the bounds: nothing new to try
		}
	}
	good, bad, haveGood, haveBad := s.bounds()
	switch {
	case !haveGood:
		res.Note = "no value tried passes every gate"
		return
	case !haveBad:
		res.Answer, res.Found = good, true
		res.Note = "every value tried passes; the boundary lies beyond the range searched"
		return
	}
	// Bisection to a quarter of the bracket a round: its middle, then the
	// quarter point between the middle and the end it did not match. The
	// three quarter points a round once probed together find the same
	// quarter with one probe more, on a side the middle already decided.
	for len(s.tried) < s.opt.MaxProbes && !s.narrow(good, bad) {
		before := len(s.tried)
		lo, hi := math.Min(good, bad), math.Max(good, bad)
		quarter := func(k int) float64 { return s.clamp(lo + (hi-lo)*float64(k)/4) }
		s.probe([]float64{quarter(2)})
		good, bad, _, _ = s.bounds()
		for _, v := range []float64{quarter(1), quarter(3)} {
			if math.Min(good, bad) < v && v < math.Max(good, bad) && len(s.tried) < s.opt.MaxProbes {
				s.probe([]float64{v})
				good, bad, _, _ = s.bounds()
				break
			}
		}
		if len(s.tried) == before {
			break
		}
	}
	res.Answer, res.Found, res.Bracket, res.Failing = good, true, true, bad
	if s.narrow(good, bad) {
		if res.Integer {
			res.Note = "bracketed to a step of 1"
		} else {
			res.Note = fmt.Sprintf("bracketed to within %.3g%%", 100*s.opt.Precision)
		}
	} else {
		res.Note = fmt.Sprintf("stopped at the bound of %d probes", s.opt.MaxProbes)
	}
}

// narrow reports whether the bracket is as tight as asked.
func (s *search) narrow(good, bad float64) bool {
	lo, hi := math.Min(good, bad), math.Max(good, bad)
	if s.res.Integer {
		return hi-lo <= 1
	}
	return lo > 0 && (hi-lo)/lo <= s.opt.Precision
}
