package live

import (
	"strings"
	"testing"
)

// fullDrill: 20 events/s fan out to two subscribers (40 deliveries/s),
// but two workers against 200ms answers deliver about 10/s, and the
// queue holds 12: the store fills within a second.
const fullDrill = `
name = "full"
mode = "live"
seed = 8
speed = 5
duration = "3s"
drain = "30s"
sample_interval = "250ms"
[source]
arrival = "constant"
rate = "20/s"
[[partners]]
name = "slow"
count = 2
latency = { dist = "constant", value = "200ms" }
[policy.retry]
max_attempts = 3
base = "1s"
cap = "1s"
jitter = "none"
[dispatcher]
workers = 2
attempt_timeout = "2s"
lease_timeout = "30s"
queue_capacity = 12
on_full = "ON_FULL"
`

// TestQueueCapacityBlocksOrRejects: live honours queue_capacity and
// on_full as the simulation does. The store never holds more than the
// capacity of non-terminal deliveries; "block" holds the source back
// (reported, and counted in latency, which runs from the scheduled
// arrival) and "reject" dead-letters the overflow as queue-full. Nothing
// is lost either way.
func TestQueueCapacityBlocksOrRejects(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a live drill")
	}
	const capacity, created = 12, 120 // 3s × 20/s × 2 subscribers
	cases := []struct {
		onFull string
		block  bool
	}{
		{"block", true},   // back-pressure: every delivery made, later
		{"reject", false}, // overflow dead-lettered at arrival
	}
	for _, tc := range cases {
		t.Run(tc.onFull, func(t *testing.T) {
			d := parseDrill(t, strings.Replace(fullDrill, "ON_FULL", tc.onFull, 1))
			run, err := Run(d, t.TempDir(), Options{Executable: testExecutable(t), Log: logWriter{t}})
			if err != nil {
				t.Fatal(err)
			}
			s := run.Summary
			dl := s.Deliveries
			if dl.Lost != 0 || dl.Pending != 0 || dl.Created != created || dl.Delivered+dl.DeadLettered != created {
				t.Fatalf("deliveries %+v: want %d created, each delivered or dead-lettered, none lost", dl, created)
			}
			if s.PeakPending > capacity {
				t.Errorf("peak pending %d: the store held more than queue_capacity %d", s.PeakPending, capacity)
			}
			var heldSeries float64
			for _, smp := range run.Timeseries.Samples {
				heldSeries = max(heldSeries, smp.SourceHeldBack)
			}
			full := s.DeadLetterReasons["queue-full"]
			if tc.block {
				if s.SourceHeldBackS <= 0 || s.SourceHeldBackMaxS <= 0 || heldSeries <= 0 {
					t.Errorf("source held back %.2fs (max %.2fs, series max %v): want > 0", s.SourceHeldBackS, s.SourceHeldBackMaxS, heldSeries)
				}
				if full != 0 || dl.Delivered != created {
					t.Errorf("%d queue-full dead letters, %d delivered: block must deliver all %d", full, dl.Delivered, created)
				}
				// No coordinated omission: a held delivery's latency runs
				// from its scheduled arrival, so it includes the hold.
				if s.HealthyLatencyS.Max < s.SourceHeldBackMaxS {
					t.Errorf("latency max %.2fs < longest hold %.2fs: latency must include the hold", s.HealthyLatencyS.Max, s.SourceHeldBackMaxS)
				}
			} else {
				if full == 0 || full != dl.DeadLettered {
					t.Errorf("dead letters %v of %d: want the overflow dead-lettered as queue-full", s.DeadLetterReasons, dl.DeadLettered)
				}
				if s.SourceHeldBackS != 0 || heldSeries != 0 {
					t.Errorf("source held back %.2fs (series max %v) with on_full = reject", s.SourceHeldBackS, heldSeries)
				}
			}
			t.Logf("%s: %+v; queue-full %d; held back %.2fs total, %.2fs max, series max %v; peak pending %d; latency max %.2fs",
				tc.onFull, dl, full, s.SourceHeldBackS, s.SourceHeldBackMaxS, heldSeries, s.PeakPending, s.HealthyLatencyS.Max)
		})
	}
}
