package dispatcher

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/stormdrill/stormdrill/model"
	"github.com/stormdrill/stormdrill/model/dispatchcore"
)

// Metrics is a dispatcher's Prometheus instrumentation (Config.Metrics).
// Times are drill time, as everything the dispatcher stores. Labels are
// bounded: partner is a Config.Partners entry (a cohort), except for the
// per-endpoint breaker and budget gauges; outcome is an HTTP status or a
// transport error kind; reason one of model.Reasons.
//
//	stormdrill_dispatcher_attempts_total{partner, outcome}
//	stormdrill_dispatcher_first_attempts_total{partner}
//	stormdrill_dispatcher_delivery_latency_seconds{partner}   histogram: created → delivered
//	stormdrill_dispatcher_attempt_duration_seconds{partner}   histogram
//	stormdrill_dispatcher_deliveries_total{state, reason}     delivered, dead_lettered
//	stormdrill_dispatcher_queue_deliveries{state}             ready, delayed, in_flight
//	stormdrill_dispatcher_oldest_age_seconds{state}           ready, delayed
//	stormdrill_dispatcher_breaker_state{endpoint}             0 closed, 1 half-open, 2 open
//	stormdrill_dispatcher_budget_tokens{endpoint}
//
// The queue figures are this dispatcher's view: what it holds in memory.
type Metrics struct {
	attempts   *prometheus.CounterVec
	first      *prometheus.CounterVec
	delivery   *prometheus.HistogramVec
	latency    *prometheus.HistogramVec
	deliveries *prometheus.CounterVec
	depth      *prometheus.GaugeVec
	oldest     *prometheus.GaugeVec
	breaker    *prometheus.GaugeVec
	tokens     *prometheus.GaugeVec
}

// metricsEvery bounds how often the loop walks the core for the gauges
// (wall time): the walk costs O(held).
const metricsEvery = 250 * time.Millisecond

// NewMetrics registers a dispatcher's metrics with reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "stormdrill_dispatcher_attempts_total",
			Help: "Attempts that ended, by partner and outcome (HTTP status, or timeout, reset, refused)."}, []string{"partner", "outcome"}),
		first: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "stormdrill_dispatcher_first_attempts_total",
			Help: "First attempts of deliveries that ended, by partner: attempts_total over this is the retry amplification."}, []string{"partner"}),
		delivery: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "stormdrill_dispatcher_delivery_latency_seconds",
			Help:    "Delivery latency in drill seconds, from the event's creation to the successful attempt's end, by partner.",
			Buckets: prometheus.ExponentialBuckets(0.01, 2, 20)}, []string{"partner"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "stormdrill_dispatcher_attempt_duration_seconds",
			Help:    "Attempt duration in drill seconds, from sending to the answer or error, by partner.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 16)}, []string{"partner"}),
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "stormdrill_dispatcher_deliveries_total",
			Help: "Deliveries this dispatcher brought to a terminal state: delivered, or dead_lettered with its reason."}, []string{"state", "reason"}),
		depth: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "stormdrill_dispatcher_queue_deliveries",
			Help: "Deliveries this dispatcher holds: ready (due, waiting for a worker), delayed (backoff or open breaker), in_flight."}, []string{"state"}),
		oldest: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "stormdrill_dispatcher_oldest_age_seconds",
			Help: "Age (now - created, drill seconds) of the oldest ready and the oldest delayed delivery held; 0 if none."}, []string{"state"}),
		breaker: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "stormdrill_dispatcher_breaker_state",
			Help: "Circuit breaker state per endpoint: 0 closed, 1 half-open, 2 open."}, []string{"endpoint"}),
		tokens: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "stormdrill_dispatcher_budget_tokens",
			Help: "Retry-budget tokens left per endpoint."}, []string{"endpoint"}),
	}
	for _, c := range []prometheus.Collector{m.attempts, m.first, m.delivery, m.latency, m.deliveries, m.depth, m.oldest, m.breaker, m.tokens} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// outcomeLabel names an attempt's outcome.
func outcomeLabel(o model.Outcome) string {
	if o.Err != model.ErrNone {
		return o.Err.String()
	}
	return strconv.Itoa(o.Status)
}

func (m *Metrics) attempt(partner string, ordinal int, o model.Outcome, took time.Duration) {
	if m == nil {
		return
	}
	m.attempts.WithLabelValues(partner, outcomeLabel(o)).Inc()
	if ordinal == 1 {
		m.first.WithLabelValues(partner).Inc()
	}
	m.latency.WithLabelValues(partner).Observe(max(took, 0).Seconds())
}

func (m *Metrics) delivered(partner string, latency time.Duration) {
	if m != nil {
		m.deliveries.WithLabelValues("delivered", "").Inc()
		m.delivery.WithLabelValues(partner).Observe(max(latency, 0).Seconds())
	}
}

func (m *Metrics) deadLettered(reason model.Reason) {
	if m != nil {
		m.deliveries.WithLabelValues("dead_lettered", string(reason)).Inc()
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
	m.oldest.WithLabelValues("ready").Set(st.OldestReadyAge.Seconds())
	m.oldest.WithLabelValues("delayed").Set(st.OldestDelayedAge.Seconds())
	for i, ep := range eps {
		if b := core.Breaker(i); b != nil {
			v := 0.0
			switch b.State(now) {
			case model.StateHalfOpen:
				v = 1
			case model.StateOpen:
				v = 2
			}
			m.breaker.WithLabelValues(ep.name).Set(v)
		}
		if b := core.Budget(i); b != nil {
			m.tokens.WithLabelValues(ep.name).Set(b.Tokens())
		}
	}
}
