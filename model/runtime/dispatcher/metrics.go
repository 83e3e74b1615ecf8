package dispatcher

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/stormdrill/stormdrill/model"
	"github.com/stormdrill/stormdrill/model/dispatchcore"
)

// Metrics is a dispatcher's Prometheus instrumentation (Config.Metrics).
// Times are real (wall-clock) seconds, whatever the drill's speed. Labels
// are bounded and never empty: partner is a Config.Partners entry (a
// cohort, never one of its endpoints); status an HTTP status or a
// transport error kind, as on the partner server; reason one of
// model.Reasons; state a fixed set.
//
//	stormdrill_dispatcher_attempts_total{partner, status}       attempts that ended
//	stormdrill_dispatcher_first_attempts_total{partner}         first attempts, counted as they start
//	stormdrill_dispatcher_delivery_latency_seconds{partner}     histogram: created → delivered
//	stormdrill_dispatcher_attempt_duration_seconds{partner}     histogram
//	stormdrill_dispatcher_delivered_total{partner}
//	stormdrill_dispatcher_dead_lettered_total{partner, reason}
//	stormdrill_dispatcher_queue_deliveries{state}               ready, delayed, in_flight
//	stormdrill_dispatcher_oldest_age_seconds{state}             ready, delayed
//	stormdrill_dispatcher_breakers{partner, state}              endpoints closed, half_open, open
//	stormdrill_dispatcher_budget_tokens{partner}                fewest tokens left on an endpoint
//
// The queue figures are this dispatcher's view: what it holds in memory.
type Metrics struct {
	attempts     *prometheus.CounterVec
	first        *prometheus.CounterVec
	delivery     *prometheus.HistogramVec
	latency      *prometheus.HistogramVec
	delivered    *prometheus.CounterVec
	deadLettered *prometheus.CounterVec
	depth        *prometheus.GaugeVec
	oldest       *prometheus.GaugeVec
	breakers     *prometheus.GaugeVec
	tokens       *prometheus.GaugeVec

	// Set by Run (bind): drill durations to wall ones, cohort names.
	clock    Clock
	partners []string
}

// metricsEvery bounds how often the loop walks the core for the gauges
// (wall time): the walk costs O(held).
const metricsEvery = 250 * time.Millisecond

// breakerStates are the breaker gauge's state label values.
var breakerStates = [...]struct {
	state model.BreakerState
	label string
}{{model.StateClosed, "closed"}, {model.StateHalfOpen, "half_open"}, {model.StateOpen, "open"}}

// NewMetrics registers a dispatcher's metrics with reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "stormdrill_dispatcher_attempts_total",
			Help: "Attempts that ended, by partner and status (the HTTP status, or timeout, reset, refused)."}, []string{"partner", "status"}),
		first: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "stormdrill_dispatcher_first_attempts_total",
			Help: "First attempts, counted as they start, by partner: attempts_total over this, over one window, is the retry amplification."}, []string{"partner"}),
		delivery: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "stormdrill_dispatcher_delivery_latency_seconds",
			Help:    "Delivery latency in seconds, from the event's creation to the successful attempt's end, by partner.",
			Buckets: prometheus.ExponentialBuckets(0.01, 2, 20)}, []string{"partner"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "stormdrill_dispatcher_attempt_duration_seconds",
			Help:    "Attempt duration in seconds, from sending to the answer or error, by partner.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 16)}, []string{"partner"}),
		delivered: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "stormdrill_dispatcher_delivered_total",
			Help: "Deliveries this dispatcher delivered, by partner."}, []string{"partner"}),
		deadLettered: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "stormdrill_dispatcher_dead_lettered_total",
			Help: "Deliveries this dispatcher dead-lettered, by partner and reason."}, []string{"partner", "reason"}),
		depth: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "stormdrill_dispatcher_queue_deliveries",
			Help: "Deliveries this dispatcher holds: ready (due, waiting for a worker), delayed (backoff or open breaker), in_flight."}, []string{"state"}),
		oldest: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "stormdrill_dispatcher_oldest_age_seconds",
			Help: "Age in seconds of the oldest ready and the oldest delayed delivery held; 0 if none."}, []string{"state"}),
		breakers: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "stormdrill_dispatcher_breakers",
			Help: "Endpoints of each partner whose circuit breaker is in this state: closed, half_open, open."}, []string{"partner", "state"}),
		tokens: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "stormdrill_dispatcher_budget_tokens",
			Help: "Retry-budget tokens left on the partner's most depleted endpoint."}, []string{"partner"}),
	}
	for _, c := range []prometheus.Collector{m.attempts, m.first, m.delivery, m.latency, m.delivered, m.deadLettered, m.depth, m.oldest, m.breakers, m.tokens} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// bind gives m the run's clock and partner names.
func (m *Metrics) bind(cfg *Config) {
	if m == nil {
		return
	}
	m.clock = cfg.Clock
	m.partners = make([]string, len(cfg.Partners))
	for i, p := range cfg.Partners {
		m.partners[i] = p.Name
	}
}

// seconds is a drill duration in wall seconds.
func (m *Metrics) seconds(d time.Duration) float64 { return m.clock.Wall(max(d, 0)).Seconds() }

// statusLabel names an attempt's outcome.
func statusLabel(o model.Outcome) string {
	if o.Err != model.ErrNone {
		return o.Err.String()
	}
	return strconv.Itoa(o.Status)
}

// started counts an attempt as it starts.
func (m *Metrics) started(partner string, ordinal int) {
	if m != nil && ordinal == 1 {
		m.first.WithLabelValues(partner).Inc()
	}
}

func (m *Metrics) attempt(partner string, o model.Outcome, took time.Duration) {
	if m == nil {
		return
	}
	m.attempts.WithLabelValues(partner, statusLabel(o)).Inc()
	m.latency.WithLabelValues(partner).Observe(m.seconds(took))
}

func (m *Metrics) deliveredOne(partner string, latency time.Duration) {
	if m != nil {
		m.delivered.WithLabelValues(partner).Inc()
		m.delivery.WithLabelValues(partner).Observe(m.seconds(latency))
	}
}

func (m *Metrics) deadLetteredOne(partner string, reason model.Reason) {
	if m != nil {
		m.deadLettered.WithLabelValues(partner, string(reason)).Inc()
	}
}

// observe sets the gauges from the core; the loop calls it.
func (m *Metrics) observe(core *dispatchcore.Core, eps []endpoint, now time.Time) {
	if m == nil {
		return
	}
	st := core.Snapshot(now)
	m.depth.WithLabelValues("ready").Set(float64(st.Ready))
	m.depth.WithLabelValues("delayed").Set(float64(st.Delayed))
	m.depth.WithLabelValues("in_flight").Set(float64(st.InFlight))
	m.oldest.WithLabelValues("ready").Set(m.seconds(st.OldestReadyAge))
	m.oldest.WithLabelValues("delayed").Set(m.seconds(st.OldestDelayedAge))
	counts := make([][len(breakerStates)]int, len(m.partners))
	hasBreaker := make([]bool, len(m.partners))
	fewest := make([]float64, len(m.partners))
	hasBudget := make([]bool, len(m.partners))
	for i, ep := range eps {
		g := ep.group
		if g < 0 || g >= len(m.partners) {
			continue
		}
		if b := core.Breaker(i); b != nil {
			hasBreaker[g] = true
			s := b.State(now)
			for k, bs := range breakerStates {
				if bs.state == s {
					counts[g][k]++
				}
			}
		}
		if b := core.Budget(i); b != nil {
			if t := b.Tokens(); !hasBudget[g] || t < fewest[g] {
				fewest[g] = t
			}
			hasBudget[g] = true
		}
	}
	for g, name := range m.partners {
		if hasBreaker[g] {
			for k, bs := range breakerStates {
				m.breakers.WithLabelValues(name, bs.label).Set(float64(counts[g][k]))
			}
		}
		if hasBudget[g] {
			m.tokens.WithLabelValues(name).Set(fewest[g])
		}
	}
}
