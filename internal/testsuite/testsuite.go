package testsuite

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// EnvFull set to 1 selects the full tier: long simulations, timed live
// drills, the release cross-build. `make check` sets it.
const EnvFull = "STORMDRILL_TEST_FULL"

// EnvNotRun names a file to which each test that could not run for want of
// a service appends one line; `make test` prints a summary of it at the
// end.
const EnvNotRun = "STORMDRILL_TEST_NOT_RUN"

// Full reports whether the full tier runs.
func Full() bool { return os.Getenv(EnvFull) == "1" }

// FullTier skips t unless the full tier runs; why says what the test costs.
func FullTier(t testing.TB, why string) {
	t.Helper()
	if !Full() {
		t.Skipf("full tier (make check, or %s=1): %s", EnvFull, why)
	}
}

// NotRun ends a test that cannot run because need (a service, such as
// PostgreSQL or Chromium) is missing: in CI (CI set) it fails, since CI
// must provide it; elsewhere it is recorded in the EnvNotRun file, which
// `make test` summarizes, and the test is skipped.
func NotRun(t testing.TB, need, reason string) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatalf("%s: %s; CI must provide it (see .ci/run)", need, reason)
	}
	if path := os.Getenv(EnvNotRun); path != "" {
		// One short line per write: O_APPEND keeps lines from test
		// binaries running at once whole.
		line := fmt.Sprintf("%s\t%s\t%s\n", need, t.Name(), strings.ReplaceAll(reason, "\n", " "))
		if f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644); err == nil {
			f.WriteString(line)
			f.Close()
		}
	}
	t.Skipf("not run: %s: %s", need, reason)
}

// WaitPoll is how often WaitFor checks its condition.
const WaitPoll = 5 * time.Millisecond

// WaitFor returns once cond holds, checking it every WaitPoll, and fails
// the test if it still does not hold after deadline: the deadline bounds a
// wait on a busy machine, and it is not a guess of how long things take.
func WaitFor(t testing.TB, what string, deadline time.Duration, cond func() bool) {
	t.Helper()
	if !Poll(deadline, cond) {
		t.Fatalf("still waiting after %v: %s", deadline, what)
	}
}

// Poll checks cond every WaitPoll until it holds (true) or deadline has
// passed (false).
func Poll(deadline time.Duration, cond func() bool) bool {
	end := time.Now().Add(deadline)
	for !cond() {
		if time.Now().After(end) {
			return cond()
		}
		time.Sleep(WaitPoll)
	}
	return true
}
