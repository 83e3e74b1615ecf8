//go:build !windows

package children

import (
	"os"
	"os/exec"
	"syscall"
)

// newGroup puts cmd in a process group of its own, so that a stop ends
// everything it started, not only its first process.
func newGroup(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
}

// stopGroup asks the process group to stop (SIGTERM).
func stopGroup(p *os.Process) { _ = syscall.Kill(-p.Pid, syscall.SIGTERM) }

// killGroup ends the process group at once (SIGKILL).
func killGroup(p *os.Process) { _ = syscall.Kill(-p.Pid, syscall.SIGKILL) }
