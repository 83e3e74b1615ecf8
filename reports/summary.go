package reports

// Summary is everything a run measured, as written to summary.json. Its field
// names are the contract of docs/metrics.md ("What the harness measures"): gates,
// reports and `compare` read these names. Durations are in seconds (suffix
// _s); a nil pointer means "not applicable" (for example an outage that never
// drained).
type Summary struct {
	Drill       string  `json:"drill"`
	Description string  `json:"description,omitempty"`
	Seed        uint64  `json:"seed"`
	Mode        string  `json:"mode"`
	Pass        bool    `json:"pass"`
	DurationS   float64 `json:"duration_s"`   // how long the source produced events
	DrillTimeS  float64 `json:"drill_time_s"` // virtual (or wall) time at the end, drain included
	Speed       float64 `json:"speed"`        // live: time compression factor; 0 in simulation

	Offered    Offered    `json:"offered"`
	Deliveries Deliveries `json:"deliveries"`
	Attempts   Attempts   `json:"attempts"`

	// Amplification is attempts ÷ deliveries that made at least one
	// attempt; null when it could not be measured (no attempt, or
	// attempts the harness could not tie to a delivery).
	Amplification *float64 `json:"amplification"`

	Outages    []Outage `json:"outages"`
	DrainTimeS *float64 `json:"drain_time_s"` // largest outage drain time; nil if any did not drain

	OldestReadyAgeMaxS   float64 `json:"oldest_ready_age_max_s"`
	OldestDelayedAgeMaxS float64 `json:"oldest_delayed_age_max_s"`

	HealthyLatencyS       Percentiles `json:"healthy_latency_s"`
	HealthyLatencyOutageS Percentiles `json:"healthy_latency_outage_s"` // healthy deliveries created inside an outage window
	HealthyWithinSLO      float64     `json:"healthy_within_slo"`       // fraction in [0, 1]
	SLOS                  float64     `json:"slo_s"`

	DeadLetterReasons map[string]int64 `json:"dead_letter_reasons"`
	// Duplicates is null when it could not be measured: attempts that
	// cannot be tied to a delivery may be duplicates.
	Duplicates *int64 `json:"duplicates"`
	// LostAcks counts successes a partner recorded and then dropped the
	// answer of on purpose (the lost-ack fault): each may cause one
	// duplicate.
	LostAcks int64 `json:"lost_acks"`

	BreakerTransitions []BreakerTransition `json:"breaker_transitions"`

	// RetryAfterIgnored counts Retry-After values that were negative,
	// unparseable or absurd and so were not trusted.
	RetryAfterIgnored int64 `json:"retry_after_ignored"`

	// Source back-pressure (on_full = "block"): how long arrivals were held.
	SourceHeldBackS    float64 `json:"source_held_back_s"`
	SourceHeldBackMaxS float64 `json:"source_held_back_max_s"`

	PeakAttemptsPerS float64 `json:"peak_attempts_per_s"`
	PeakPending      int64   `json:"peak_pending"`

	Cohorts []Cohort `json:"cohorts"`

	// Every mode writes every key: lateness is null where the harness
	// injects nothing on a wall clock (simulation), and the lists are
	// empty where nothing happened.
	Lateness *Percentiles `json:"lateness_s"`
	Alerts   []Alert      `json:"alerts"`
	Restarts []Restart    `json:"restarts"`

	// Actions are the drill's scripted operator actions as carried out, and
	// Replays what each dlq-replay action did; empty lists when the drill
	// has none.
	Actions []ActionRecord `json:"actions"`
	Replays []Replay       `json:"replays"`

	// External runs only: what the partners saw of somebody else's system.
	External *External `json:"external,omitempty"`

	// Findings are what the harness saw go wrong outside the policy under
	// test (see Finding); an empty list when nothing did.
	Findings []Finding `json:"findings"`

	Gates []GateResult `json:"gates"`

	// Tolerances are the --fail-on rules checked against Baseline (a run
	// directory or summary.json), when the run was compared with one.
	Baseline   string            `json:"baseline,omitempty"`
	Tolerances []ToleranceResult `json:"tolerances,omitempty"`

	// Failures lists, in words, every condition that failed the run: gates,
	// tolerances, other seeds' gates, a broken accounting identity. Pass is
	// true exactly when it is empty (see Judge).
	Failures []string `json:"failures,omitempty"`

	// Seeds holds the per-seed figures and their mean and 95% confidence
	// interval when the drill was run over several seeds (run --seeds N);
	// the rest of the summary is the first seed's run.
	Seeds *SeedStats `json:"seeds,omitempty"`
}

// Deliveries is the accounting identity: created = delivered + dead_lettered
// + pending + lost, and lost must be 0. Refused deliveries (external runs:
// their event's ingest refused it for good and no partner ever saw them)
// were never taken by the system, so they stand beside the identity, not
// in created.
type Deliveries struct {
	Created      int64 `json:"created"`
	Delivered    int64 `json:"delivered"`
	DeadLettered int64 `json:"dead_lettered"`
	Pending      int64 `json:"pending"`
	Lost         int64 `json:"lost"`
	Refused      int64 `json:"refused"`
}

// Offered is the load the drill's source offers, read off the drill: its
// mean event rate, the mean number of subscribers an event goes to
// (source.fanout) and their product, the deliveries per second.
type Offered struct {
	EventsPerS     float64 `json:"events_per_s"`
	FanoutMean     float64 `json:"fanout_mean"`
	DeliveriesPerS float64 `json:"deliveries_per_s"`
	Fanout         string  `json:"fanout"` // e.g. "one of 500 subscribers"
}

// Attempts counts calls to partners.
type Attempts struct {
	Total   int64 `json:"total"`
	First   int64 `json:"first"`
	Retries int64 `json:"retries"`
	// ByOrdinal[i] is how many attempts were the (i+1)-th for their delivery.
	ByOrdinal []int64 `json:"by_ordinal"`
}

// Percentiles of a latency distribution, in seconds.
type Percentiles struct {
	Count int64   `json:"count"`
	P50   float64 `json:"p50"`
	P90   float64 `json:"p90"`
	P99   float64 `json:"p99"`
	P999  float64 `json:"p999"`
	Max   float64 `json:"max"`
}

// Outage is one scripted fault window and how long its backlog took to drain.
type Outage struct {
	Partner    string   `json:"partner"`
	Kind       string   `json:"kind"`
	StartS     float64  `json:"start_s"`
	EndS       float64  `json:"end_s"`
	DrainTimeS *float64 `json:"drain_time_s"` // nil: not drained before the drill ended
	// Manual is an outage switched on through the partner server's control
	// API during a live run rather than scripted in the drill.
	Manual bool `json:"manual,omitempty"`
	// RetrySpread is how the retries of deliveries that failed together
	// during the outage spread out; null when no two did.
	RetrySpread *RetrySpread `json:"retry_spread"`
	// Retries counts retries to the outage's subscribers from its start
	// until it drained (until the run ended, when it did not); DeadLetters
	// the dead letters of deliveries to them created before its end. Null
	// when not measured.
	Retries     *int64 `json:"retries"`
	DeadLetters *int64 `json:"dead_letters"`
}

// RetrySpread measures the herd: deliveries to an outage's subscribers
// whose k-th attempt failed within the same window of WindowS seconds form
// a group; a group's spread is (longest − shortest delay they were given
// before attempt k+1) ÷ the scheduled delay for attempt k+1 (the capped
// delay before jitter). P50 and Max are over the groups of at least two.
type RetrySpread struct {
	WindowS    float64 `json:"window_s"`
	Groups     int64   `json:"groups"`
	Deliveries int64   `json:"deliveries"` // in those groups
	P50        float64 `json:"p50"`
	Max        float64 `json:"max"`
}

// ActionRecord is one scripted operator action as carried out: its kind,
// when, and what it did in words.
type ActionRecord struct {
	Kind   string  `json:"kind"`
	AtS    float64 `json:"at_s"`
	Detail string  `json:"detail"`
}

// Replay is what one dlq-replay action did and what it cost.
type Replay struct {
	Action   int     `json:"action"` // 1-based index into actions
	AtS      float64 `json:"at_s"`
	Reason   string  `json:"reason"` // "" = any
	Cohort   string  `json:"cohort"` // "" = any
	Batch    int     `json:"batch"`
	RatePerS float64 `json:"rate_per_s"` // batches per second; 0 = no pause
	// Matched is how many dead letters matched when it started; Replayed
	// how many it moved back, in Batches batches, the last at LastBatchS.
	Matched    int64   `json:"matched"`
	Replayed   int64   `json:"replayed"`
	Batches    int64   `json:"batches"`
	LastBatchS float64 `json:"last_batch_s"`
	// Attempts the replayed deliveries made after their replay, and
	// attempts ÷ replayed.
	Attempts      int64   `json:"attempts"`
	Amplification float64 `json:"amplification"`
	// How the replayed deliveries ended: delivered, dead-lettered again,
	// still pending at the drill's end.
	Delivered    int64 `json:"delivered"`
	DeadLettered int64 `json:"dead_lettered"`
	Pending      int64 `json:"pending"`
	// DrainTimeS: from the replay's start until its last replayed delivery
	// was delivered or dead-lettered again; null if one is still pending.
	DrainTimeS *float64 `json:"drain_time_s"`
	// The load on the replayed cohorts (every cohort when the replay
	// names none): attempts/s during the drain, in the equally long window
	// just before the replay started, and the busiest sample interval's
	// rate during the drain.
	LoadDuringPerS float64 `json:"load_during_per_s"`
	LoadBeforePerS float64 `json:"load_before_per_s"`
	LoadPeakPerS   float64 `json:"load_peak_per_s"`
	// HealthyLatencyS: healthy-subscriber latency of the deliveries
	// delivered during the replay's drain.
	HealthyLatencyS Percentiles `json:"healthy_latency_s"`
	// Audit is one record per batch: when, and how many it moved.
	Audit []ReplayBatch `json:"audit"`
}

// ReplayBatch is the audit record of one replay batch.
type ReplayBatch struct {
	Batch int     `json:"batch"`
	AtS   float64 `json:"at_s"`
	Count int64   `json:"count"`
	Who   string  `json:"who"`
}

// BreakerTransition is one change of a partner's circuit breaker.
type BreakerTransition struct {
	Partner string  `json:"partner"`
	AtS     float64 `json:"at_s"`
	From    string  `json:"from"`
	To      string  `json:"to"`
}

// Cohort is the per-partner-cohort breakdown.
type Cohort struct {
	Name          string           `json:"name"`
	Subscribers   int              `json:"subscribers"`
	Faulty        bool             `json:"faulty"` // has a scripted fault
	Deliveries    int64            `json:"deliveries"`
	Delivered     int64            `json:"delivered"`
	DeadLettered  int64            `json:"dead_lettered"`
	Pending       int64            `json:"pending"`
	Attempts      int64            `json:"attempts"`
	Amplification *float64         `json:"amplification"` // null: not measured (see Summary.Amplification)
	LatencyS      Percentiles      `json:"latency_s"`
	DeadLetters   map[string]int64 `json:"dead_letters,omitempty"`
	// StatusCodes counts the attempts' outcomes as the partner answered
	// them: HTTP status codes ("200", "503", "429") and "timeout",
	// "reset" or "refused" for attempts that got no answer.
	StatusCodes map[string]int64 `json:"status_codes,omitempty"`
	// OldestAgeMaxS is the largest age of the cohort's oldest waiting
	// delivery (ready or delayed) over the samples; null when not measured
	// (live mode: the store has no per-partner oldest age), written either
	// way so that every mode writes the same keys.
	OldestAgeMaxS *float64 `json:"oldest_age_max_s"`
}

// Alert is one DLQ alert as the alert sink received it (live mode).
type Alert struct {
	AtS     float64 `json:"at_s"`
	Partner string  `json:"partner"`
	Reason  string  `json:"reason"`
	Count   int64   `json:"count"`
}

// Restart is one dispatcher restart fault carried out (live mode) or
// simulated.
type Restart struct {
	AtS      float64 `json:"at_s"`
	DownS    float64 `json:"down_s"`
	Graceful bool    `json:"graceful"`
	InFlight int64   `json:"in_flight"` // attempts in flight when it went down
}

// GateResult is one gate and its verdict.
type GateResult struct {
	Expr  string  `json:"expr"`
	Value float64 `json:"value"`
	// Display is the measured value formatted in the gate's unit ("12.3s",
	// "99.2%", "not drained").
	Display string `json:"display"`
	Pass    bool   `json:"pass"`
}
