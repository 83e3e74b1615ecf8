package dispatcher

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"

	"github.com/stormdrill/stormdrill/internal/testsuite"
	"github.com/stormdrill/stormdrill/model"
	"github.com/stormdrill/stormdrill/model/runtime/queue"
)

// TestMetricsCountWhatTheDispatcherDid runs a dispatcher against a partner
// that accepts even deliveries and refuses odd ones for good (422), and
// checks the counters against the dispatcher's own stats and the store.
func TestMetricsCountWhatTheDispatcherDid(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get(HeaderIdempotencyKey)
		n, _ := strconv.Atoi(strings.TrimPrefix(id, "d-"))
		if n%2 == 1 {
			w.WriteHeader(http.StatusUnprocessableEntity)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	const n = 40
	st, reg, cfg := metricsSetup(t, n)
	// The breaker counts every failure by default, 4xx included, and the
	// workers record their 422s in whatever order the scheduler finishes
	// them: five in a row opened it for its 30 s cooldown on a loaded
	// machine. It counts all but 4xx here, so that it stays closed whatever
	// the order, and the gauge of a breaker that recorded (and ignored)
	// failures is still checked.
	pol := model.DefaultPolicySettings()
	pol.Breaker.Trip, pol.Breaker.Count = model.TripConsecutive.String(), (model.CountAll &^ model.Count4xx).Names()
	cfg.Partners = []Partner{{Name: "acme", URL: srv.URL, Policy: pol}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan Stats, 1)
	go func() {
		stats, err := Run(ctx, cfg)
		if err != nil {
			t.Error(err)
		}
		done <- stats
	}()
	testsuite.WaitFor(t, "every delivery delivered or dead-lettered", time.Minute, func() bool {
		c, err := st.Counts(context.Background(), time.Now())
		return err == nil && c.Delivered+c.Dead == n
	})
	cancel()
	stats := <-done // the gauges are final once Run has returned

	got := gather(t, reg)
	want := map[string]float64{
		"stormdrill_dispatcher_attempts_total,partner=acme,status=200":            n / 2,
		"stormdrill_dispatcher_attempts_total,partner=acme,status=422":            n / 2,
		"stormdrill_dispatcher_attempt_duration_seconds,partner=acme":             n,
		"stormdrill_dispatcher_first_attempts_total,partner=acme":                 n,
		"stormdrill_dispatcher_delivery_latency_seconds,partner=acme":             n / 2,
		"stormdrill_dispatcher_delivered_total,partner=acme":                      float64(stats.Acked),
		"stormdrill_dispatcher_dead_lettered_total,partner=acme,reason=permanent": float64(stats.DeadLettered),
		"stormdrill_dispatcher_queue_deliveries,state=ready":                      0,
		"stormdrill_dispatcher_queue_deliveries,state=in_flight":                  0,
		"stormdrill_dispatcher_breakers,partner=acme,state=closed":                1,
		"stormdrill_dispatcher_breakers,partner=acme,state=open":                  0,
		"stormdrill_dispatcher_breakers,partner=acme,state=half_open":             0,
	}
	if problems, err := lintRegistry(reg); err != nil || len(problems) > 0 {
		t.Errorf("metric lint: %v %v", err, problems)
	}
	for k := range got {
		// No series carries an empty label.
		if strings.Contains(k, "=,") || strings.HasSuffix(k, "=") {
			t.Errorf("series with an empty label: %s", k)
		}
	}
	if stats.Acked != n/2 || stats.DeadLettered != n/2 || stats.Attempts != n {
		t.Fatalf("stats %+v: want %d acked, %d dead-lettered, %d attempts", stats, n/2, n/2, n)
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s = %v (present %v), want %v", k, g, ok, v)
		}
	}
}

// gather reads every metric of reg: counters and gauges by value,
// histograms by their count, keyed by name and labels.
func gather(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range fams {
		for _, mt := range f.GetMetric() {
			key := f.GetName()
			for _, l := range mt.GetLabel() {
				key += "," + l.GetName() + "=" + l.GetValue()
			}
			switch {
			case mt.Counter != nil:
				got[key] = mt.GetCounter().GetValue()
			case mt.Gauge != nil:
				got[key] = mt.GetGauge().GetValue()
			case mt.Histogram != nil:
				got[key] = float64(mt.GetHistogram().GetSampleCount())
			}
		}
	}
	return got
}

// TestMetricsGaugesStaleAfterLastWalk is the regression test of a flake of
// TestMetricsCountWhatTheDispatcherDid on a busy machine: the test slept
// two gauge walks' worth after the last delivery, and when the loop did not
// walk again in that time the gauges still showed attempts in flight. The
// partner here holds every call until the gauges have seen them in flight;
// the dispatcher is stopped the moment the last delivery is stored, well
// inside one walk's interval, and the gauges must read as it stopped.
func TestMetricsGaugesStaleAfterLastWalk(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-release
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()
	const n = 4
	st, reg, cfg := metricsSetup(t, n)
	cfg.Partners = []Partner{{Name: "acme", URL: srv.URL, Policy: model.DefaultPolicySettings()}}
	stop := startRun(cfg)
	inFlight := "stormdrill_dispatcher_queue_deliveries,state=in_flight"
	testsuite.WaitFor(t, "a gauge walk that sees the attempts in flight", time.Minute, func() bool {
		return gather(t, reg)[inFlight] > 0
	})
	close(release)
	waitDelivered(t, st, n)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if g := gather(t, reg)[inFlight]; g != 0 {
		t.Errorf("%s = %v after the dispatcher stopped with nothing in flight", inFlight, g)
	}
}

// metricsSetup is a memory store holding n deliveries d-0 … d-n-1 to acme,
// due now, and a dispatcher configuration on it whose metrics go to reg.
func metricsSetup(t *testing.T, n int) (*queue.Memory, *prometheus.Registry, Config) {
	t.Helper()
	st := queue.NewMemory()
	t.Cleanup(func() { st.Close() })
	now := time.Now()
	var ds []queue.Delivery
	for i := range n {
		ds = append(ds, queue.Delivery{ID: "d-" + strconv.Itoa(i), Event: "e", Partner: "acme", Cohort: "acme", Created: now, RunAt: now})
	}
	if _, err := st.Enqueue(context.Background(), ds); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	cfg := Defaults()
	cfg.Store, cfg.Owner, cfg.Metrics = st, "t", m
	return st, reg, cfg
}

// TestMetricsAreRealSeconds: at speed 100 a partner that takes 20 ms of
// wall time per answer shows 20 ms attempts, not the 2 s of drill time
// they stand for. The partner's answer moves the dispatcher's wall clock
// by hand instead of sleeping.
func TestMetricsAreRealSeconds(t *testing.T) {
	const hold = 20 * time.Millisecond
	start := time.Now()
	var elapsed atomic.Int64 // wall time since start, ns
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elapsed.Add(int64(hold)) // the partner's latency under test, in wall time
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	const n = 4
	st, reg, cfg := metricsSetup(t, n)
	cfg.Partners = []Partner{{Name: "acme", URL: srv.URL, Policy: model.DefaultPolicySettings()}}
	cfg.Clock = Clock{Start: start, Speed: 100, WallNow: func() time.Time { return start.Add(time.Duration(elapsed.Load())) }}
	stop := startRun(cfg)
	waitDelivered(t, st, n)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != "stormdrill_dispatcher_attempt_duration_seconds" {
			continue
		}
		h := f.GetMetric()[0].GetHistogram()
		mean := h.GetSampleSum() / float64(h.GetSampleCount())
		// Drill seconds would read 100 times the wall time: 2 s and more.
		if mean < hold.Seconds() || mean >= 100*hold.Seconds() {
			t.Errorf("mean attempt duration %.3fs; want wall seconds, at least %v and well under the drill's %v", mean, hold, 100*hold)
		}
		return
	}
	t.Fatal("no attempt duration histogram")
}

// lintRegistry runs Prometheus' metric lint (promtool check metrics) on
// what reg gathers.
func lintRegistry(reg *prometheus.Registry) ([]promlint.Problem, error) {
	fams, err := reg.Gather()
	if err != nil {
		return nil, err
	}
	return promlint.NewWithMetricFamilies(fams).Lint()
}

// startRun runs a dispatcher on cfg; stop cancels it and returns Run's
// error once it has returned (the gauges are final then).
func startRun(cfg Config) (stop func() error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := Run(ctx, cfg)
		done <- err
	}()
	return func() error {
		cancel()
		return <-done
	}
}

// waitDelivered waits until st holds n delivered deliveries.
func waitDelivered(t *testing.T, st *queue.Memory, n int) {
	t.Helper()
	testsuite.WaitFor(t, "every delivery delivered", time.Minute, func() bool {
		c, err := st.Counts(context.Background(), time.Now())
		return err == nil && c.Delivered == int64(n)
	})
}
