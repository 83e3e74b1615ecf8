package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/stormdrill/stormdrill/drills"
)

// The command tree is cobra's: `help CMD`, --version/-v, shell completion
// scripts and the command table. Each subcommand declares and parses its
// flags with cobra's flag library, pflag (newFlags: --name and -n, typed
// values, flags after positional arguments, usage errors with exit status
// 2), in the one function that uses them, so cobra hands it its arguments
// untouched (DisableFlagParsing) and completion asks it for its flag set.

// execute runs one command line through the cobra tree.
func execute(args []string, stdout, stderr io.Writer) error {
	var delegated bool
	root := newRootCommand(stdout, stderr, &delegated)
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	refuseUnknownShell(root)
	if name := args[0]; !strings.HasPrefix(name, "-") && !strings.HasPrefix(name, "__") {
		if c, _, err := root.Find(args[:1]); err != nil || c == root {
			fmt.Fprintf(stderr, "stormdrill: unknown command %q\n\n", name)
			topUsage(stderr)
			return usageError{errSilent}
		}
	}
	root.SetArgs(args)
	err := root.Execute()
	var ue usageError
	if err != nil && !delegated && !errors.As(err, &ue) {
		// Cobra's own errors (a bad argument to completion, say) are
		// command line errors.
		return usageError{fmt.Errorf("stormdrill: %w", err)}
	}
	return err
}

// refuseUnknownShell makes `completion SHELL` with a shell cobra has no
// script for a usage error (exit 2) naming the shells it has; cobra alone
// prints the completion command's help and exits 0, which a script piping
// the output into a file would not notice.
func refuseUnknownShell(root *cobra.Command) {
	for _, c := range root.Commands() {
		if c.Name() != "completion" {
			continue
		}
		var shells []string
		for _, sc := range c.Commands() {
			if sc.IsAvailableCommand() {
				shells = append(shells, sc.Name())
			}
		}
		c.Args = cobra.ArbitraryArgs
		c.RunE = func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usagef("stormdrill completion: name a shell: %s", strings.Join(shells, ", "))
			}
			return usagef("stormdrill completion: unknown shell %q; want one of %s", clipText(args[0], 40), strings.Join(shells, ", "))
		}
	}
}

// errSilent is a usage error whose message has already been printed.
var errSilent = errors.New("")

// newRootCommand builds the tree; *delegated is set once a subcommand of
// commands() runs, whose errors carry their own exit status.
func newRootCommand(stdout, stderr io.Writer, delegated *bool) *cobra.Command {
	root := &cobra.Command{
		Use:           "stormdrill",
		Short:         "failure drills and capacity planning for retrying delivery pipelines",
		Version:       versionString(),
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetOut(stdout)
	root.SetErr(stderr)
	defaultHelp := new(cobra.Command).HelpFunc()
	root.SetHelpFunc(func(c *cobra.Command, args []string) {
		if c == root {
			topUsage(c.OutOrStdout())
			return
		}
		defaultHelp(c, args)
	})
	for _, c := range commands() {
		root.AddCommand(delegate(c, stdout, stderr, delegated))
	}
	root.SetHelpCommand(&cobra.Command{
		Use:   "help [command]",
		Short: "print a command's help",
		RunE: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				topUsage(stdout)
				return nil
			}
			c, rest, err := root.Find(args)
			if err != nil || c == root {
				return usagef("stormdrill help: unknown command %q (see stormdrill help)", args[0])
			}
			c.HelpFunc()(c, append(rest, "--help"))
			return nil
		},
		ValidArgsFunction: func(_ *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
			if len(args) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			var out []cobra.Completion
			for _, c := range commands() {
				if strings.HasPrefix(c.name, toComplete) {
					out = append(out, cobra.CompletionWithDesc(c.name, c.summary))
				}
			}
			return out, cobra.ShellCompDirectiveNoFileComp
		},
	})
	return root
}

// delegate wraps one existing subcommand: cobra routes to it and asks it
// for its help and its flags, and it parses its own arguments.
func delegate(c command, stdout, stderr io.Writer, delegated *bool) *cobra.Command {
	cc := &cobra.Command{
		Use:                c.name,
		Short:              c.summary,
		DisableFlagParsing: true,
		RunE: func(_ *cobra.Command, args []string) error {
			*delegated = true
			return c.run(args, stdout, stderr)
		},
		ValidArgsFunction: func(_ *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
			if !strings.HasPrefix(toComplete, "-") {
				// A drill (file or bundled), a run directory or a flag's value.
				return completeDrills(c.name, toComplete), cobra.ShellCompDirectiveDefault
			}
			var out []cobra.Completion
			for _, f := range commandFlags(c, args) {
				if name := "--" + f.Name; strings.HasPrefix(name, toComplete) {
					_, usage := pflag.UnquoteUsage(f)
					out = append(out, cobra.CompletionWithDesc(name, usage))
				}
			}
			return out, cobra.ShellCompDirectiveNoFileComp
		},
	}
	// `stormdrill help dlq replay` and `stormdrill run --help` print the same.
	cc.SetHelpFunc(func(_ *cobra.Command, args []string) {
		if len(args) == 0 || args[len(args)-1] != "--help" {
			args = append(args, "--help")
		}
		_ = c.run(args, stdout, stderr)
	})
	return cc
}

// drillCommands take drills as arguments: completion offers the bundled
// drills' names and the drill files that match what is typed.
var drillCommands = map[string]bool{"run": true, "validate": true, "plan": true, "capacity": true, "partner": true, "verify": true, "init": true}

// completeDrills returns the bundled drills and *.toml files (and
// directories, to descend into) starting with prefix.
func completeDrills(cmd, prefix string) []cobra.Completion {
	if !drillCommands[cmd] {
		return nil
	}
	var out []cobra.Completion
	for _, b := range drills.BundledDrills() {
		if strings.HasPrefix(b.Name, prefix) {
			out = append(out, cobra.CompletionWithDesc(b.Name, "bundled drill"))
		}
	}
	matches, _ := filepath.Glob(prefix + "*")
	for _, m := range matches[:min(len(matches), maxFileCompletions)] {
		if fi, err := os.Stat(m); err == nil && fi.IsDir() {
			out = append(out, m+string(filepath.Separator))
		} else if strings.HasSuffix(m, ".toml") {
			out = append(out, m)
		}
	}
	return out
}

// maxFileCompletions bounds the files one completion lists.
const maxFileCompletions = 500

// flagCollector is a stdout that newFlags recognises: it records the flag
// sets a command defines, so that completion can offer their names without
// a second declaration of every flag.
type flagCollector struct {
	io.Writer
	sets []*pflag.FlagSet
}

// commandFlags returns the flags of command c given the arguments typed so
// far (for dlq, the subcommand decides the flags).
func commandFlags(c command, args []string) []*pflag.Flag {
	collect := func(args []string) *pflag.FlagSet {
		fc := &flagCollector{Writer: io.Discard}
		_ = c.run(args, fc, io.Discard)
		if len(fc.sets) == 0 {
			return nil
		}
		return fc.sets[len(fc.sets)-1]
	}
	fs := collect([]string{"--help"})
	if fs == nil && len(args) > 0 {
		fs = collect([]string{args[0], "--help"})
	}
	if fs == nil {
		return nil
	}
	var out []*pflag.Flag
	fs.VisitAll(func(f *pflag.Flag) { out = append(out, f) })
	return out
}
