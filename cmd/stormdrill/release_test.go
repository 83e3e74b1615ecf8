package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// releaseTargets are the platforms .goreleaser.yaml builds.
var releaseTargets = [][2]string{
	{"linux", "amd64"}, {"linux", "arm64"},
	{"darwin", "amd64"}, {"darwin", "arm64"},
	{"windows", "amd64"}, {"windows", "arm64"},
}

// TestCrossBuildReleaseTargets builds the binary for every release target
// with CGO off, as the release does. Cold, it compiles the dependencies
// once per target (minutes of CPU); the build cache makes later runs
// quick. So it runs when STORMDRILL_CROSS_BUILD=1, which `make
// cross-build` (the release check at the end of `make check`) sets, and not
// on every `go test ./...` of a package under work.
func TestCrossBuildReleaseTargets(t *testing.T) {
	if os.Getenv("STORMDRILL_CROSS_BUILD") != "1" {
		t.Skip("cross-builds six targets; set STORMDRILL_CROSS_BUILD=1 (make cross-build does)")
	}
	if testing.Short() {
		t.Skip("cross-builds six targets; skipped under -short")
	}
	cfg, err := os.ReadFile("../../.goreleaser.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// The list here and the release's must agree.
	goos := regexp.MustCompile(`(?m)^\s+goos: \[(.*)\]`).FindSubmatch(cfg)
	goarch := regexp.MustCompile(`(?m)^\s+goarch: \[(.*)\]`).FindSubmatch(cfg)
	if goos == nil || goarch == nil {
		t.Fatal(".goreleaser.yaml: no goos/goarch list")
	}
	var want []string
	for _, o := range strings.Split(string(goos[1]), ", ") {
		for _, a := range strings.Split(string(goarch[1]), ", ") {
			want = append(want, o+"/"+a)
		}
	}
	var have []string
	for _, tg := range releaseTargets {
		have = append(have, tg[0]+"/"+tg[1])
	}
	if strings.Join(want, " ") != strings.Join(have, " ") {
		t.Fatalf(".goreleaser.yaml builds %v, this test %v", want, have)
	}
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	out := t.TempDir()
	// As many builds at once as there are CPUs: a cold build spends most
	// of its time compiling one very large package (the pure-Go SQLite)
	// on one core, so one build at a time leaves the others idle.
	slots := make(chan struct{}, max(1, runtime.NumCPU()))
	var wg sync.WaitGroup
	for _, tg := range releaseTargets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			slots <- struct{}{}
			defer func() { <-slots }()
			name := "stormdrill-" + tg[0] + "-" + tg[1]
			cmd := exec.Command(goBin, "build", "-trimpath", "-o", filepath.Join(out, name), ".")
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+tg[0], "GOARCH="+tg[1])
			if msg, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("%s/%s: %v\n%s", tg[0], tg[1], err, msg)
				return
			}
			if fi, err := os.Stat(filepath.Join(out, name)); err != nil || fi.Size() == 0 {
				t.Errorf("%s/%s: no binary: %v", tg[0], tg[1], err)
			}
		}()
	}
	wg.Wait()
}

// TestSummaryMDGoesToTheJobSummary: with GITHUB_STEP_SUMMARY set, run
// appends its terminal summary there; --summary-md names another file.
func TestSummaryMDGoesToTheJobSummary(t *testing.T) {
	step := filepath.Join(t.TempDir(), "step-summary.md")
	if err := os.WriteFile(step, []byte("earlier step\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GITHUB_STEP_SUMMARY", step)
	code, _, errOut := stormdrill(t, "run", "cmd/stormdrill/testdata/fanout-one.toml", "--out", t.TempDir(), "--quiet")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	got, _ := os.ReadFile(step)
	// Markdown tables, not a code block, and no local path.
	if !strings.HasPrefix(string(got), "earlier step\n### ✅ stormdrill fanout-one\n\n**PASS") ||
		!strings.Contains(string(got), "| gate | measured | verdict |") || !strings.Contains(string(got), "| `lost == 0` | 0 | ✅ pass |") ||
		!strings.Contains(string(got), "| figure") || strings.Contains(string(got), "```") || strings.Contains(string(got), os.TempDir()) {
		t.Errorf("job summary:\n%s", got)
	}
	other := filepath.Join(t.TempDir(), "summary.md")
	if code, _, _ := stormdrill(t, "run", "cmd/stormdrill/testdata/fanout-one.toml", "--out", t.TempDir(), "--quiet", "--summary-md", other); code != exitOK {
		t.Fatal("second run failed")
	}
	if b, _ := os.ReadFile(other); !strings.Contains(string(b), "stormdrill fanout-one") {
		t.Errorf("--summary-md file:\n%s", b)
	}
}
