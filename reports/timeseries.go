package reports

// Sample is one row of timeseries.csv: the state at T (seconds since the
// drill started) and the rates over the interval that ends at T.
type Sample struct {
	T                    float64 `csv:"t_s"`
	FirstAttemptsPerS    float64 `csv:"first_attempts_per_s"`
	RetriesPerS          float64 `csv:"retries_per_s"`
	SuccessesPerS        float64 `csv:"successes_per_s"`
	TransientPerS        float64 `csv:"failures_transient_per_s"` // 5xx, 429, 408
	TimeoutPerS          float64 `csv:"failures_timeout_per_s"`
	ResetPerS            float64 `csv:"failures_reset_per_s"` // refused or reset
	PermanentPerS        float64 `csv:"failures_permanent_per_s"`
	Ready                float64 `csv:"ready"`
	Delayed              float64 `csv:"delayed"`
	InFlight             float64 `csv:"in_flight"`
	OldestReadyAgeS      float64 `csv:"oldest_ready_age_s"`
	OldestDelayedAgeS    float64 `csv:"oldest_delayed_age_s"`
	DLQPerS              float64 `csv:"dlq_per_s"`
	SourceHeldBack       float64 `csv:"source_held_back"`      // arrivals waiting for queue room
	Amplification        float64 `csv:"amplification"`         // attempts/s ÷ first attempts/s in this interval (0 when no first attempts)
	RunningAmplification float64 `csv:"running_amplification"` // overall figure so far
	// Healthy-subscriber latency of the deliveries that succeeded in this
	// interval (0 when none did).
	HealthyLatencyP50S float64 `csv:"healthy_latency_p50_s"`
	HealthyLatencyP99S float64 `csv:"healthy_latency_p99_s"`
	// CohortAmplification and CohortOldestAgeS hold, per
	// Timeseries.Cohorts entry, the cohort's attempts/s ÷ first attempts/s
	// in this interval (NaN when it made no first attempt: plots leave a
	// gap, the CSV an empty cell) and the age of its oldest waiting
	// delivery.
	CohortAmplification []float64 `csv:"-"`
	CohortOldestAgeS    []float64 `csv:"-"`
	// CohortFirstAttemptsPerS and CohortRetriesPerS hold, per
	// Timeseries.Cohorts entry, the cohort's first attempts and retries
	// per second in this interval: a faulty partner's retries drawn on
	// their own, where the pipeline's totals would bury them.
	CohortFirstAttemptsPerS []float64 `csv:"-"`
	CohortRetriesPerS       []float64 `csv:"-"`
	// DLQByReason holds dead letters in this interval, by Timeseries.Reasons.
	DLQByReason []float64 `csv:"-"`
	// Breaker holds the state of each Timeseries.BreakerPartners entry:
	// 0 closed, 1 half-open, 2 open.
	Breaker []float64 `csv:"-"`
}

// Timeseries is the sampled series of a run.
type Timeseries struct {
	IntervalS       float64
	Reasons         []string // dead-letter reasons, the DLQByReason columns
	BreakerPartners []string // partners with a scripted fault, the Breaker columns
	Cohorts         []string // cohorts of the CohortAmplification and CohortOldestAgeS columns
	Samples         []Sample
}
