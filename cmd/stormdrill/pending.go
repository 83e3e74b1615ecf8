package main

import (
	"errors"
	"io"

	"github.com/stormdrill/stormdrill/drills"
	"github.com/stormdrill/stormdrill/reports"
)

var errNotBuilt = errors.New("not in this build yet")

func cmdCapacity(args []string, stdout, stderr io.Writer) error { return runError{errNotBuilt} }
func cmdSweep(args []string, stdout, stderr io.Writer) error    { return runError{errNotBuilt} }
func cmdPartner(args []string, stdout, stderr io.Writer) error  { return runError{errNotBuilt} }
func cmdDispatch(args []string, stdout, stderr io.Writer) error { return runError{errNotBuilt} }
func cmdDLQ(args []string, stdout, stderr io.Writer) error      { return runError{errNotBuilt} }

func runLive(d *drills.Drill, dir string, progress func(drills.Progress)) (*reports.Run, error) {
	return nil, errNotBuilt
}
