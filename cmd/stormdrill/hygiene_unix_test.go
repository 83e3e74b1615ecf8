//go:build !windows

package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stormdrill/stormdrill/internal/testsuite"
)

// hygieneScripts writes a tiny system under drill to dir: sys.sh writes
// its pid and its own child's pid to PIDS, says "up" when given an
// argument, and waits; ingest.sh and deadletters.sh note each call in
// INGESTED and DRAINING. (A drill's commands expand $VAR, so the $$ lives
// in the scripts.)
func hygieneScripts(t *testing.T, dir string) {
	for name, text := range map[string]string{
		"sys.sh":         "echo $$ >> " + dir + "/PIDS\nsleep 600 &\necho $! >> " + dir + "/PIDS\n[ -n \"$1\" ] && echo up\nwait\n",
		"ingest.sh":      "cat >/dev/null\necho $$ >> " + dir + "/INGESTED\n",
		"deadletters.sh": "echo $$ >> " + dir + "/DRAINING\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// A run told to stop (SIGTERM or SIGINT) at any moment, building the
// system, waiting for it to be ready, running or draining, stops every
// process it started and every process those started: none survives it.
func TestSignalledRunLeavesNoProcessBehind(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a harness per phase")
	}
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	head := "name = \"hygiene\"\nmode = \"external\"\n[source]\narrival = \"constant\"\nrate = \"5/s\"\n[[partners]]\nname = \"a\"\n"
	const (
		system   = `["sh", "sys.sh"]`
		systemUp = `["sh", "sys.sh", "up"]`
		ingest   = "ingest = \"command\"\ningest_command = [\"sh\", \"ingest.sh\"]\n"
	)
	for _, c := range []struct {
		phase  string
		sig    syscall.Signal
		system string // the [system] table
		times  string // duration and drain
		marker string // the file whose lines say the phase has come
		lines  int
	}{
		{"building", syscall.SIGTERM, "build = " + system + "\nstart = " + system + "\n" + ingest + "dead_letters = \"none\"\n", "duration = \"10m\"\n", "PIDS", 2},
		{"waiting for ready", syscall.SIGINT, "start = " + system + "\nready_log = \"never said\"\nready_timeout = \"10m\"\n" + ingest + "dead_letters = \"none\"\n", "duration = \"10m\"\n", "PIDS", 2},
		{"running", syscall.SIGTERM, "start = " + systemUp + "\nready_log = \"up\"\n" + ingest + "dead_letters = \"none\"\n", "duration = \"10m\"\n", "INGESTED", 1},
		{"draining", syscall.SIGTERM, "start = " + systemUp + "\nready_log = \"up\"\n" + ingest + "dead_letters = \"command\"\ndead_letter_command = [\"sh\", \"deadletters.sh\"]\n", "duration = \"1s\"\ndrain = \"10m\"\n", "DRAINING", 1},
	} {
		t.Run(c.phase, func(t *testing.T) {
			dir := t.TempDir()
			drill := filepath.Join(dir, "hygiene.toml")
			hygieneScripts(t, dir)
			if err := os.WriteFile(drill, []byte(c.times+head+"[system]\n"+c.system), 0o644); err != nil {
				t.Fatal(err)
			}
			var stderr bytes.Buffer
			h := exec.Command(testExecutable(t), "run", drill, "--out", filepath.Join(dir, "out"), "--quiet")
			h.Stderr = &stderr
			if err := h.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- h.Wait() }()
			t.Cleanup(func() { _ = h.Process.Kill() })
			testsuite.WaitFor(t, "the "+c.phase+" phase", 60*time.Second, func() bool {
				select {
				case err := <-exited:
					t.Fatalf("the harness exited (%v) before the %s phase:\n%s", err, c.phase, stderr.String())
				default:
				}
				return len(pidLines(filepath.Join(dir, c.marker))) >= c.lines
			})
			started := append(descendants(h.Process.Pid), pidLines(filepath.Join(dir, "PIDS"))...)
			if len(started) == 0 {
				t.Fatal("the harness has no child to stop")
			}
			if err := h.Process.Signal(c.sig); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-exited:
				if code := h.ProcessState.ExitCode(); code != exitRunFail {
					t.Errorf("exit %d (%v), want %d\n%s", code, err, exitRunFail, stderr.String())
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("the harness did not exit after %v\n%s", c.sig, stderr.String())
			}
			testsuite.WaitFor(t, "every child to be gone", 10*time.Second, func() bool {
				for _, pid := range started {
					if alive(pid) {
						return false
					}
				}
				return true
			})
		})
	}
}

// testExecutable is the test binary, which TestMain makes act as the CLI.
func testExecutable(t *testing.T) string {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

// pidLines reads the pids written one a line to path.
func pidLines(path string) []int {
	data, _ := os.ReadFile(path)
	var pids []int
	for _, l := range strings.Fields(string(data)) {
		if n, err := strconv.Atoi(l); err == nil {
			pids = append(pids, n)
		}
	}
	return pids
}

// descendants lists the processes under pid, from /proc (none elsewhere).
func descendants(pid int) []int {
	parent := map[int]int{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so read after ')'.
		f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(f) > 1 {
			parent[n], _ = strconv.Atoi(f[1])
		}
	}
	var out []int
	for n := range parent {
		for p := parent[n]; p > 1; p = parent[p] {
			if p == pid {
				out = append(out, n)
				break
			}
		}
	}
	return out
}

// alive reports whether pid is a running process (a zombie is not).
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true // no /proc: the signal said it exists
	}
	f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	return len(f) == 0 || f[0] != "Z"
}
