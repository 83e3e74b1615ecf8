package live

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/stormdrill/stormdrill/drills"
	"github.com/stormdrill/stormdrill/internal/testsuite"
	"github.com/stormdrill/stormdrill/model/runtime/dispatcher"
	"github.com/stormdrill/stormdrill/model/runtime/queue"
	"github.com/stormdrill/stormdrill/model/runtime/queue/queuetest"
)

// pgSchemaDSN returns a DSN for a fresh schema on the test server, dropped
// at cleanup. Without a server the test skips, except in CI.
func pgSchemaDSN(t *testing.T) string { return queuetest.PostgresSchema(t, "live") }

// multiDrill: two healthy partner cohorts, so every attempt succeeds and
// any delivery sent twice shows up as a partner duplicate. The lease is
// long against 10ms answers, so no lease runs out while its owner works.
const multiDrill = `
name = "multi"
mode = "live"
seed = 5
duration = "10s"
[source]
arrival = "constant"
rate = "1/s"
[[partners]]
name = "ok"
count = 3
latency = { dist = "constant", value = "10ms" }
[[partners]]
name = "also-ok"
count = 2
latency = { dist = "constant", value = "10ms" }
[policy.retry]
max_attempts = 5
base = "1s"
cap = "1s"
jitter = "none"
[dispatcher]
workers = 4
attempt_timeout = "2s"
lease_timeout = "30s"
claim_batch = 8
queue_capacity = 16
`

// pgChild is one `dispatch` process on the shared queue.
type pgChild struct {
	owner    string
	cmd      *exec.Cmd
	ready    chan struct{}
	exitLine chan string // the "exit" event line, if it printed one
	done     chan error
}

// spawnOn starts a dispatcher process with store dsn and owner, like
// runner.spawn, and waits until it is ready.
func spawnOn(t *testing.T, r *runner, dsn, owner string) *pgChild {
	t.Helper()
	c := &pgChild{owner: owner, ready: make(chan struct{}), exitLine: make(chan string, 1), done: make(chan error, 1)}
	c.cmd = exec.Command(r.exe, "dispatch",
		"--store", dsn, "--config", r.dispatchConfig, "--owner", owner,
		"--start", strconv.FormatInt(r.clock.Start.UnixNano(), 10),
		"--speed", strconv.FormatFloat(r.clock.Speed, 'g', -1, 64))
	c.cmd.Stderr = r.logw
	out, err := c.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		select {
		case <-c.done:
		default:
			_ = c.cmd.Process.Kill()
			<-c.done
		}
	})
	go func() {
		sc := bufio.NewScanner(io.LimitReader(out, 1<<26))
		readyOnce := false
		for sc.Scan() {
			line := sc.Text()
			switch strings.SplitN(line, "\t", 2)[0] {
			case dispatcher.EventReady:
				if !readyOnce {
					readyOnce = true
					close(c.ready)
				}
			case dispatcher.EventExit:
				select {
				case c.exitLine <- line:
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, out)
		c.done <- c.cmd.Wait()
	}()
	select {
	case <-c.ready:
	case err := <-c.done:
		c.done <- err // for the cleanup
		t.Fatalf("dispatcher %s exited before it was ready: %v", owner, err)
	case <-time.After(readyTimeout):
		t.Fatalf("dispatcher %s not ready after %v", owner, readyTimeout)
	}
	return c
}

// stopGracefully sends SIGTERM and waits for a clean exit.
func (c *pgChild) stopGracefully(t *testing.T) {
	t.Helper()
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-c.done:
		c.done <- err // for the cleanup
		if err != nil {
			t.Fatalf("dispatcher %s did not stop cleanly: %v", c.owner, err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("dispatcher %s did not stop within 30s of SIGTERM", c.owner)
	}
}

// withOutage makes the "also-ok" cohort answer 503 for its first 800ms, so
// some deliveries wait out a 1s backoff held by the process that tried them.
func withOutage(src string) string {
	return strings.Replace(src, `name = "also-ok"
count = 2
latency = { dist = "constant", value = "10ms" }`, `name = "also-ok"
count = 2
latency = { dist = "constant", value = "10ms" }
  [[partners.outages]]
  start = "0s"
  for = "800ms"
  kind = "unavailable"`, 1)
}

// heldPastLease shortens the lease to 1s and makes deliveries wait for a
// partner slot longer than that.
func heldPastLease(src string) string {
	return strings.NewReplacer(`lease_timeout = "30s"`, `lease_timeout = "1s"
per_partner_concurrency = 1`, `value = "10ms"`, `value = "150ms"`).Replace(src)
}

// TestMultiDispatchersShareOnePostgresQueue runs two `stormdrill dispatch`
// processes on one PostgreSQL queue while the test injects deliveries in
// waves. Nothing is lost (every delivery delivered), nothing is sent twice
// (no partner duplicates, no attempt ordinal twice, no stale completion:
// no delivery was leased by both), and both processes did part of the work.
func TestMultiDispatchersShareOnePostgresQueue(t *testing.T) {
	cases := []struct {
		name, drill string
		retries     bool // some deliveries need a second attempt
	}{
		// every attempt succeeds: exactly one attempt per delivery
		{"healthy", multiDrill, false},
		// retries: the process that tried a delivery holds it through its
		// backoff; the other must not take it when the backoff ends
		// (regression: the hold lease used to end at the retry's run_at)
		{"retries", withOutage(multiDrill), true},
		// a 1s lease, one slot per partner and 150ms answers: a process
		// keeps up to 16 due deliveries waiting for slots, longer than the
		// lease; its renewals keep the other from claiming them
		// (regression: they were sent by both)
		{"held past lease", heldPastLease(multiDrill), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			runMulti(t, tc.drill, tc.retries)
		})
	}
}

func runMulti(t *testing.T, src string, retries bool) {
	dsn := pgSchemaDSN(t)
	d := parseDrill(t, src)
	r, err := newRunner(d, t.TempDir(), Options{Executable: testExecutable(t), Log: logWriter{t}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.close)
	r.clock = dispatcher.Clock{Start: time.Now(), Speed: d.Speed}
	r.srv.SetStart(r.clock.Start)
	st, err := queue.OpenPostgres(dsn) // applies the migrations before the children start
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	owners := []string{"dispatch-a", "dispatch-b"}
	var children []*pgChild
	for _, o := range owners {
		children = append(children, spawnOn(t, r, dsn, o))
	}
	// The partners' timeline starts once both dispatchers are ready: on a
	// busy machine starting them can take longer than the outage lasts, and
	// then the outage would be over before the first delivery.
	r.srv.SetStart(time.Now())

	// 40 events in waves of 4, fanned out to 5 subscribers.
	const events, wave = 40, 4
	ctx := context.Background()
	created := 0
	for e0 := 0; e0 < events; e0 += wave {
		var ds []queue.Delivery
		now := r.clock.Now()
		for e := e0; e < e0+wave; e++ {
			for _, si := range r.fanout {
				s := r.subs[si]
				ds = append(ds, queue.Delivery{ID: drills.DeliveryID(int64(e), s.Name), Event: fmt.Sprintf("evt-%d", e),
					Partner: s.Name, Cohort: r.specs[s.Cohort].Name, Created: now})
			}
		}
		n, err := st.Enqueue(ctx, ds)
		if err != nil || n != len(ds) {
			t.Fatalf("enqueue: %d of %d, %v", n, len(ds), err)
		}
		created += n
		// The next wave once this one is claimed, by either process.
		testsuite.WaitFor(t, "a wave claimed", time.Minute, func() bool {
			c, err := st.Counts(ctx, r.clock.Now())
			return err == nil && c.Ready == 0
		})
	}
	c := waitTerminal(t, st, 60*time.Second)
	for _, ch := range children {
		ch.stopGracefully(t)
	}
	if c.Total() != int64(created) || c.Delivered != int64(created) {
		t.Fatalf("created %d, store %+v: want every delivery delivered", created, c)
	}

	// Who attempted what, from the attempt history.
	type ownerWork struct {
		owner                    string
		attempts, ok, deliveries int
	}
	rows, err := st.Pool().Query(ctx, `SELECT owner, count(*), count(*) FILTER (WHERE status BETWEEN 200 AND 299),
		count(DISTINCT delivery_id) FROM attempts GROUP BY owner ORDER BY owner`)
	if err != nil {
		t.Fatal(err)
	}
	work, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (ownerWork, error) {
		var w ownerWork
		err := row.Scan(&w.owner, &w.attempts, &w.ok, &w.deliveries)
		return w, err
	})
	if err != nil {
		t.Fatal(err)
	}
	attempts, succeeded := 0, 0
	for _, w := range work {
		attempts += w.attempts
		succeeded += w.ok
		if w.attempts == 0 {
			t.Errorf("%s made no attempt", w.owner)
		}
	}
	if len(work) != len(owners) {
		t.Errorf("attempts by %+v: want both %v to have done some of the work", work, owners)
	}
	if succeeded != created {
		t.Errorf("%d successful attempts for %d deliveries: want one each", succeeded, created)
	}
	switch {
	case !retries && attempts != created:
		t.Errorf("%d attempts for %d deliveries, all partners healthy: want one each", attempts, created)
	case retries && attempts == created:
		t.Errorf("no retry happened: the outage exercised nothing")
	}
	var repeated int
	if err := st.Pool().QueryRow(ctx, `SELECT count(*) FROM (SELECT delivery_id, ordinal FROM attempts
		GROUP BY delivery_id, ordinal HAVING count(*) > 1) x`).Scan(&repeated); err != nil {
		t.Fatal(err)
	}
	if repeated != 0 {
		t.Errorf("%d (delivery, attempt ordinal) pairs were attempted twice", repeated)
	}
	var dups, accepted int64
	for _, s := range r.srv.Stats() {
		dups += s.Duplicates
		accepted += s.Accepted
	}
	if dups != 0 || accepted != int64(created) {
		t.Errorf("partners accepted %d with %d duplicates; want %d accepted once each, nothing killed", accepted, dups, created)
	}
	for _, ch := range children {
		select {
		case line := <-ch.exitLine:
			// exit <attempts> <retry_after_ignored> <stale>
			if f := strings.Split(line, "\t"); len(f) == 4 && f[3] != "0" {
				t.Errorf("%s: %s completions were stale: a lease was taken over", ch.owner, f[3])
			}
		default:
			t.Errorf("%s printed no exit line", ch.owner)
		}
	}
	t.Logf("%d deliveries, %d attempts; by owner %+v; %d partner duplicates", created, attempts, work, dups)
}
