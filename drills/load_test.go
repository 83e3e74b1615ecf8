package drills

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// validBase is the smallest valid drill; cases append to it. It is 6 lines.
const validBase = `name = "t"
duration = "1m"
[source]
rate = "1/s"
[[partners]]
name = "a"
`

// TestMalformed checks that each broken drill is refused with the exact
// FILE:LINE: key prefix and a message that says what is wrong.
func TestMalformed(t *testing.T) {
	cases := []struct {
		name   string
		text   string
		prefix string // the first error must start with it
		msg    string // and contain it
	}{
		// A typo in a key: line, key and the nearest valid key.
		{"typo", validBase + "[policy.retry]\nmax_attemps = 3\n",
			"bad.toml:8: policy.retry.max_attemps:", "did you mean max_attempts?"},
		// A duration without a unit.
		{"missing unit", validBase + "[policy.retry]\nbase = \"2\"\n",
			"bad.toml:8: policy.retry.base:", `duration "2" has no unit`},
		// A bare number for a duration gets the same advice.
		{"bare number duration", validBase + "[dispatcher]\nattempt_timeout = 5\n",
			"bad.toml:8: dispatcher.attempt_timeout:", `duration "5" has no unit`},
		// A negative duration.
		{"negative duration", "name = \"t\"\nduration = \"-5m\"\n",
			"bad.toml:2: duration:", "negative"},
		// A string where an integer belongs.
		{"wrong type", validBase + "[dispatcher]\nworkers = \"ten\"\n",
			"bad.toml:8: dispatcher.workers:", `want an integer, got a string ("ten")`},
		// A gate on a metric that does not exist.
		{"unknown gate metric", "gates = [\"lost == 0\", \"lots == 0\"]\n" + validBase,
			"bad.toml:1: gates[1]:", "lots"},
		// Zero workers is an error, not "use the default".
		{"zero workers", validBase + "[dispatcher]\nworkers = 0\n",
			"bad.toml:8: dispatcher.workers:", "must be between 1 and"},
		// A cap below base.
		{"cap below base", validBase + "[policy.retry]\nbase = \"10s\"\ncap = \"5s\"\n",
			"bad.toml:9: policy.retry.cap:", "below base"},
		// A cap left at its default but below base points at the table.
		{"default cap below base", validBase + "[policy.retry]\nbase = \"10m\"\n",
			"bad.toml:7: policy.retry.cap:", "below base"},
		// An outage that ends before it starts, on the second partner.
		{"outage for 0s", validBase + "[[partners]]\nname = \"b\"\n[[partners.outages]]\nstart = \"1m\"\nfor = \"0s\"\nkind = \"reset\"\n",
			"bad.toml:11: partners[1].outages[0].for:", "end before it starts"},
		// A typo in the first of three partners is reported on its own line,
		// not on the last partner's.
		{"typo in first partner", "name = \"t\"\nduration = \"1m\"\n[source]\nrate = \"1/s\"\n" +
			"[[partners]]\nname = \"a\"\ncuont = 2\n[[partners]]\nname = \"b\"\n[[partners]]\nname = \"c\"\n",
			"bad.toml:7: partners[0].cuont:", "did you mean count?"},
		// A type error in the first of two partners, same point.
		{"type error in first partner", "name = \"t\"\nduration = \"1m\"\n[source]\nrate = \"1/s\"\n" +
			"[[partners]]\nname = \"a\"\ncount = \"2\"\n[[partners]]\nname = \"b\"\ncount = 2\n",
			"bad.toml:7: partners[0].count:", "want an integer"},
		// A TOML syntax error carries the parser's line.
		{"syntax error", "name = \"t\"\nduration = \"1m\n",
			"bad.toml:2:", "newline"},
		// A top-level key written after a table header.
		{"gates after a table", validBase + "[slo]\ngates = [\"lost == 0\"]\n",
			"bad.toml:8: slo.gates:", "put it before the first [table]"},
		// A key in the wrong table points to the right one.
		{"key in wrong table", "workers = 3\n" + validBase,
			"bad.toml:1: workers:", "did you mean dispatcher.workers?"},
		// A typo in an enumerated value.
		{"typo in a kind", validBase + "[policy.breaker]\ntrip = \"consecutiv\"\n",
			"bad.toml:8: policy.breaker.trip:", "did you mean consecutive?"},
		// A typo in the first piece of a dotted key.
		{"typo in dotted key", "polcy.retry.base = \"1s\"\n" + validBase,
			"bad.toml:1: polcy:", "did you mean policy?"},
		// A rate without a unit.
		{"rate without unit", "name = \"t\"\nduration = \"1m\"\n[source]\nrate = \"4\"\n[[partners]]\nname = \"a\"\n",
			"bad.toml:4: source.rate:", "no unit"},
		// An unknown latency distribution inside an inline table.
		{"unknown dist", validBase + "latency = { dist = \"gaussian\", value = \"1s\" }\n",
			"bad.toml:7: partners[0].latency.dist:", `"gaussian" is not one of`},
		// Lognormal with p99 below p50.
		{"lognormal p99 below p50", validBase + "latency = { dist = \"lognormal\", p50 = \"1s\", p99 = \"100ms\" }\n",
			"bad.toml:7: partners[0].latency.p99:", "must be above p50"},
		// source.to names a cohort that does not exist.
		{"unknown cohort", "name = \"t\"\nduration = \"1m\"\n[source]\nrate = \"1/s\"\nto = [\"a\", \"nobody\"]\n[[partners]]\nname = \"a\"\n",
			"bad.toml:5: source.to[1]:", `"nobody" names no partner cohort`},
		// Two cohorts with one name.
		{"duplicate partner", validBase + "[[partners]]\nname = \"a\"\n",
			"bad.toml:8: partners[1].name:", "also the name of partners[0]"},
		// Probabilities that add up to more than 1.
		{"probabilities", validBase + "transient_errors = 0.7\npermanent_errors = 0.5\n",
			"bad.toml:8: partners[0].permanent_errors:", "at most 1"},
		// expect names kinds of finding, and only an external drill has
		// findings.
		{"expect in sim", "expect = [\"ingest-refused\"]\n" + validBase,
			"bad.toml:1: expect:", "only to mode = \"external\""},
		{"unknown finding kind", "expect = [\"ingest-refusal\"]\nmode = \"external\"\n" + validBase + "[system]\ningest_url = \"http://127.0.0.1:9/events\"\n",
			"bad.toml:1: expect[0]:", "did you mean ingest-refused?"},
		// Speed is for live mode only.
		{"speed in sim", "speed = 10.0\n" + validBase,
			"bad.toml:1: speed:", "only to mode = \"live\""},
		// A throttle with a Retry-After that is none of the three forms.
		{"bad retry_after", validBase + "[[partners.outages]]\nfor = \"1m\"\nkind = \"throttle\"\nretry_after = \"soon\"\n",
			"bad.toml:10: partners[0].outages[0].retry_after:", `want seconds ("5")`},
		// A slowdown that speeds the partner up: the fake partner's one rule
		// (a factor of at least 1) refuses it here and at run time alike.
		{"slow factor below 1", validBase + "[[partners.outages]]\nfor = \"1m\"\nkind = \"slow\"\nfactor = 0.5\n",
			"bad.toml:10: partners[0].outages[0].factor:", "at least 1"},
		// A status in both override lists.
		{"status in both lists", validBase + "[policy.retry]\nretryable_status = [409]\npermanent_status = [\n  422,\n  409,\n]\n",
			"bad.toml:11: policy.retry.permanent_status[1]:", "also in retryable_status"},
		// A contended partner without network_delay.
		{"contended without network delay", validBase + "contended = true\n",
			"bad.toml:5: partners[0].network_delay:", "need network_delay"},
		// A fault after the drill ends.
		{"fault after end", validBase + "[[faults]]\nkind = \"restart\"\nat = \"2m\"\n",
			"bad.toml:9: faults[0].at:", "not before duration"},
		// Empirical quantiles that go backwards.
		{"empirical backwards", validBase + "latency = { dist = \"empirical\", quantiles = [\n  { q = 0.5, value = \"10ms\" },\n  { q = 0.4, value = \"20ms\" },\n  { q = 1.0, value = \"30ms\" },\n] }\n",
			"bad.toml:9: partners[0].latency.quantiles[1].q:", "must be above the previous q"},
		// A name that cannot be a directory name.
		{"unsafe name", "name = \"../x\"\nduration = \"1m\"\n[source]\nrate = \"1/s\"\n[[partners]]\nname = \"a\"\n",
			"bad.toml:1: name:", "output directory"},
		// No partners at all.
		{"no partners", "name = \"t\"\nduration = \"1m\"\n[source]\nrate = \"1/s\"\n",
			"bad.toml: partners:", "at least one partner"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("bad.toml", []byte(c.text))
			if err == nil {
				t.Fatal("no error")
			}
			es, ok := AsErrors(err)
			if !ok || len(es) == 0 {
				t.Fatalf("error %T is not Errors: %v", err, err)
			}
			first := es[0].Error()
			if !strings.HasPrefix(first, c.prefix) || !strings.Contains(first, c.msg) {
				t.Errorf("first error\n  %s\nwant prefix %q containing %q; all:\n%v", first, c.prefix, c.msg, err)
			}
		})
	}
}

// TestAllErrorsReported checks that one Load reports every problem, in line
// order, not just the first.
func TestAllErrorsReported(t *testing.T) {
	text := validBase + "[policy.retry]\nmax_attemps = 3\njiter = \"full\"\n[dispatcher]\nworkerz = 3\n"
	_, err := Parse("many.toml", []byte(text))
	es, ok := AsErrors(err)
	if !ok {
		t.Fatalf("want Errors, got %v", err)
	}
	want := []string{
		"many.toml:8: policy.retry.max_attemps: unknown key in policy.retry; did you mean max_attempts?",
		"many.toml:9: policy.retry.jiter: unknown key in policy.retry; did you mean jitter?",
		"many.toml:11: dispatcher.workerz: unknown key in dispatcher; did you mean workers?",
	}
	if got := err.Error(); got != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", got, strings.Join(want, "\n"))
	}
	if len(es) != 3 {
		t.Errorf("got %d errors, want 3", len(es))
	}
	var one *Error
	if !errors.As(err, &one) || one.Line != 8 {
		t.Errorf("errors.As to *Error: %v", one)
	}
}

// TestErrorBound checks that a drill with very many problems reports at most
// MaxErrors of them plus a line saying how many more there were.
func TestErrorBound(t *testing.T) {
	var b strings.Builder
	b.WriteString(validBase)
	for i := range 30 {
		fmt.Fprintf(&b, "bogus%d = 1\n", i)
	}
	_, err := Parse("bound.toml", []byte(b.String()))
	es, _ := AsErrors(err)
	if len(es) != MaxErrors+1 || !strings.Contains(es[MaxErrors].Msg, "10 more not shown") {
		t.Fatalf("got %d errors, last %v", len(es), es[len(es)-1])
	}
}

// TestIncludes checks merge semantics: included keys are defaults, tables
// merge key by key, arrays in the including file replace included ones.
func TestIncludes(t *testing.T) {
	d, err := Load(filepath.Join("testdata", "merge.toml"), nil)
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		what      string
		got, want any
	}{
		{"name from the including file", d.Name, "merge"},
		{"duration from the included file", d.Duration.D, 10 * time.Minute},
		{"partners replaced, not appended", len(d.Partners), 1},
		{"partner is the including file's", d.Partners[0].Name, "own"},
		{"retry.cap overridden", d.Policy.Retry.Cap.D, 40 * time.Second},
		{"retry.base merged from the included table", d.Policy.Retry.Base.D, 500 * time.Millisecond},
		{"retry.max_attempts merged", d.Policy.Retry.MaxAttempts, 3},
		{"dispatcher from the included file", d.Dispatcher.Workers, 7},
		{"gates from the included file", strings.Join(d.Gates, ","), "lost == 0"},
		{"include list is the top file's", strings.Join(d.Include, ","), "base-policy.toml"},
		{"retry_after_max defaults to the merged cap", d.Policy.Retry.RetryAfterMax.D, 40 * time.Second},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s: got %v, want %v", c.what, c.got, c.want)
		}
	}
}

// TestIncludeErrors checks that include problems point at the include line,
// and that errors in values from an included file point into that file.
func TestIncludeErrors(t *testing.T) {
	cases := []struct {
		file   string
		prefix string
		msg    string
	}{
		// a → b → a.
		{"cycle-a.toml", filepath.Join("testdata", "cycle-b.toml") + ":2: include[0]:", "include cycle: cycle-a.toml → cycle-b.toml → cycle-a.toml"},
		// The second entry of a multi-line include list.
		{"missing-include.toml", filepath.Join("testdata", "missing-include.toml") + ":4: include[1]:", `"no-such-file.toml": no such file`},
		// workers = 0 came from the included file: the error says so.
		{"bad-included.toml", filepath.Join("testdata", "bad-base.toml") + ":3: dispatcher.workers:", "must be between 1"},
	}
	for _, c := range cases {
		_, err := Load(filepath.Join("testdata", c.file), nil)
		if err == nil {
			t.Errorf("%s: no error", c.file)
			continue
		}
		es, _ := AsErrors(err)
		if len(es) == 0 || !strings.HasPrefix(es[0].Error(), c.prefix) || !strings.Contains(es[0].Error(), c.msg) {
			t.Errorf("%s: got\n%v\nwant prefix %q containing %q", c.file, err, c.prefix, c.msg)
		}
	}
}

// TestIncludeDepth checks that a chain of includes longer than
// MaxIncludeDepth is refused.
func TestIncludeDepth(t *testing.T) {
	dir := t.TempDir()
	for i := range MaxIncludeDepth + 2 {
		text := fmt.Sprintf("include = [\"f%d.toml\"]\n", i+1)
		if i == MaxIncludeDepth+1 {
			text = "seed = 5\n"
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%d.toml", i)), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, err := Load(filepath.Join(dir, "f0.toml"), nil)
	if err == nil || !strings.Contains(err.Error(), "nested more than 8 deep") {
		t.Fatalf("got %v", err)
	}
}

// TestBundledDrills checks that every bundled drill loads, validates and
// converts to fake partner specs.
func TestBundledDrills(t *testing.T) {
	files, err := filepath.Glob("*.toml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 8 {
		t.Fatalf("found %d bundled drills, want at least 8", len(files))
	}
	for _, f := range files {
		d, err := Load(f, nil)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if d.Name != strings.TrimSuffix(f, ".toml") {
			t.Errorf("%s: name %q does not match the file name", f, d.Name)
		}
		if d.Description == "" || len(d.Gates) < 2 || !strings.Contains(strings.Join(d.Gates, ","), "lost == 0") {
			t.Errorf("%s: needs a description and gates including lost == 0", f)
		}
		if _, err := d.PartnerSpecs(); err != nil {
			t.Errorf("%s: PartnerSpecs: %v", f, err)
		}
	}
}

// TestFlagship pins the figures of fanout-outage.toml that the brief asks for.
func TestFlagship(t *testing.T) {
	d, err := Load("fanout-outage.toml", nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := d.Partners[0].Count + d.Partners[1].Count; n != 200 {
		t.Errorf("subscribers %d, want 200", n)
	}
	o := d.Partners[1].Outages[0]
	if o.Start.D != 10*time.Minute || o.For.D != 20*time.Minute || o.Kind != "unavailable" {
		t.Errorf("outage %+v", o)
	}
	if d.Source.Rate.PerSecond != 2 || d.Duration.D != time.Hour || d.Dispatcher.Workers != 64 {
		t.Errorf("rate %v duration %v workers %d", d.Source.Rate.PerSecond, d.Duration.D, d.Dispatcher.Workers)
	}
}

// TestDefaults checks that absent keys get their defaults and that an
// explicit zero is kept where zero means something.
func TestDefaults(t *testing.T) {
	d, err := Parse("d.toml", []byte(validBase))
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		what      string
		got, want any
	}{
		{"seed", d.Seed, uint64(1)},
		{"mode", d.Mode, "sim"},
		{"drain", d.Drain.D, 10 * time.Minute},
		{"sample_interval", d.SampleInterval.D, time.Second},
		{"arrival", d.Source.Arrival, "poisson"},
		{"count", d.Partners[0].Count, 1},
		{"latency dist", d.Partners[0].Latency.Dist, "constant"},
		{"latency value", d.Partners[0].Latency.Value.D, 50 * time.Millisecond},
		{"on_busy", d.Partners[0].OnBusy, "queue"},
		{"max_attempts", d.Policy.Retry.MaxAttempts, 5},
		{"base", d.Policy.Retry.Base.D, time.Second},
		{"cap", d.Policy.Retry.Cap.D, 5 * time.Minute},
		{"multiplier", d.Policy.Retry.Multiplier, 2.0},
		{"jitter", d.Policy.Retry.Jitter, "full"},
		{"retry_after_max", d.Policy.Retry.RetryAfterMax.D, 5 * time.Minute},
		{"breaker trip", d.Policy.Breaker.Trip, "none"},
		{"breaker min_calls", d.Policy.Breaker.MinCalls, 10},
		{"budget scope", d.Policy.Budget.Scope, "partner"},
		{"workers", d.Dispatcher.Workers, 10},
		{"queue_capacity", d.Dispatcher.QueueCapacity, 100000},
		{"on_full", d.Dispatcher.OnFull, "block"},
		{"claim_batch", d.Dispatcher.ClaimBatch, 64},
		{"slo", d.SLO.DeliveryLatency.D, 30 * time.Minute},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s: got %v, want %v", c.what, c.got, c.want)
		}
	}
	// Explicit zeros that mean "no limit" or "none" stay zero.
	d, err = Parse("z.toml", []byte("seed = 0\n"+validBase+"[policy.retry]\nmax_attempts = 0\njitter_ratio = 0.0\n"))
	if err != nil {
		t.Fatal(err)
	}
	if d.Seed != 0 || d.Policy.Retry.MaxAttempts != 0 || d.Policy.Retry.JitterRatio != 0 {
		t.Errorf("explicit zeros replaced: seed %d max_attempts %d jitter_ratio %v", d.Seed, d.Policy.Retry.MaxAttempts, d.Policy.Retry.JitterRatio)
	}
	// SetDefaults on a drill built in Go, then Validate.
	g := Drill{Name: "go", Duration: Duration{D: time.Minute, Set: true},
		Source: Source{Rate: Rate{PerSecond: 1, Set: true}}, Partners: []Partner{{Name: "p"}}}
	g.SetDefaults()
	if err := g.Validate(); err != nil {
		t.Errorf("Go-built drill: %v", err)
	}
	g.Dispatcher.Workers = 0
	if err := g.Validate(); err == nil || err.Error() != "dispatcher.workers: must be between 1 and 100000 (got 0)" {
		t.Errorf("Validate without positions: %v", err)
	}
}

// TestOverrides checks that overrides replace values, reach into arrays of
// tables, and that bad keys and values are refused.
func TestOverrides(t *testing.T) {
	d, err := Load("fanout-outage.toml", map[string]string{
		"policy.retry.jitter":    `"equal"`,
		"dispatcher.workers":     `40`,
		"source.rate":            `"4/s"`,
		"partners[1].count":      `3`,
		"partners.concurrency":   `2`,           // every cohort
		"policy.breaker.on_open": `dead-letter`, // bare string
	})
	if err != nil {
		t.Fatal(err)
	}
	if d.Policy.Retry.Jitter != "equal" || d.Dispatcher.Workers != 40 || d.Source.Rate.PerSecond != 4 ||
		d.Partners[1].Count != 3 || d.Partners[0].Concurrency != 2 || d.Partners[1].Concurrency != 2 ||
		d.Policy.Breaker.OnOpen != "dead-letter" {
		t.Errorf("overrides not applied: %+v %+v %+v", d.Policy, d.Dispatcher, d.Partners)
	}
	bad := []struct {
		key, value string
		want       string
	}{
		// An unknown key, with a suggestion.
		{"policy.retry.max_attemps", "3", "fanout-outage.toml: policy.retry.max_attemps: override: unknown key in policy.retry; did you mean max_attempts?"},
		// An unknown table.
		{"dispatch.workers", "3", "fanout-outage.toml: dispatch.workers: override: unknown key; did you mean dispatcher?"},
		// An index past the end.
		{"partners[5].count", "3", "fanout-outage.toml: partners[5].count: override: partners[5] does not exist; the drill has 2"},
		// A value of the wrong type, caught by decoding.
		{"dispatcher.workers", `"many"`, `fanout-outage.toml: dispatcher.workers: want an integer, got a string ("many") (set by override)`},
		// A value that fails validation.
		{"dispatcher.workers", "0", "fanout-outage.toml: dispatcher.workers: must be between 1 and 100000 (got 0) (set by override)"},
		// include cannot be overridden.
		{"include", `["x.toml"]`, "fanout-outage.toml: include: override: include cannot be overridden"},
	}
	for _, c := range bad {
		_, err := Load("fanout-outage.toml", map[string]string{c.key: c.value})
		if err == nil || err.Error() != c.want {
			t.Errorf("override %s=%s: got\n%v\nwant\n%s", c.key, c.value, err, c.want)
		}
	}
}

// TestKeyLines checks the line locator on the TOML constructs it must
// follow: arrays of tables, nested arrays of tables, inline tables, multi-line
// arrays and strings that contain things that look like keys.
func TestKeyLines(t *testing.T) {
	src := `name = "x" # comment
description = """
[[partners]]
fake = 1
"""
gates = [
  "a", # first
  "b",
]
[[partners]]
name = 'p0'
latency = { dist = "empirical", quantiles = [{ q = 0.5, value = "1s" },
  { q = 1.0, value = "2s" }] }
[[partners]]
"name" = "p1"
  [[partners.outages]]
  for = "1m"
  [[partners.outages]]
  for = "2m"
[partners.latency]
dist = "constant"
[policy . retry]
base.x = "1s"
`
	want := map[string]int{
		"name": 1, "description": 2, "gates": 6, "gates[0]": 7, "gates[1]": 8,
		"partners": 10, "partners[0]": 10, "partners[0].name": 11,
		"partners[0].latency.dist":               12,
		"partners[0].latency.quantiles[0].q":     12,
		"partners[0].latency.quantiles[1].value": 13,
		"partners[1]":                            14,
		"partners[1].name":                       15,
		"partners[1].outages[0].for":             17,
		"partners[1].outages[1]":                 18,
		"partners[1].outages[1].for":             19,
		"partners[1].latency.dist":               21,
		"policy.retry":                           22,
		"policy.retry.base.x":                    23,
	}
	got := keyLines(src)
	for k, line := range want {
		if got[k] != line {
			t.Errorf("%s: line %d, want %d", k, got[k], line)
		}
	}
	if _, ok := got["fake"]; ok {
		t.Error("a key inside a multi-line string was located")
	}
}

// TestNearest checks the typo suggestions.
func TestNearest(t *testing.T) {
	cases := []struct {
		name string
		want string
		ok   bool
	}{
		{"max_attemps", "max_attempts", true}, // one letter dropped
		{"wokers", "workers", true},           // one letter dropped
		{"cuont", "count", true},              // two letters swapped
		{"xyz", "", false},                    // nothing close
		{"a", "", false},                      // too short to guess
	}
	keys := []string{"max_attempts", "workers", "base", "cap", "count"}
	for _, c := range cases {
		got, ok := nearest(c.name, keys)
		if ok != c.ok || (ok && got != c.want) {
			t.Errorf("nearest(%q) = %q, %v; want %q, %v", c.name, got, ok, c.want, c.ok)
		}
	}
}

// FuzzParse feeds arbitrary bytes to Parse: it must not panic, and every
// error must be Errors or *Error with a line that is not negative.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("*.toml")
	for _, file := range files {
		if data, err := os.ReadFile(file); err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte(validBase + "[[partners.outages]]\nfor = \"0s\"\n"))
	f.Add([]byte("include = [\"include/demo-common.toml\"]\nname = \"x\"\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := Parse("fuzz.toml", data)
		if err == nil {
			if d == nil {
				t.Fatal("nil drill without error")
			}
			return
		}
		es, ok := AsErrors(err)
		if !ok || len(es) == 0 {
			t.Fatalf("error %T is not Errors: %v", err, err)
		}
		for _, e := range es {
			if e == nil || e.Line < 0 {
				t.Fatalf("bad error %#v", e)
			}
		}
	})
}
