package main

import (
	"bytes"
	"math"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// Past its ceiling the guard exits with status 3 and says why; below it,
// it does nothing. The guard's ticker runs on the bubble's clock
// (testing/synctest): its 5 ms checks take no wall time.
func TestMemGuardExits3PastTheCeiling(t *testing.T) {
	synctest.Test(t, testMemGuardExits3PastTheCeiling)
}

func testMemGuardExits3PastTheCeiling(t *testing.T) {
	defer debug.SetMemoryLimit(math.MaxInt64)
	var mu sync.Mutex
	var stderr bytes.Buffer
	codes := make(chan int, 1)
	exit := func(c int) { codes <- c }

	quiet := startMemGuard(held()+1<<30, 5*time.Millisecond, &stderr, exit)
	<-time.After(50 * time.Millisecond) // the bubble's clock: ten checks, at once
	quiet.Stop()
	select {
	case c := <-codes:
		t.Fatalf("exited %d below the ceiling", c)
	default:
	}

	limit := held() + 16<<20
	g := startMemGuard(limit, 5*time.Millisecond, lockedWriter{&mu, &stderr}, exit)
	defer g.Stop()
	ballast := make([]byte, 64<<20)
	for i := range ballast {
		ballast[i] = byte(i)
	}
	select {
	case c := <-codes:
		if c != exitRunFail {
			t.Errorf("exit %d, want %d", c, exitRunFail)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no exit 5s after passing the ceiling")
	}
	_ = ballast[len(ballast)-1]
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(stderr.String(), "out of memory") || !strings.Contains(stderr.String(), "GOMEMLIMIT") {
		t.Errorf("message %q", stderr.String())
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func TestMemoryCeilingIsFinite(t *testing.T) {
	if c := memoryCeiling(); c <= 0 || c == math.MaxInt64 {
		t.Errorf("ceiling %d on a Linux machine, want a finite size", c)
	}
}
