package drills

import "github.com/stormdrill/stormdrill/model"

// Drill is one drill file as decoded. Every field's toml key, default and
// meaning is also listed in the key reference (keys.go), which the table of
// docs/drill-keys.md is generated from; keep the two together.
type Drill struct {
	Include     []string `toml:"include"` // files whose keys act as defaults, relative to this file
	Name        string   `toml:"name"`
	Description string   `toml:"description"`
	Seed        uint64   `toml:"seed"`
	Duration    Duration `toml:"duration"` // how long the source produces events
	Mode        string   `toml:"mode"`     // sim | live | external
	// Drain is how long the drill keeps running after the source stops, so
	// that backlogs can drain; default 10m. A run ends earlier once the
	// source is done, nothing is pending and every fault is over.
	Drain Duration `toml:"drain"`
	// SampleInterval is the time-series resolution; default about 1/720 of
	// the drill, rounded to a round number of seconds.
	SampleInterval Duration `toml:"sample_interval"`
	// Speed (live only) divides every duration of the drill.
	Speed float64 `toml:"speed"`
	// Store (live only) is the durable queue: "sqlite:PATH" or
	// "postgres://…"; default an SQLite file in the run directory.
	Store string `toml:"store"`

	Source     Source     `toml:"source"`
	Partners   []Partner  `toml:"partners"`
	Policy     Policy     `toml:"policy"`
	Dispatcher Dispatcher `toml:"dispatcher"`
	Faults     []Fault    `toml:"faults"`
	Actions    []Action   `toml:"actions"` // scripted operator actions (actions.go)
	System     System     `toml:"system"`  // external mode: the system under drill
	SLO        SLO        `toml:"slo"`
	Gates      []string   `toml:"gates"`
	// Expect names the kinds of finding the drill expects (external
	// mode): such a finding is reported and does not fail the run.
	Expect []string `toml:"expect"`
	Limits Limits   `toml:"limits"` // ceilings on total work (limits.go)

	// PartnerServer is where an external drill's partner server listens.
	PartnerServer PartnerServer `toml:"partner_server"`

	policyDeclared bool // some policy key was given (file, include or override)
}

// PolicyDeclared reports whether the drill (its files or overrides) gives
// any policy key. An external drill without one leaves the retry policy to
// the system under drill, which stormdrill cannot see: the defaults it
// fills in then describe no real system (see stormdrill plan).
func (d *Drill) PolicyDeclared() bool { return d.policyDeclared }

// Source is the event arrival process. Each event fans out to one delivery
// per subscriber of the cohorts named in To (all cohorts when empty).
type Source struct {
	Arrival string   `toml:"arrival"` // an ArrivalKinds name (arrivals.go)
	Rate    Rate     `toml:"rate"`    // constant, poisson; ramp start rate
	RateTo  Rate     `toml:"rate_to"` // ramp end rate
	Events  int      `toml:"events"`  // burst: events released at once
	At      Duration `toml:"at"`      // burst: when
	To      []string `toml:"to"`      // cohort names; empty = all
	Payload int      `toml:"payload_bytes"`
	// Fan-out shape: all | one | k | degree (see fanout.go).
	Fanout  string             `toml:"fanout"`
	K       int                `toml:"k"`       // fanout = "k"
	Degree  []Degree           `toml:"degree"`  // fanout = "degree"
	Weights map[string]float64 `toml:"weights"` // cohort → one subscriber's weight
}

// Partner is a cohort of identical fake subscribers.
type Partner struct {
	Name            string   `toml:"name"`
	Count           int      `toml:"count"`
	Latency         Latency  `toml:"latency"`
	TransientErrors float64  `toml:"transient_errors"`
	PermanentErrors float64  `toml:"permanent_errors"`
	Concurrency     int      `toml:"concurrency"`   // 0 = unlimited
	OnBusy          string   `toml:"on_busy"`       // queue | reject (answer 503)
	Contended       bool     `toml:"contended"`     // optimistic concurrency on one row
	NetworkDelay    Latency  `toml:"network_delay"` // contended: per hop
	Outages         []Outage `toml:"outages"`
	// Faults: per-call fault kind (a PerCall outage kind, "-" written "_")
	// → the probability that a call outside outages meets it.
	Faults      map[string]float64 `toml:"faults"`
	DribbleOver Duration           `toml:"dribble_over"` // faults.dribble: how long a body takes
}

// Latency is a latency distribution.
type Latency struct {
	Dist      string     `toml:"dist"` // constant | uniform | normal | lognormal | pareto | empirical
	Value     Duration   `toml:"value"`
	Min       Duration   `toml:"min"`
	Max       Duration   `toml:"max"`
	Mean      Duration   `toml:"mean"`
	Stddev    Duration   `toml:"stddev"`
	P50       Duration   `toml:"p50"`
	P99       Duration   `toml:"p99"`
	Alpha     float64    `toml:"alpha"`     // pareto shape
	Quantiles []Quantile `toml:"quantiles"` // empirical
}

// Quantile is one point of an empirical distribution.
type Quantile struct {
	Q     float64  `toml:"q"`
	Value Duration `toml:"value"`
}

// Outage is one entry of a partner's scripted fault timeline.
type Outage struct {
	Start      Duration `toml:"start"`
	For        Duration `toml:"for"`
	Kind       string   `toml:"kind"`        // a fakepartner.OutageKinds name
	RetryAfter string   `toml:"retry_after"` // throttle: "5" | "date:30s" | "garbage"
	Factor     float64  `toml:"factor"`      // slow: latency multiplier
	Period     Duration `toml:"period"`      // flap: one up+down cycle
	Members    int      `toml:"members"`     // how many subscribers of the cohort it hits; 0 = all
	// AnswerAfter is how long a failing call takes to be answered: a
	// latency table, or dist = "partner" for the partner's own latency;
	// empty answers at once.
	AnswerAfter Latency  `toml:"answer_after"`
	DribbleOver Duration `toml:"dribble_over"` // dribble: how long each answer's body takes
}

// Policy is the retry policy with its breaker and budget: the policy
// core's own settings type, with its one validation, which the live
// dispatcher's configuration file decodes into too.
type Policy = model.PolicySettings

// Dispatcher is the worker pool and queue.
type Dispatcher struct {
	Workers               int      `toml:"workers"`
	PerPartnerConcurrency int      `toml:"per_partner_concurrency"` // 0 = no limit
	QueueCapacity         int      `toml:"queue_capacity"`
	OnFull                string   `toml:"on_full"` // block | reject
	AttemptTimeout        Duration `toml:"attempt_timeout"`
	LeaseTimeout          Duration `toml:"lease_timeout"`
	ClaimBatch            int      `toml:"claim_batch"`    // live
	AlertInterval         Duration `toml:"alert_interval"` // live: DLQ alerts at most this often
	Processes             int      `toml:"processes"`      // live: dispatcher processes on one queue
}

// Fault is a fault of the pipeline itself (not of a partner).
type Fault struct {
	Kind string   `toml:"kind"` // a FaultKinds name (faultkinds.go)
	At   Duration `toml:"at"`
	Down Duration `toml:"down"`
	// Process (live) is the dispatcher process (1..processes) the fault
	// restarts; 0 restarts every process.
	Process int `toml:"process"`
}

// SLO is the delivery objective.
type SLO struct {
	DeliveryLatency Duration `toml:"delivery_latency"`
}
