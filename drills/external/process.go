package external

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/stormdrill/stormdrill/drills/children"
)

// Process limits.
const (
	stopTimeout   = 15 * time.Second // SIGTERM to exit, before SIGKILL
	readyPoll     = 50 * time.Millisecond
	maxOutputLine = 64 << 10
	// TailLines is how many of the system's last output lines a crash
	// finding quotes.
	TailLines = 10
	// maxTailLineBytes clips each quoted line.
	maxTailLineBytes = 300
)

// ErrNeedsProcess is returned for a fault that needs the system's process
// when the harness did not start it.
var ErrNeedsProcess = errors.New("this fault needs the system's process: set system.start so the harness starts it")

// process is one run of the started system, in its own process group so
// that a kill reaches everything it started (go run, a shell's children).
type process struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser // nil unless events go to its stdin
	done  chan struct{}  // closed when it has exited
	err   error          // its exit, once done is closed
	ready chan struct{}  // closed once it is ready
	once  sync.Once

	tailMu sync.Mutex
	tail   []string // its last TailLines lines of output
}

// addTail keeps line among the last TailLines.
func (p *process) addTail(line string) {
	if len(line) > maxTailLineBytes {
		line = line[:maxTailLineBytes] + "…"
	}
	p.tailMu.Lock()
	defer p.tailMu.Unlock()
	if len(p.tail) == TailLines {
		copy(p.tail, p.tail[1:])
		p.tail = p.tail[:TailLines-1]
	}
	p.tail = append(p.tail, line)
}

// lastLines returns its last lines of output, oldest first.
func (p *process) lastLines() []string {
	p.tailMu.Lock()
	defer p.tailMu.Unlock()
	return append([]string(nil), p.tail...)
}

// env is what the system is told: partner and ingest URLs, the run directory.
type env map[string]string

func (e env) expand(s string) string {
	return os.Expand(s, func(k string) string {
		if v, ok := e[k]; ok {
			return v
		}
		return os.Getenv(k)
	})
}

func (e env) list() []string {
	out := os.Environ()
	for k, v := range e {
		out = append(out, k+"="+v)
	}
	return out
}

// command builds an exec.Cmd for argv with the environment expanded.
func (e env) command(ctx context.Context, dir string, argv []string) *exec.Cmd {
	args := make([]string, len(argv))
	for i, a := range argv {
		args[i] = e.expand(a)
	}
	var cmd *exec.Cmd
	if ctx != nil {
		cmd = exec.CommandContext(ctx, args[0], args[1:]...)
		// Its process group: a command in its own group (children.Start)
		// may have started others.
		cmd.Cancel = func() error { children.Stop(cmd, false); return nil }
	} else {
		cmd = exec.Command(args[0], args[1:]...)
	}
	cmd.Dir = dir
	cmd.Env = e.list()
	return cmd
}

// startProcess starts argv and waits until it is ready: readyURL answers
// 2xx and a line of its output contains readyLog (each when given), or at
// once when neither is given.
func startProcess(e env, dir string, argv []string, withStdin bool, readyURL, readyLog string, timeout time.Duration, log io.Writer) (*process, error) {
	p := &process{cmd: e.command(nil, dir, argv), done: make(chan struct{}), ready: make(chan struct{})}
	outR, outW := io.Pipe()
	p.cmd.Stdout, p.cmd.Stderr = outW, outW
	if withStdin {
		w, err := p.cmd.StdinPipe()
		if err != nil {
			return nil, err
		}
		p.stdin = w
	}
	if err := children.Start(p.cmd); err != nil {
		return nil, fmt.Errorf("external: starting the system: %w", err)
	}
	logSeen := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(make([]byte, 4096), maxOutputLine)
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(log, "system:", line)
			p.addTail(line)
			if readyLog != "" && strings.Contains(line, readyLog) {
				p.once.Do(func() { close(logSeen) })
			}
		}
		_, _ = io.Copy(io.Discard, outR)
	}()
	go func() {
		p.err = p.cmd.Wait()
		children.Done(p.cmd)
		outW.Close()
		close(p.done)
	}()
	logOK, urlOK := readyLog == "", readyURL == ""
	if logOK {
		logSeen = nil
	}
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(readyPoll)
	defer tick.Stop()
	client := &http.Client{Timeout: time.Second}
	for !(logOK && urlOK) {
		select {
		case <-logSeen:
			logOK, logSeen = true, nil
		case <-p.done:
			return nil, fmt.Errorf("external: the system exited before it was ready: %v", p.err)
		case <-deadline.C:
			p.kill(false)
			return nil, fmt.Errorf("external: the system was not ready within %v (system.ready_timeout)", timeout)
		case <-tick.C:
			if !urlOK && urlReady(client, e.expand(readyURL)) {
				// Another process may hold the port the system failed to
				// bind: a system that exits just after "ready" was not.
				select {
				case <-p.done:
					return nil, fmt.Errorf("external: the system exited before it was ready: %v", p.err)
				case <-time.After(4 * readyPoll):
				}
				urlOK = true
			}
		}
	}
	close(p.ready)
	return p, nil
}

func urlReady(c *http.Client, u string) bool {
	resp, err := c.Get(u)
	if err != nil {
		return false
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	return resp.StatusCode >= 200 && resp.StatusCode < 300
}

// kill ends the process group: SIGTERM first when graceful (SIGKILL after
// stopTimeout), SIGKILL at once otherwise. It returns the exit error of a
// graceful stop that did not end cleanly.
func (p *process) kill(graceful bool) error {
	if p.stdin != nil {
		p.stdin.Close()
	}
	if graceful {
		children.Stop(p.cmd, true)
		t := time.NewTimer(stopTimeout)
		defer t.Stop()
		select {
		case <-p.done:
			return nil
		case <-t.C:
			children.Stop(p.cmd, false)
			<-p.done
			return fmt.Errorf("external: the system did not stop within %v of SIGTERM", stopTimeout)
		}
	}
	children.Stop(p.cmd, false)
	<-p.done
	return nil
}

// Ingest ports are picked below Linux's ephemeral range (32768 and up), so
// that no outgoing connection or ":0" listener takes the port between the
// check here and the system's own listen.
const (
	ingestPortLow  = 20000
	ingestPortHigh = 32000
	ingestPortTry  = 100
)

// freeLoopbackAddr picks a free loopback port for the system's ingest.
func freeLoopbackAddr() (string, error) {
	for i := 0; i < ingestPortTry; i++ {
		addr := fmt.Sprintf("127.0.0.1:%d", ingestPortLow+rand.IntN(ingestPortHigh-ingestPortLow))
		l, err := net.Listen("tcp", addr)
		if err != nil {
			continue
		}
		l.Close()
		return addr, nil
	}
	return "", fmt.Errorf("external: no free loopback port between %d and %d for the system's ingest", ingestPortLow, ingestPortHigh)
}
