package drills

import (
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/stormdrill/stormdrill/fakepartner"
	"github.com/stormdrill/stormdrill/model"
	"github.com/stormdrill/stormdrill/reports"
)

// KeyDoc documents one drill key. Key is written with [] for arrays of
// tables: "partners[].outages[].kind".
type KeyDoc struct {
	Key, Type, Default, Doc string
}

// Keys is the reference of every drill key, in the order docs/drill-keys.md lists
// them. A test checks it against the toml tags of Drill, both ways; the
// table of docs/drill-keys.md is KeysMarkdown().
var Keys = []KeyDoc{
	{"include", "array of strings", "", "Drill files whose keys act as defaults under this one, relative to this file. Tables merge key by key; arrays (partners, gates, …) in this file replace the included ones."},
	{"name", "string", "required", "Drill name; also the output directory name, so letters, digits, `.`, `_` and `-` only."},
	{"description", "string", "", "What the drill is for, one or two sentences; shown in reports."},
	{"seed", "integer", "1", "Seed of every random stream; the same seed gives the same simulated run."},
	{"duration", "duration", "required", "How long the source produces events."},
	{"mode", "string", `"sim"`, "`sim` (virtual clock, simulated partners), `live` (HTTP partners, durable queue, wall clock) or `external` (somebody else's system, wall clock; see `system`)."},
	{"drain", "duration", `"10m"`, "How long the drill keeps running after the source stops, so that backlogs can drain."},
	{"sample_interval", "duration", "about 1/720 of duration + drain", "Time-series resolution; by default rounded up to 1, 2, 5, 10, 15, 30 or 60 s (at least 1s)."},
	{"speed", "number", "1", "Live only: every duration of the drill is divided by it."},
	{"store", "string", "an SQLite file in the run directory", "Live only: the durable queue, `\"sqlite:PATH\"` or `\"postgres://USER@127.0.0.1:PORT/DB\"` (loopback only; `?search_path=SCHEMA` picks a schema; the password comes from `$PGPASSWORD`, never from the drill file). It must hold no deliveries when the run starts. `stormdrill run --store` overrides it."},

	{"source.arrival", "string", `"poisson"`, arrivalDoc()},
	{"source.rate", "rate", "required for constant, poisson, ramp", "Events per unit of time, like `\"12/s\"` or `\"600/m\"`; the start rate of a ramp."},
	{"source.rate_to", "rate", "required for ramp", "The rate a ramp ends at."},
	{"source.events", "integer", "required for burst", "Events a burst releases at once."},
	{"source.at", "duration", `"0s"`, "When a burst is released."},
	{"source.to", "array of strings", "all cohorts", "Cohorts (partner names) each event fans out to."},
	{"source.fanout", "string", "\"all\"", "Which of those subscribers each event goes to: `all`; `one` (uniformly, or by `weights`); `k` (`source.k` distinct ones); `degree` (n distinct ones, n drawn from `source.degree`). The same subscribers per event in every mode."},
	{"source.k", "integer", "—", "k: how many distinct subscribers each event goes to."},
	{"source.degree[].n", "integer", "—", "degree: rows `{ n = 3, p = 0.2 }`: an event goes to n distinct subscribers with probability p."},
	{"source.degree[].p", "number", "—", "degree: the probability of the row's n; the rows' p add up to 1."},
	{"source.weights", "table of numbers", "every subscriber 1", "one, k, degree: cohort name → the relative weight of one of its subscribers, e.g. `{ big = 10 }`."},
	{"source.payload_bytes", "integer", "0", "Size of each delivery's payload."},

	{"partners[].name", "string", "required", "Cohort name; unique within the drill."},
	{"partners[].count", "integer", "1", "Identical subscribers in the cohort, 1 to 100000."},
	{"partners[].latency.dist", "string", `"constant"`, "Latency distribution: `constant`, `uniform`, `normal`, `abs-normal` (the absolute value of a normal), `lognormal`, `pareto` or `empirical`. With no latency at all: constant 50ms."},
	{"partners[].latency.value", "duration", `"50ms"`, "constant: the latency."},
	{"partners[].latency.min", "duration", "", "uniform: lower bound; pareto: the scale (or give p50)."},
	{"partners[].latency.max", "duration", "", "uniform: upper bound, above min; pareto: optional cap on samples."},
	{"partners[].latency.mean", "duration", "", "normal: mean."},
	{"partners[].latency.stddev", "duration", "", "normal: standard deviation."},
	{"partners[].latency.p50", "duration", "", "lognormal: median, above 0; pareto: median (instead of min)."},
	{"partners[].latency.p99", "duration", "", "lognormal: 99th percentile, above p50."},
	{"partners[].latency.alpha", "number", "", "pareto: shape, above 0."},
	{"partners[].latency.quantiles[].q", "number", "", "empirical: a quantile; increasing, first ≥ 0, last = 1."},
	{"partners[].latency.quantiles[].value", "duration", "", "empirical: the latency at q; not decreasing."},
	{"partners[].transient_errors", "number", "0", "Probability in [0, 1] of a 503 that clears on retry."},
	{"partners[].permanent_errors", "number", "0", "Probability in [0, 1] of a 422 (bad data, never retried); with transient_errors at most 1."},
	{"partners[].concurrency", "integer", "0", "Requests each subscriber serves at once; beyond it they wait (or are rejected). 0 = unlimited."},
	{"partners[].on_busy", "string", `"queue"`, "When all of a subscriber's servers are busy: `queue` or `reject` (answer 503)."},
	{"partners[].contended", "bool", "false", "Optimistic concurrency on one row: conflicting writes fail with 409. Needs network_delay."},
	{"partners[].network_delay", "latency table", "", "Contended partners: the delay of one hop, with the same keys as latency."},
	{"partners[].faults", "table of numbers", "none", callFaultsDoc()},
	{"partners[].dribble_over", "duration", "", "faults.dribble: how long the body of a dribbled answer takes after its headers; above 0."},
	{"partners[].outages[].start", "duration", `"0s"`, "When the outage begins, from the drill's start."},
	{"partners[].outages[].for", "duration", "required", "How long it lasts; above 0."},
	{"partners[].outages[].kind", "string", "required", outageKindDoc()},
	{"partners[].outages[].retry_after", "string", `""`, "throttle: the Retry-After sent: `\"N\"` seconds, `\"date:DUR\"` (an HTTP-date DUR ahead) or `\"garbage\"`; empty sends none."},
	{"partners[].outages[].factor", "number", "", "slow: latency multiplier, at least 1."},
	{"partners[].outages[].period", "duration", "", "flap: one down+up cycle; above 0."},
	{"partners[].outages[].dribble_over", "duration", "", "dribble: how long the body of each answer takes after its headers; above 0."},
	{"partners[].outages[].answer_after", "latency table", "", "unavailable, reset, throttle, flap, empty, garbage, truncated, redirect: how long a failing call takes to be answered, with the same keys as latency, or `{ dist = \"partner\" }` for the partner's own latency; not given, it fails at once."},
	{"partners[].outages[].members", "integer", "0", "How many subscribers of the cohort it hits, at most count; 0 = all."},

	{"policy.retry.max_attempts", "integer", "5", "Attempts per delivery, the first included; 0 = no limit."},
	{"policy.retry.base", "duration", `"1s"`, "First backoff delay; above 0."},
	{"policy.retry.cap", "duration", `"5m"`, "Largest backoff delay; at least base."},
	{"policy.retry.multiplier", "number", "2", "Growth of the delay per attempt; at least 1."},
	{"policy.retry.jitter", "string", `"full"`, jitterDoc()},
	{"policy.retry.jitter_ratio", "number", "0.5", "proportional: the delay varies by ± this fraction; in [0, 1]."},
	{"policy.retry.delivery_window", "duration", `"0s"`, "Give up (dead-letter, window-expired) this long after the event was created; 0 = no window."},
	{"policy.retry.retry_after", "string", `"honour"`, "`honour` or `ignore` a partner's Retry-After."},
	{"policy.retry.retry_after_max", "duration", "cap", "Longest Retry-After honoured."},
	{"policy.retry.retryable_status", "array of integers", "", "HTTP statuses (100–599) to retry although they would not be."},
	{"policy.retry.permanent_status", "array of integers", "", "HTTP statuses (100–599) never to retry; not also in retryable_status."},

	{"policy.breaker.trip", "string", `"none"`, tripDoc()},
	{"policy.breaker.threshold", "integer", "5", tripRulesUsing("threshold") + ": failures that open the breaker; at least 1."},
	{"policy.breaker.window", "duration", `"60s"`, tripRulesUsing("window") + ": the sliding window."},
	{"policy.breaker.ratio", "number", "0.5", tripRulesUsing("ratio") + ": failure ratio that opens the breaker, in (0, 1]."},
	{"policy.breaker.min_calls", "integer", "10", tripRulesUsing("min_calls") + ": calls in the window before the ratio counts; at least 1."},
	{"policy.breaker.cooldown", "duration", `"30s"`, "How long the breaker stays open before probing; above 0."},
	{"policy.breaker.probes", "integer", "1", "Trial calls let through half-open; at least 1."},
	{"policy.breaker.count", "array of strings", "all", "The failures that count against the breaker: `5xx`, `429`, `4xx`, `timeout`, `reset`, `refused`, `other`; empty counts every failure. Without `429`, a throttling partner's deliveries follow Retry-After instead of opening the breaker."},
	{"policy.breaker.on_open", "string", `"hold"`, "Deliveries to an open breaker: `hold` (wait for it) or `dead-letter` (circuit-open)."},

	{"policy.budget.scope", "string", `"partner"`, "Retry budget per `partner` or `global`."},
	{"policy.budget.max_tokens", "number", "0", "Token bucket size; 0 = no budget."},
	{"policy.budget.token_ratio", "number", "0.1", "Tokens a success earns back; at least 0."},
	{"policy.budget.on_exhausted", "string", `"defer"`, "A retry with no token left: `defer` it or `dead-letter` it (budget-exhausted)."},

	{"dispatcher.workers", "integer", "10", "Worker slots: attempts in flight at once; at least 1."},
	{"dispatcher.per_partner_concurrency", "integer", "0", "Attempts in flight to one subscriber at once; 0 = no limit."},
	{"dispatcher.queue_capacity", "integer", "100000", "Deliveries the queue holds; at least 1."},
	{"dispatcher.on_full", "string", `"block"`, "A full queue: `block` the source (back-pressure) or `reject` (dead-letter, queue-full)."},
	{"dispatcher.attempt_timeout", "duration", `"10s"`, "Timeout of one attempt; above 0."},
	{"dispatcher.lease_timeout", "duration", `"30s"`, "Live: a claimed delivery's lease; when it expires another worker may take it."},
	{"dispatcher.claim_batch", "integer", "64", "Live: deliveries claimed per query."},
	{"dispatcher.alert_interval", "duration", `"1s"`, "Live: dead-letter alerts at most this often."},
	{"dispatcher.processes", "integer", "1", "Live: dispatcher processes on the one queue, 1 to 64; each has workers slots. Several processes are what PostgreSQL is for."},

	{"faults[].kind", "string", "required", faultKindDoc()},
	{"faults[].at", "duration", "required", "When, before duration."},
	{"faults[].down", "duration", `"10s"`, "How long the dispatcher stays down."},
	{"faults[].process", "integer", "0", "Live: the dispatcher process (1 to dispatcher.processes) the fault restarts; 0 = every process."},

	{"actions[].kind", "string", "required", actionKindDoc()},
	{"actions[].at", "duration", "required", "When the operator acts, from the drill's start; at most duration + drain."},
	{"actions[].reason", "string", "—", "dlq-replay: only dead letters of this reason (`permanent`, `max-attempts`, `window-expired`, `circuit-open`, `budget-exhausted`, `queue-full`); one the drill's policy can never produce is refused."},
	{"actions[].cohort", "string", "—", "dlq-replay: only dead letters of this cohort; outage-end: whose outage ends (required)."},
	{"actions[].batch", "integer", "100", "dlq-replay: dead letters moved per batch, 1 to 10000."},
	{"actions[].rate", "rate", "0", "dlq-replay: batches per unit of time, like `\"1/s\"`; 0 = no pause between batches."},
	{"actions[].outage", "integer", "0", "outage-end: which of the cohort's outages (1 = the first listed); 0 = the one in force at `at`."},
	{"actions[].for", "duration", "required for pause-source", "pause-source: how long the source stays paused."},

	{"system.dir", "string", "the drill file's directory", "External: working directory of build, start and the commands, relative to the drill file."},
	{"system.build", "array of strings", "—", "External: a command run once before the drill, outside its clock (e.g. `go build`)."},
	{"system.start", "array of strings", "— (already running)", "External: the system as a child process the harness starts, and kills for `restart` faults. `${STORMDRILL_PARTNER_URL}`, `${STORMDRILL_INGEST_URL}`, `${STORMDRILL_INGEST_ADDR}`, `${STORMDRILL_DEAD_LETTER_URL}`, `${STORMDRILL_ALERT_URL}`, `${STORMDRILL_RUN_DIR}`, `${STORMDRILL_STATE_DIR}` (emptied before each run), `${STORMDRILL_EXECUTABLE}` and `${STORMDRILL_PARTNER_LAYOUT}` are expanded here and set in its environment."},
	{"system.ready_url", "string", "—", "External: the started system is ready when this URL answers 2xx."},
	{"system.ready_log", "string", "—", "External: the started system is ready when a line of its output contains this."},
	{"system.ready_timeout", "duration", `"2m"`, "External: how long the started system may take to become ready."},
	{"system.ingest", "string", `"http"`, "External: how events enter the system: `http` (a POST per event), `command` (a command per event, the event on its stdin) or `jsonl` (one JSON line per event)."},
	{"system.ingest_url", "string", `"${STORMDRILL_INGEST_URL}"`, "External, http: where each event is POSTed. 429 and 503 are retried (bounded) and counted as source held back."},
	{"system.ingest_headers", "array of strings", "—", "External, http: extra headers, each `\"Name: value\"`."},
	{"system.body_template", "string", "the event as JSON", "External: a Go text/template of one event (`.EventID`, `.Created`, `.Deliveries` with `.ID` and `.URL`, `.Payload`; `json` renders a value)."},
	{"system.ingest_command", "array of strings", "—", "External, command: the program run per event."},
	{"system.jsonl_path", "string", "the started system's stdin", "External, jsonl: the file events are appended to."},
	{"system.dead_letters", "string", `"endpoint"`, "External: how dead letters are seen: `endpoint` (the system POSTs `{\"id\",\"reason\",\"attempts\"}` to `${STORMDRILL_DEAD_LETTER_URL}`), `command` (listed by `system.dead_letter_command`, every second once the source is done and at the end) or `none` (unresolved deliveries are reported, `lost` is not claimed)."},
	{"system.dead_letter_command", "array of strings", "—", "External, command: lists the system's dead letters, as one JSON array or one JSON object per line, each `{\"id\",\"reason\",\"attempts\"}` with an optional `\"dead_at\"` (RFC 3339; without it the listing's time counts); it runs every second once the source is done and once at the end, and repeats of an id are ignored."},
	{"system.key_header", "string", `"Idempotency-Key"`, "External: the header that identifies a delivery in every attempt."},
	{"system.attempt_header", "string", "—", "External: a header carrying the attempt number, if the system sends one."},

	{"partner_server.listen", "string", `"127.0.0.1:0"`, "External: where the harness's partner server listens. An address other machines can reach (`\"0.0.0.0:8080\"`, a host name) needs a token in the environment variable `token_env`, a fixed port and `url`; the control API, `/alerts` and `/dead-letters` then require `Authorization: Bearer TOKEN`, and the partner paths stay open."},
	{"partner_server.url", "string", "http:// and the address bound", "External: the base URL the system under drill reaches the partner server by (`${STORMDRILL_PARTNER_URL}` and each delivery's URL), like `\"http://drill:8080\"`; required with a listen address that is not loopback."},
	{"partner_server.token_env", "string", `"STORMDRILL_PARTNER_TOKEN"`, "External: the environment variable holding the partner server's token (16 to 256 characters; never in the drill file). When it is set, the token is required, and a started system gets it as `$STORMDRILL_PARTNER_TOKEN` to report dead letters with."},

	{"slo.delivery_latency", "duration", `"30m"`, "Delivery objective for healthy subscribers: event created to delivered."},

	{"gates", "array of strings", "", "Pass/fail conditions such as `\"lost == 0\"` or `\"healthy.latency.p99 < 30m\"`; a failed gate makes the run exit with 1."},
	{"expect", "array of strings", "[]", "External: kinds of finding the drill expects, such as `[\"ingest-refused\"]` for a drill of ingest back-pressure; an expected finding is still reported first, but does not fail the run. Kinds: " + findingKindList() + "."},

	{"limits.deliveries", "integer", "50000000", "Ceiling on events × fan-out (expected deliveries). Every limit is also raised from the command line with `--limit KEY=N`."},
	{"limits.subscribers", "integer", "100000", "Ceiling on the sum of every cohort's count."},
	{"limits.cohorts", "integer", "1000", "Ceiling on the number of `[[partners]]`."},
	{"limits.gates", "integer", "100", "Ceiling on the number of gates."},
	{"limits.array", "integer", "1000", "Ceiling on the length of any other array (status lists, outages of a cohort, faults, source.to, quantiles)."},
	{"limits.samples", "integer", "100000", "Ceiling on time-series samples, (duration + drain) / sample_interval."},
}

// The documentation of the kind keys is read off the kinds' declarations:
// model/jitterkinds.go, model/triprules.go, fakepartner/outagekinds.go,
// arrivals.go and faultkinds.go.

func outageKindDoc() string {
	parts := make([]string, len(fakepartner.OutageKinds))
	for i := range fakepartner.OutageKinds {
		k := &fakepartner.OutageKinds[i]
		parts[i] = "`" + k.Name + "` (" + k.Doc + ")"
	}
	return "What the partner does while the outage lasts: " + joinChoices(parts) + "."
}

func callFaultsDoc() string {
	var parts []string
	for _, n := range fakepartner.PerCallKindNames() {
		parts = append(parts, "`"+CallFaultKey(n)+"`")
	}
	return "Faults that strike single calls outside outages: kind → the probability in [0, 1] that a call meets it, e.g. `{ lost_ack = 0.01 }`; the kinds (as for outages, `_` for `-`): " +
		joinChoices(parts) + "; at most 1 in all, drawn apart from transient_errors." + notPerCallDoc()
}

// notPerCallDoc says why the kinds that cannot strike single calls, for a
// reason of their own, cannot.
func notPerCallDoc() string {
	var s string
	for i := range fakepartner.OutageKinds {
		if k := &fakepartner.OutageKinds[i]; k.NotPerCall != "" {
			s += " Not `" + CallFaultKey(k.Name) + "`: " + k.NotPerCall + "."
		}
	}
	return s
}

func jitterDoc() string {
	parts := make([]string, len(model.JitterKinds))
	for i := range model.JitterKinds {
		k := &model.JitterKinds[i]
		parts[i] = "`" + k.Name + "` (" + k.Doc + ")"
	}
	return "How the delay d is randomised: " + joinChoices(parts) + "."
}

func faultKindDoc() string {
	parts := make([]string, len(FaultKinds))
	for i, k := range FaultKinds {
		parts[i] = "`" + k.Name + "` (" + k.Doc + ")"
	}
	return "A fault of the pipeline itself: " + joinChoices(parts) + "."
}

func tripDoc() string {
	parts := []string{"`none` (no breaker)"}
	for i := range model.TripRules {
		k := &model.TripRules[i]
		parts = append(parts, "`"+k.Name+"` ("+k.Doc+")")
	}
	return "Per-partner circuit breaker: " + joinChoices(parts) + "."
}

// tripRulesUsing names the trip rules that read the breaker setting key,
// as "window, rate".
func tripRulesUsing(key string) string {
	var names []string
	for i := range model.TripRules {
		if slices.Contains(model.TripRules[i].Uses, key) {
			names = append(names, model.TripRules[i].Name)
		}
	}
	return strings.Join(names, ", ")
}

// KeysMarkdown renders Keys as a Markdown table.
func KeysMarkdown() string {
	var b strings.Builder
	b.WriteString("| key | type | default | meaning |\n| --- | --- | --- | --- |\n")
	for _, k := range Keys {
		def := k.Default
		if def == "" {
			def = "—"
		}
		b.WriteString("| `" + k.Key + "` | " + k.Type + " | " + mdCell(def) + " | " + mdCell(k.Doc) + " |\n")
	}
	return b.String()
}

// KeysReferenceCommand is the command that writes docs/drill-keys.md; a
// test fails when the committed file is not its output.
const KeysReferenceCommand = "go run ./cmd/stormdrill keys --markdown > docs/drill-keys.md"

// KeysReferenceMarkdown is docs/drill-keys.md: the key table and the table
// of outage kinds, read off their declarations. The prose that explains
// them is in docs/drill-format.md, which is written by hand.
func KeysReferenceMarkdown() string {
	var b strings.Builder
	b.WriteString("# Drill keys\n\n")
	b.WriteString("<!-- Generated from drills/keys.go by `" + KeysReferenceCommand + "`; do not edit. -->\n\n")
	b.WriteString("Every key of a drill file, with its type, default and meaning. Units, ranges and\n")
	b.WriteString("limits: [the drill format](drill-format.md#drill-keys).\n\n")
	b.WriteString(KeysMarkdown())
	b.WriteString("\n## Outage kinds\n\n")
	b.WriteString("What each outage kind does, what the dispatcher sees of it, and whether it can\n")
	b.WriteString("also strike single calls: [the drill format](drill-format.md#outage-kinds).\n\n")
	b.WriteString(OutageKindsMarkdown())
	return b.String()
}

// OutageKindsMarkdown is the table of outage kinds in docs/drill-keys.md, read off
// their declarations: what the partner does, what the dispatcher sees of
// it and how it classes it, and whether the kind can also strike single
// calls (partners[].faults).
func OutageKindsMarkdown() string {
	var b strings.Builder
	b.WriteString("| kind | the partner | the dispatcher sees | per call |\n| --- | --- | --- | --- |\n")
	for i := range fakepartner.OutageKinds {
		k := &fakepartner.OutageKinds[i]
		per := "—"
		if k.PerCall {
			per = "`faults." + CallFaultKey(k.Name) + "`"
		}
		b.WriteString("| `" + k.Name + "` | " + mdCell(k.Doc) + " | " + mdCell(k.Caller) + " | " + per + " |\n")
	}
	return b.String()
}

// mdCell escapes the one character that breaks a table cell.
func mdCell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

// schemaKey is one key of the Drill struct, found through its toml tags.
type schemaKey struct {
	Path  string // with [] for arrays of tables
	Kind  schemaKind
	Type  reflect.Type
	Names []string // keys of the table (tables and arrays of tables)
}

type schemaKind uint8

const (
	leafKey schemaKind = iota
	tableKey
	tableArrayKey
)

var (
	durationType = reflect.TypeFor[Duration]()
	rateType     = reflect.TypeFor[Rate]()
)

// isTableType reports whether t decodes from a TOML table (a struct that is
// not one of the string-valued unit types).
func isTableType(t reflect.Type) bool {
	return t.Kind() == reflect.Struct && t != durationType && t != rateType
}

// schema maps every key path ("" is the root) to its description.
var schema = sync.OnceValue(func() map[string]schemaKey {
	m := map[string]schemaKey{}
	var walk func(path string, t reflect.Type)
	walk = func(path string, t reflect.Type) {
		var names []string
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			tag := strings.Split(f.Tag.Get("toml"), ",")[0]
			if tag == "" || tag == "-" || !f.IsExported() {
				continue
			}
			names = append(names, tag)
			p := joinKey(path, tag)
			switch {
			case isTableType(f.Type):
				m[p] = schemaKey{Path: p, Kind: tableKey, Type: f.Type}
				walk(p, f.Type)
			case f.Type.Kind() == reflect.Slice && isTableType(f.Type.Elem()):
				p += "[]"
				m[p] = schemaKey{Path: p, Kind: tableArrayKey, Type: f.Type}
				walk(p, f.Type.Elem())
			default:
				m[p] = schemaKey{Path: p, Kind: leafKey, Type: f.Type}
			}
		}
		k := m[path]
		k.Names = names
		m[path] = k
	}
	m[""] = schemaKey{Kind: tableKey, Type: reflect.TypeFor[Drill]()}
	walk("", reflect.TypeFor[Drill]())
	return m
})

// typeName is how Keys and error messages name a Go type.
func typeName(t reflect.Type) string {
	switch {
	case t == durationType:
		return "duration"
	case t == rateType:
		return "rate"
	case isTableType(t):
		return "table"
	}
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "bool"
	case reflect.Int, reflect.Int64, reflect.Int32, reflect.Uint64, reflect.Uint32, reflect.Uint:
		return "integer"
	case reflect.Float64, reflect.Float32:
		return "number"
	case reflect.Map:
		return "table of " + typeName(t.Elem()) + "s"
	case reflect.Slice:
		if isTableType(t.Elem()) {
			return "array of tables"
		}
		e := typeName(t.Elem())
		if e == "bool" {
			return "array of bools"
		}
		return "array of " + e + "s"
	}
	return t.String()
}

// findingKindList is reports.FindingKinds' names as `a`, `b` or `c`.
func findingKindList() string {
	var names []string
	for _, n := range reports.FindingKindNames() {
		names = append(names, "`"+n+"`")
	}
	return choices(names...)
}
