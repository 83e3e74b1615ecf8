package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stormdrill/stormdrill/drills"
)

// TestHelpCommandPrintsThatCommandsHelp: `help CMD` and `CMD --help` print
// the same text, the command's own, with flags written --flag.
func TestHelpCommandPrintsThatCommandsHelp(t *testing.T) {
	for _, args := range [][]string{{"run"}, {"sweep"}, {"dlq", "replay"}} {
		code, viaHelp, _ := stormdrill(t, append([]string{"help"}, args...)...)
		if code != exitOK {
			t.Fatalf("help %v: exit %d", args, code)
		}
		_, viaFlag, _ := stormdrill(t, append(args, "--help")...)
		if viaHelp != viaFlag {
			t.Errorf("help %v and %v --help differ:\n%s\n---\n%s", args, args, viaHelp, viaFlag)
		}
		if !strings.HasPrefix(viaHelp, "Usage: stormdrill "+strings.Join(args, " ")) {
			t.Errorf("help %v does not print its own usage:\n%s", args, viaHelp)
		}
	}
	_, out, _ := stormdrill(t, "help", "run")
	// Typed flags, short forms of the common ones, defaults in the help.
	for _, want := range []string{"\n  -o, --out string ", "\n  -q, --quiet ", "\n  -s, --seed uint ", "\n      --fail-on strings ", "(default 1)"} {
		if !strings.Contains(out, want) {
			t.Errorf("help run lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "\n  -out") {
		t.Errorf("help run shows a flag with one dash:\n%s", out)
	}
	if code, _, errOut := stormdrill(t, "help", "frobnicate"); code != exitUsage || !strings.Contains(errOut, "unknown command") {
		t.Errorf("help frobnicate: exit %d, stderr %q; want 2 and the error", code, errOut)
	}
	if code, out, _ := stormdrill(t, "help"); code != exitOK || !strings.Contains(out, "completion") {
		t.Errorf("help: exit %d, want 0 and the command table:\n%s", code, out)
	}
}

func TestCompletionScriptsForEveryShell(t *testing.T) {
	for shell, marker := range map[string]string{
		"bash": "complete -o default -F __start_stormdrill stormdrill",
		"zsh":  "#compdef stormdrill",
		"fish": "complete -c stormdrill",
	} {
		code, out, errOut := stormdrill(t, "completion", shell)
		if code != exitOK || !strings.Contains(out, marker) {
			t.Errorf("completion %s: exit %d, stderr %q; script lacks %q", shell, code, errOut, marker)
		}
	}
	// A shell with no script is a usage error naming the valid ones, not
	// the completion command's help with exit 0.
	for _, args := range [][]string{{"completion", "nosuchshell"}, {"completion"}} {
		code, out, errOut := stormdrill(t, args...)
		if code != exitUsage || out != "" || !strings.Contains(errOut, "bash, fish, powershell, zsh") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 2, nothing on stdout and the valid shells", args, code, out, errOut)
		}
	}
	// The scripts call back into the binary; it offers each command's own
	// flags, read from the flag set the command parses with.
	_, out, _ := stormdrill(t, "__complete", "dlq", "replay", "--d")
	if !strings.Contains(out, "--dry-run\t") {
		t.Errorf("completing dlq replay --d: %q lacks --dry-run", out)
	}
	_, out, _ = stormdrill(t, "__complete", "sw")
	if !strings.HasPrefix(out, "sweep\t") {
		t.Errorf("completing sw: %q, want sweep", out)
	}
}

func TestFlagErrorsNameFlagsWithTwoDashes(t *testing.T) {
	code, _, errOut := stormdrill(t, "run", "--no-such-flag", "x.toml")
	if code != exitUsage || !strings.Contains(errOut, "unknown flag: --no-such-flag") {
		t.Errorf("exit %d, stderr %q; want 2 naming --no-such-flag", code, errOut)
	}
	code, _, errOut = stormdrill(t, "compare", "a", "b", "--fail-on")
	if code != exitUsage || !strings.Contains(errOut, "argument: --fail-on") {
		t.Errorf("exit %d, stderr %q; want 2 naming --fail-on", code, errOut)
	}
}

func TestVersionFromBuildInfo(t *testing.T) {
	code, out, _ := stormdrill(t, "version")
	// Under go test the main module's version is "(devel)"; what matters
	// is that the line comes from the build info (it names the toolchain).
	if code != exitOK || !strings.HasPrefix(out, "stormdrill ") || !strings.Contains(out, " go1.") {
		t.Errorf("version: exit %d, %q", code, out)
	}
}

// TestRootVersionFlags: --version and -v print the version line, as
// `version` does.
func TestRootVersionFlags(t *testing.T) {
	_, want, _ := stormdrill(t, "version")
	for _, flag := range []string{"--version", "-v"} {
		code, out, errOut := stormdrill(t, flag)
		if code != exitOK || out != want {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want 0 and %q", flag, code, out, errOut, want)
		}
	}
	code, out, _ := stormdrill(t, "version", "--json")
	var b buildInfo
	if err := json.Unmarshal([]byte(out), &b); code != exitOK || err != nil || b.Version == "" || !strings.HasPrefix(b.GoVersion, "go1.") {
		t.Errorf("version --json: exit %d, %v: %q", code, err, out)
	}
	if code, _, errOut := stormdrill(t, "--no-such-flag"); code != exitUsage || !strings.Contains(errOut, "unknown flag") {
		t.Errorf("--no-such-flag: exit %d, stderr %q; want 2", code, errOut)
	}
}

// TestCompletionOffersBundledDrills: a drill argument completes to the
// bundled drills' names.
func TestCompletionOffersBundledDrills(t *testing.T) {
	_, out, _ := stormdrill(t, "__complete", "run", "fanout-o")
	if !strings.Contains(out, "fanout-outage\tbundled drill") {
		t.Errorf("completing run fanout-o: %q lacks the bundled fanout-outage", out)
	}
	_, out, _ = stormdrill(t, "__complete", "run", "drills/fanout-o")
	if !strings.Contains(out, "drills/fanout-outage.toml\n") {
		t.Errorf("completing run drills/fanout-o: %q lacks the drill file", out)
	}
}

func TestKeysFilter(t *testing.T) {
	code, out, _ := stormdrill(t, "keys", "retry")
	if code != exitOK || !strings.Contains(out, "`policy.retry.base`") || strings.Contains(out, "`partners[].name`") {
		t.Errorf("keys retry: exit %d; want the retry keys only:\n%s", code, out)
	}
	if !strings.HasPrefix(out, "| key |") {
		t.Errorf("keys retry drops the table header:\n%s", out)
	}
	if code, _, errOut := stormdrill(t, "keys", "no-such-key"); code != exitUsage || !strings.Contains(errOut, "no drill key") {
		t.Errorf("keys no-such-key: exit %d, stderr %q; want 2", code, errOut)
	}
}

// TestKeysMarkdownIsTheDocsReference: keys --markdown writes the page
// docs/drill-keys.md is generated from, and takes no filter.
func TestKeysMarkdownIsTheDocsReference(t *testing.T) {
	code, out, _ := stormdrill(t, "keys", "--markdown")
	if code != exitOK || out != drills.KeysReferenceMarkdown() {
		t.Errorf("keys --markdown: exit %d; want drills.KeysReferenceMarkdown():\n%.300s", code, out)
	}
	if code, _, errOut := stormdrill(t, "keys", "--markdown", "retry"); code != exitUsage || !strings.Contains(errOut, "no FILTER") {
		t.Errorf("keys --markdown retry: exit %d, stderr %q; want 2", code, errOut)
	}
}

// TestStampedVersionWins: a version stamped with -ldflags "-X
// main.version=…" (release archives, the image) is the one printed.
func TestStampedVersionWins(t *testing.T) {
	defer func(v string) { version = v }(version)
	version = "v9.8.7"
	if got := versionString(); !strings.HasPrefix(got, "stormdrill v9.8.7 ") {
		t.Errorf("versionString() = %q, want the stamped v9.8.7", got)
	}
}
