package testsuite

import (
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

func TestPollReturnsOnceTheConditionHolds(t *testing.T) {
	var n atomic.Int32
	if !Poll(time.Minute, func() bool { return n.Add(1) == 3 }) {
		t.Fatal("Poll gave up on a condition that came true")
	}
	if n.Load() != 3 {
		t.Errorf("condition checked %d times, want 3", n.Load())
	}
}

func TestPollGivesUpAtTheDeadline(t *testing.T) {
	start := time.Now()
	if Poll(20*time.Millisecond, func() bool { return false }) {
		t.Fatal("Poll reported a condition that never held")
	}
	if time.Since(start) < 20*time.Millisecond {
		t.Errorf("gave up after %v, before the deadline", time.Since(start))
	}
}

func TestNotRunIsRecordedOutsideCI(t *testing.T) {
	t.Setenv("CI", "")
	path := filepath.Join(t.TempDir(), "not-run")
	t.Setenv(EnvNotRun, path)
	t.Run("needs-postgres", func(t *testing.T) {
		NotRun(t, "PostgreSQL", "STORMDRILL_TEST_POSTGRES is not set")
		t.Error("NotRun returned")
	})
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := "PostgreSQL\tTestNotRunIsRecordedOutsideCI/needs-postgres\tSTORMDRILL_TEST_POSTGRES is not set\n"; string(b) != want {
		t.Errorf("recorded %q, want %q", b, want)
	}
}

func TestFullTierFollowsTheSwitch(t *testing.T) {
	t.Setenv(EnvFull, "")
	if Full() {
		t.Error("Full with the switch unset")
	}
	t.Setenv(EnvFull, "1")
	if !Full() {
		t.Error("not Full with the switch set")
	}
	ran := false
	t.Run("long", func(t *testing.T) { FullTier(t, "long"); ran = true })
	if !ran {
		t.Error("FullTier skipped a test in the full tier")
	}
	t.Setenv(EnvFull, "")
	ran = false
	t.Run("long", func(t *testing.T) { FullTier(t, "long"); ran = true })
	if ran {
		t.Error("FullTier ran a test outside the full tier")
	}
}
