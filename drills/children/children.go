package children

import (
	"os"
	"os/exec"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

var (
	mu   sync.Mutex
	kept = map[*exec.Cmd]struct{}{}
)

// Start puts cmd in a process group of its own, starts it and keeps it
// until Done. Whoever starts a process through Start waits for it and
// then calls Done.
func Start(cmd *exec.Cmd) error {
	newGroup(cmd)
	mu.Lock()
	defer mu.Unlock()
	// Under the lock, so that StopAll never misses a process that started.
	if err := cmd.Start(); err != nil {
		return err
	}
	kept[cmd] = struct{}{}
	return nil
}

// Run is Start, Wait and Done.
func Run(cmd *exec.Cmd) error {
	if err := Start(cmd); err != nil {
		return err
	}
	defer Done(cmd)
	return cmd.Wait()
}

// Done forgets cmd once it has been waited for.
func Done(cmd *exec.Cmd) {
	mu.Lock()
	delete(kept, cmd)
	mu.Unlock()
}

// Stop asks cmd's process group to stop (SIGTERM), or ends it at once
// (SIGKILL) when not graceful.
func Stop(cmd *exec.Cmd, graceful bool) {
	if cmd.Process == nil {
		return
	}
	if graceful {
		stopGroup(cmd.Process)
	} else {
		killGroup(cmd.Process)
	}
}

// Kept is how many started processes have not been waited for yet.
func Kept() int {
	mu.Lock()
	defer mu.Unlock()
	return len(kept)
}

// StopAll asks every kept process group to stop, waits up to grace for
// their first processes to be waited for, then kills every one of those
// groups, so that nothing they started outlives the harness. No process
// starts meanwhile.
func StopAll(grace time.Duration) {
	mu.Lock()
	defer mu.Unlock()
	cmds := make([]*exec.Cmd, 0, len(kept))
	for c := range kept {
		cmds = append(cmds, c)
		Stop(c, true)
	}
	deadline := time.Now().Add(grace)
	for len(kept) > 0 && time.Now().Before(deadline) {
		mu.Unlock() // let the waiters call Done
		time.Sleep(10 * time.Millisecond)
		mu.Lock()
	}
	for _, c := range cmds {
		Stop(c, false)
	}
}

// StopOnSignal stops every kept process when the harness gets SIGINT or
// SIGTERM, then calls exit with the signal. The returned function removes
// the handler.
func StopOnSignal(grace time.Duration, exit func(os.Signal)) (remove func()) {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-sigs:
			StopAll(grace)
			exit(s)
		case <-done:
		}
	}()
	return func() {
		signal.Stop(sigs)
		close(done)
	}
}
