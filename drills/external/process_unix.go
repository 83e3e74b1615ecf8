//go:build !windows

package external

import (
	"os"
	"os/exec"
	"syscall"
)

// newProcessGroup puts the system in a process group of its own, so that a
// restart fault ends everything it started, not only its first process.
func newProcessGroup(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }

// stopGroup asks the system's process group to stop (SIGTERM).
func stopGroup(p *os.Process) { _ = syscall.Kill(-p.Pid, syscall.SIGTERM) }

// killGroup ends the system's process group at once (SIGKILL).
func killGroup(p *os.Process) { _ = syscall.Kill(-p.Pid, syscall.SIGKILL) }
