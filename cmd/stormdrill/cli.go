package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/spf13/cobra"
)

// The command tree is cobra's, for what cobra does well: `help CMD`, shell
// completion scripts and the command table. Each subcommand keeps its own
// flag handling (cmdX with the standard flag package: --flag, flags after
// positional arguments, usage errors with exit status 2), so cobra passes
// its arguments through untouched (DisableFlagParsing).

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
		SilenceErrors: true,
		SilenceUsage:  true,
	}
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
				// A drill file, a run directory or a flag's value.
				return nil, cobra.ShellCompDirectiveDefault
			}
			var out []cobra.Completion
			for _, f := range commandFlags(c, args) {
				if name := "--" + f.Name; strings.HasPrefix(name, toComplete) {
					_, usage := flag.UnquoteUsage(f)
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

// flagCollector is a stdout that newFlags recognises: it records the flag
// sets a command defines, so that completion can offer their names without
// a second declaration of every flag.
type flagCollector struct {
	io.Writer
	sets []*flag.FlagSet
}

// commandFlags returns the flags of command c given the arguments typed so
// far (for dlq, the subcommand decides the flags).
func commandFlags(c command, args []string) []*flag.Flag {
	collect := func(args []string) *flag.FlagSet {
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
	var out []*flag.Flag
	fs.VisitAll(func(f *flag.Flag) { out = append(out, f) })
	return out
}

// printFlags lists fs's flags the way users type them: --name VALUE.
func printFlags(w io.Writer, fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		name, usage := flag.UnquoteUsage(f)
		line := "  --" + f.Name
		if name != "" {
			line += " " + name
		}
		fmt.Fprintln(w, line)
		usage = strings.ReplaceAll(usage, "\n", "\n        ")
		if def := f.DefValue; def != "" && def != "false" && def != "0" && def != "[]" {
			if fmt.Sprintf("%T", f.Value) == "*flag.stringValue" {
				def = fmt.Sprintf("%q", def)
			}
			usage += " (default " + def + ")"
		}
		fmt.Fprintf(w, "        %s\n", usage)
	})
}

// flagInError finds the flag names in the flag package's error messages,
// which it writes with one dash.
var flagInError = regexp.MustCompile(`(defined:|argument:|for flag|value "[^"]*" for) -([A-Za-z])`)

// doubleDash rewrites a flag package error so it names flags as --flag.
func doubleDash(msg string) string {
	return flagInError.ReplaceAllString(msg, "$1 --$2")
}
