package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/stormdrill/stormdrill/model/runtime/queue/queuetest"
	"github.com/stormdrill/stormdrill/reports"
)

// pgThreeDrill: 20 s of drill at speed 20 (about 2 s of wall time with the
// drain, which ends once nothing is pending), five subscribers (one with
// transient errors, so there are retries to hand between processes), three
// dispatcher processes on one queue, and process 2 killed at 8 s.
const pgThreeDrill = `
name = "pg-three"
mode = "live"
seed = 3
speed = 20
duration = "20s"
drain = "5m"
sample_interval = "1s"
gates = ["lost == 0", "pending == 0", "dlq.max-attempts == 0"]
[source]
arrival = "poisson"
rate = "3/s"
[[partners]]
name = "ok"
count = 4
latency = { dist = "lognormal", p50 = "40ms", p99 = "200ms" }
[[partners]]
name = "flaky"
count = 1
transient_errors = 0.3
latency = { dist = "lognormal", p50 = "40ms", p99 = "200ms" }
[policy.retry]
max_attempts = 20
base = "200ms"
cap = "1s"
[dispatcher]
processes = 3
workers = 8
claim_batch = 16
attempt_timeout = "5s"
lease_timeout = "20s"
[[faults]]
kind = "restart"
process = 2
at = "8s"
down = "2s"
`

// TestLiveOnPostgresWithThreeDispatchers runs `stormdrill run` on a live
// drill with a PostgreSQL store (--store) and three dispatcher processes,
// one of them killed: every gate holds, nothing is lost, and the partner
// server saw no two attempts of one delivery in flight at once (the run
// checks every attempt and fails with exit 3 if it did).
func TestLiveOnPostgresWithThreeDispatchers(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a live drill")
	}
	if raceEnabled {
		t.Skip("a timed live drill; make test runs it without -race")
	}
	dsn := queuetest.PostgresSchema(t, "cli")
	dir := t.TempDir()
	file := filepath.Join(dir, "pg-three.toml")
	if err := os.WriteFile(file, []byte(pgThreeDrill), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	code, stdout, stderr := stormdrill(t, "run", file, "--store", dsn, "--out", out, "--quiet")
	log, _ := os.ReadFile(filepath.Join(out, "dispatch.log"))
	s, err := reports.ReadSummary(out)
	if code != exitOK {
		var failed []string
		if err == nil {
			for _, g := range s.Gates {
				if !g.Pass {
					failed = append(failed, g.Expr+" (measured "+g.Display+")")
				}
			}
		}
		t.Fatalf("exit %d, failed gates %v\nstdout: %s\nstderr: %s\ndispatch.log (tail): %s", code, failed, stdout, stderr, tail(string(log), 3000))
	}
	if err != nil {
		t.Fatal(err)
	}
	if s.Deliveries.Lost != 0 || s.Deliveries.Pending != 0 || s.Deliveries.Created == 0 || s.Attempts.Retries == 0 {
		t.Errorf("deliveries %+v, %d retries: want all terminal, none lost, some retries", s.Deliveries, s.Attempts.Retries)
	}
	if len(s.Restarts) != 1 || s.Restarts[0].Graceful {
		t.Errorf("restarts %+v: want one kill", s.Restarts)
	}
	md, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	// The report names the store and the processes, and how many attempts
	// the overlap check saw.
	if !regexp.MustCompile(`store postgres://[^ ]*, 3 dispatcher process`).Match(md) {
		t.Errorf("report.md does not name the PostgreSQL store and 3 processes")
	}
	m := regexp.MustCompile(`(\d+) attempts with a delivery id; 0 arrived while another attempt of the same delivery was in flight`).FindSubmatch(md)
	if m == nil {
		t.Fatalf("report.md does not show the overlap check")
	}
	if n, _ := strconv.ParseInt(string(m[1]), 10, 64); n != s.Attempts.Total {
		t.Errorf("overlap check saw %d attempts, the summary counts %d", n, s.Attempts.Total)
	}
	// Several processes shared the queue: at least two that ran to the end
	// (a killed one writes no final line) acknowledged deliveries, and
	// none acknowledged more than were delivered.
	var acked int64
	working := 0
	for _, m := range regexp.MustCompile(`dispatch dispatch-\d+: claimed \d+, attempts \d+, acked (\d+)`).FindAllSubmatch(log, -1) {
		n, _ := strconv.ParseInt(string(m[1]), 10, 64)
		acked += n
		if n > 0 {
			working++
		}
	}
	if working < 2 || acked > s.Deliveries.Delivered {
		t.Errorf("processes that ran to the end acknowledged %d of %d deliveries (%d of them any): want two or more processes at work",
			acked, s.Deliveries.Delivered, working)
	}
}
