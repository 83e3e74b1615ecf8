package main

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"time"
)

// The Go runtime that runs out of memory dies with exit status 2, which CI
// would read as "invalid drill". The memory guard stops the process first,
// with exit status 3 and a message: it sets the runtime's soft memory limit
// (so the collector works harder as the ceiling nears) and watches the
// memory the runtime holds; past the ceiling it exits.

// memGuard watches the process's memory against limit bytes.
type memGuard struct {
	limit    int64
	interval time.Duration
	stderr   io.Writer
	exit     func(int)
	stop     chan struct{}
	done     chan struct{}
}

// memoryCeiling is GOMEMLIMIT when it is set, else three quarters of the
// machine's memory and half of the address-space limit (RLIMIT_AS), the
// smaller; 0 when neither is known.
func memoryCeiling() int64 {
	if os.Getenv("GOMEMLIMIT") != "" {
		if l := debug.SetMemoryLimit(-1); l > 0 && l < math.MaxInt64 {
			return l
		}
	}
	var ceiling int64
	if total := machineMemory(); total > 0 {
		ceiling = total / 4 * 3
	}
	if as := addressSpaceLimit(); as > 0 {
		// The runtime reserves address space well beyond the heap.
		if half := as / 2; ceiling == 0 || half < ceiling {
			ceiling = half
		}
	}
	return ceiling
}

// machineMemory reads MemTotal from /proc/meminfo; 0 when unknown.
func machineMemory() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(io.LimitReader(f, 64<<10))
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err == nil && kb > 0 {
				return kb << 10
			}
		}
	}
	return 0
}

// startMemGuard sets the soft limit and starts watching; limit 0 does
// nothing. stop ends the watch.
func startMemGuard(limit int64, interval time.Duration, stderr io.Writer, exit func(int)) *memGuard {
	g := &memGuard{limit: limit, interval: interval, stderr: stderr, exit: exit, stop: make(chan struct{}), done: make(chan struct{})}
	if limit <= 0 {
		close(g.done)
		return g
	}
	debug.SetMemoryLimit(limit)
	go g.watch()
	return g
}

// held is the memory the runtime holds from the OS, less what it has
// returned: close to the resident size the kernel would kill for.
func held() int64 {
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	var v [2]int64
	for i := range s {
		if s[i].Value.Kind() == metrics.KindUint64 {
			v[i] = int64(s[i].Value.Uint64())
		}
	}
	return v[0] - v[1]
}

func (g *memGuard) watch() {
	defer close(g.done)
	t := time.NewTicker(g.interval)
	defer t.Stop()
	for {
		select {
		case <-g.stop:
			return
		case <-t.C:
		}
		if h := held(); h > g.limit {
			fmt.Fprintf(g.stderr, "stormdrill: out of memory: %d MiB in use, past the ceiling of %d MiB (GOMEMLIMIT, or 3/4 of this machine's memory); the drill asks for more than this machine has: lower its load, or raise GOMEMLIMIT if the machine has more\n",
				h>>20, g.limit>>20)
			g.exit(exitRunFail)
			return
		}
	}
}

// Stop ends the watch.
func (g *memGuard) Stop() {
	select {
	case <-g.done:
		return
	default:
	}
	close(g.stop)
	<-g.done
}
