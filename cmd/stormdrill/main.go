package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/stormdrill/stormdrill/drills/children"
	"github.com/stormdrill/stormdrill/model/runtime/dispatcher"
)

// Exit statuses, as the README documents them.
const (
	exitOK       = 0 // every gate holds
	exitGateFail = 1 // a gate (or a comparison tolerance) failed
	exitUsage    = 2 // the drill or the command line is invalid
	exitRunFail  = 3 // the run itself failed
)

// usageError is a bad command line or drill: exit status 2.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// runError is a run that could not complete: exit status 3.
type runError struct{ err error }

func (e runError) Error() string { return e.err.Error() }
func (e runError) Unwrap() error { return e.err }

// errHelpShown ends a command whose --help printed its usage: exit 0.
// It is not pflag.ErrHelp, on which cobra would print the help again.
var errHelpShown = errors.New("help shown")

// gateFailed is exit status 1 with nothing more to print.
var errGateFailed = errors.New("a gate failed")

type command struct {
	name    string
	summary string
	run     func(args []string, stdout, stderr io.Writer) error
}

func commands() []command {
	return []command{
		{"run", "run drills and write their reports", cmdRun},
		{"validate", "check drills without running them", cmdValidate},
		{"compare", "compare two runs key figure by key figure", cmdCompare},
		{"plan", "analytic capacity plan for a drill", cmdPlan},
		{"capacity", "search the largest load (or smallest pool) that passes every gate", cmdCapacity},
		{"sweep", "run an experiment: every cell × seed, side by side", cmdSweep},
		{"merge", "merge the shards of a sweep, capacity search or multi-seed run (--shard I/N) into its report", cmdMerge},
		{"partner", "serve a drill's fake partners over HTTP (loopback, or anywhere with a token)", cmdPartner},
		{"dispatch", "run the dispatcher on a durable queue (live mode)", cmdDispatch},
		{"dlq", "list, show and replay dead letters", cmdDLQ},
		{"verify", "run the release checklist against a delivery pipeline (external)", cmdVerify},
		{"drills", "list the drills bundled in the binary", cmdDrills},
		{"init", "copy a bundled drill out into a file to edit", cmdInit},
		{"keys", "print the drill key reference", cmdKeys},
		{"bench", "measure simulator throughput on the flagship drill", cmdBench},
		{"version", "print the version and build information", cmdVersion},
	}
}

func main() {
	// Exit 3 with a message rather than the runtime's out-of-memory death.
	g := startMemGuard(memoryCeiling(), 100*time.Millisecond, os.Stderr, os.Exit)
	if len(os.Args) > 1 && os.Args[1] == "dispatch" {
		dispatcher.TuneGC()
	}
	code := run(os.Args[1:], os.Stdout, os.Stderr)
	g.Stop()
	os.Exit(code)
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		topUsage(stdout)
		return exitUsage
	}
	if startsChildren[args[0]] {
		// Told to stop at any moment (building, waiting for the system,
		// running, draining), the harness stops every process it started
		// and what they started: none outlives it.
		remove := children.StopOnSignal(childGrace, func(sig os.Signal) {
			fmt.Fprintf(stderr, "stormdrill: %v: stopped every process the run started\n", sig)
			os.Exit(exitRunFail)
		})
		defer remove()
	}
	return exitCode(execute(args, stdout, stderr), stderr)
}

// startsChildren names the commands that start processes (dispatchers,
// a system under drill and its commands).
var startsChildren = map[string]bool{"run": true, "verify": true}

// childGrace is how long the processes a run started get to stop after
// SIGTERM before they are killed.
const childGrace = 2 * time.Second

func exitCode(err error, stderr io.Writer) int {
	if err == nil {
		return exitOK
	}
	if errors.Is(err, errHelpShown) {
		return exitOK
	}
	if errors.Is(err, errGateFailed) {
		return exitGateFail
	}
	var ue usageError
	if errors.As(err, &ue) {
		if ue.err != errSilent {
			fmt.Fprintln(stderr, strings.TrimRight(ue.Error(), "\n"))
		}
		return exitUsage
	}
	fmt.Fprintln(stderr, "stormdrill:", err)
	return exitRunFail
}

func topUsage(w io.Writer) {
	fmt.Fprintln(w, `stormdrill — failure drills and capacity planning for retrying delivery pipelines

Usage:
  stormdrill <command> [flags] [args]

Commands:`)
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(w, "  %-10s %s\n", "help", "print a command's help: stormdrill help run")
	fmt.Fprintf(w, "  %-10s %s\n", "completion", "print a shell completion script: bash, zsh, fish or powershell")
	fmt.Fprintln(w, `
Run "stormdrill help <command>" or "stormdrill <command> --help" for a
command's flags and examples.

Exit status: 0 all gates hold; 1 a gate failed; 2 invalid drill or command
line; 3 the run itself failed.`)
}

// newFlags returns a pflag set (cobra's flag library: --name and -n,
// typed values, defaults in the help) whose --help/-h prints usage and
// examples to stdout and whose errors are usage errors.
func newFlags(name, synopsis, examples string, stdout io.Writer) *pflag.FlagSet {
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.SortFlags = false
	if c, ok := stdout.(*flagCollector); ok {
		c.sets = append(c.sets, fs)
	}
	fs.Usage = func() {
		fmt.Fprintf(stdout, "Usage: stormdrill %s %s\n\nFlags:\n", name, synopsis)
		fmt.Fprint(stdout, fs.FlagUsagesWrapped(100))
		if examples != "" {
			fmt.Fprintf(stdout, "\nExamples:\n%s\n", strings.TrimRight(examples, "\n"))
		}
	}
	return fs
}

// parseFlags parses args (flags may follow positional arguments; after
// "--" everything is positional) and returns the positional arguments.
// The usage goes to stdout for --help only: on a bad flag the error alone
// belongs on stderr.
func parseFlags(fs *pflag.FlagSet, args []string) ([]string, error) {
	usage := fs.Usage
	fs.Usage = func() {}
	defer func() { fs.Usage = usage }()
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			usage()
			return nil, errHelpShown
		}
		return nil, usagef("stormdrill %s: %s (see --help)", fs.Name(), err.Error())
	}
	if err := checkNoEmptyFlags(fs); err != nil {
		return nil, err
	}
	return fs.Args(), nil
}
