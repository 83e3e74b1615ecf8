//go:build windows

package children

import (
	"os"
	"os/exec"
)

// Windows has no process groups to signal: the harness stops the process
// it started, and a graceful stop is a kill (Windows has no SIGTERM).
func newGroup(*exec.Cmd) {}

func stopGroup(p *os.Process) { _ = p.Kill() }

func killGroup(p *os.Process) { _ = p.Kill() }
