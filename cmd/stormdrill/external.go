package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/stormdrill/stormdrill/drills"
	"github.com/stormdrill/stormdrill/drills/external"
	"github.com/stormdrill/stormdrill/reports"
)

// runExternal runs a drill against somebody else's system; the system's
// output goes to DIR/system.log.
func runExternal(d *drills.Drill, file, dir string, progress func(drills.Progress)) (*reports.Run, error) {
	if err := external.CheckPartnerServer(d); err != nil {
		return nil, usageError{fmt.Errorf("%s: %w", file, err)}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	logf, err := os.Create(filepath.Join(dir, "system.log"))
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	run, err := external.Run(d, dir, external.Options{DrillDir: filepath.Dir(file), Progress: progress, Log: logf, Env: externalEnv()})
	if errors.Is(err, external.ErrNeedsProcess) || errors.Is(err, external.ErrPartnerListen) {
		return nil, usageError{err}
	}
	return run, err
}

// externalEnv tells a system under drill where this stormdrill binary is,
// so that a drill can start `${STORMDRILL_EXE} dispatch` as its system.
func externalEnv() map[string]string {
	exe := liveExecutable
	if exe == "" {
		exe, _ = os.Executable()
	}
	return map[string]string{"STORMDRILL_EXE": exe}
}
