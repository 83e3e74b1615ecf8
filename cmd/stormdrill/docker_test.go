package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/stormdrill/stormdrill/drills"
	"github.com/stormdrill/stormdrill/experiments"
)

// No test can build the image (no Docker daemon in CI), so this keeps the
// Dockerfile honest by reading it: several stages, CGO_ENABLED=0 where it
// builds, every `go build` path a main package of this module, the final
// stage run by a numeric non-root user, its entry point a binary it copies.
func TestDockerfile(t *testing.T) {
	data, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	type instr struct{ op, args string }
	var stages [][]instr
	joined := strings.ReplaceAll(string(data), "\\\n", " ")
	for _, line := range strings.Split(joined, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		op, args, _ := strings.Cut(line, " ")
		op = strings.ToUpper(op)
		if op == "FROM" {
			stages = append(stages, nil)
		}
		if len(stages) == 0 {
			if op != "ARG" {
				t.Fatalf("%s before the first FROM", op)
			}
			continue
		}
		stages[len(stages)-1] = append(stages[len(stages)-1], instr{op, strings.TrimSpace(args)})
	}
	if len(stages) < 2 {
		t.Fatalf("%d stages, want a build stage and a final one", len(stages))
	}
	// go -C DIR build: a module of its own (cmd/river-sender), built in its directory.
	goBuild := regexp.MustCompile(`go (?:-C (\S+) )?build ([^&;]*)`)
	var built []string // -o outputs
	cgoOff := false
	for _, st := range stages[:len(stages)-1] {
		for _, in := range st {
			if (in.op == "ENV" || in.op == "RUN") && strings.Contains(in.args, "CGO_ENABLED=0") {
				cgoOff = true
			}
			if in.op != "RUN" {
				continue
			}
			for _, m := range goBuild.FindAllStringSubmatch(in.args, -1) {
				f := strings.Fields(m[2])
				pkg := f[len(f)-1]
				if m[1] != "" {
					pkg = "./" + filepath.ToSlash(filepath.Join(m[1], pkg))
				}
				for i := range f[:len(f)-1] {
					if f[i] == "-o" {
						built = append(built, filepath.Base(f[i+1]))
					}
				}
				if !strings.HasPrefix(pkg, "./") || !isMainPackage(t, filepath.Join("../..", pkg)) {
					t.Errorf("go build %s: not a main package of this repository", pkg)
				}
			}
		}
	}
	if !cgoOff {
		t.Error("the build stages do not set CGO_ENABLED=0: the binaries on scratch must be static")
	}
	for _, want := range []string{"stormdrill", "river-sender"} {
		if !strings.Contains(" "+strings.Join(built, " ")+" ", " "+want+" ") {
			t.Errorf("the image does not build %s (built %v)", want, built)
		}
	}
	final := stages[len(stages)-1]
	var user, entry string
	for _, in := range final {
		switch in.op {
		case "USER":
			user = in.args
		case "ENTRYPOINT":
			entry = in.args
		}
	}
	uid, _, _ := strings.Cut(user, ":")
	if n, err := strconv.Atoi(uid); err != nil || n == 0 {
		t.Errorf("final stage USER %q: want a numeric non-root user (a name cannot be checked on scratch, and Kubernetes' runAsNonRoot needs a number)", user)
	}
	var ep []string
	if err := json.Unmarshal([]byte(entry), &ep); err != nil || len(ep) == 0 || filepath.Base(ep[0]) != "stormdrill" {
		t.Errorf("ENTRYPOINT %s: want the exec form running stormdrill, so the image runs any subcommand", entry)
	}
	// The image carries the drills and experiments as files, and the
	// version comes in as a build argument stamped into the binary.
	copied := map[string]bool{}
	for _, in := range final {
		if f := strings.Fields(in.args); in.op == "COPY" && len(f) > 0 {
			copied[f[len(f)-1]] = true
		}
	}
	for _, dir := range []string{"/drills", "/experiments"} {
		if !copied[dir] {
			t.Errorf("the final stage copies nothing to %s", dir)
		}
	}
	if !regexp.MustCompile(`(?m)^ARG VERSION\b`).Match(data) || !strings.Contains(joined, "-X main.version=${VERSION}") {
		t.Error("the Dockerfile does not stamp a VERSION build argument with -X main.version")
	}
	ignore, err := os.ReadFile("../../.dockerignore")
	if err != nil || !regexp.MustCompile(`(?m)^\.git$`).Match(ignore) {
		t.Errorf(".dockerignore missing or does not keep .git out of the build context (%v)", err)
	}
}

// isMainPackage reports whether dir holds a Go package named main.
func isMainPackage(t *testing.T, dir string) bool {
	t.Helper()
	pkgs, err := parser.ParseDir(token.NewFileSet(), dir, func(fi os.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, parser.PackageClauseOnly)
	if err != nil {
		return false
	}
	_, ok := pkgs["main"]
	return ok && len(pkgs) == 1
}

// composeService is one service of deploy/compose.yaml, as far as the
// test reads it (deploy's own module loads the whole file with
// compose-spec's loader and schema).
type composeService struct {
	Image       string            `yaml:"image"`
	Entrypoint  []string          `yaml:"entrypoint"`
	Command     []string          `yaml:"command"`
	Environment map[string]string `yaml:"environment"`
}

// deployCompose reads the services of deploy/compose.yaml.
func deployCompose(t *testing.T) map[string]*composeService {
	t.Helper()
	data, err := os.ReadFile("../../deploy/compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Services map[string]*composeService `yaml:"services"`
	}
	if err := yaml.Unmarshal(data, &file); err != nil {
		t.Fatalf("deploy/compose.yaml: %v", err)
	}
	return file.Services
}

// flagNames returns the long flags args uses and its positional arguments.
func flagNames(args []string, takesValue func(string) bool) (flags, pos []string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if name, ok := strings.CutPrefix(a, "--"); ok {
			name, _, hasValue := strings.Cut(name, "=")
			flags = append(flags, name)
			if !hasValue && takesValue(name) {
				i++
			}
			continue
		}
		pos = append(pos, a)
	}
	return flags, pos
}

// riverSenderFlags reads the flags cmd/river-sender defines (flag.String
// and friends) from its source.
func riverSenderFlags(t *testing.T) map[string]bool {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "../river-sender/main.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{} // name → takes a value
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || len(call.Args) == 0 {
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		if x, isIdent := sel.X.(*ast.Ident); !isIdent || x.Name != "flag" || sel.Sel.Name == "Parse" {
			return true
		}
		if lit, ok := call.Args[0].(*ast.BasicLit); ok && lit.Kind == token.STRING {
			name, _ := strconv.Unquote(lit.Value)
			out[name] = sel.Sel.Name != "Bool"
		}
		return true
	})
	if len(out) == 0 {
		t.Fatal("found no flags in cmd/river-sender")
	}
	return out
}

// deploy/compose.yaml runs only subcommands and flags that exist, a
// drill the image holds, and addresses that agree with that drill: its
// partner server's URL names the drill service and the port it listens on,
// its ingest names the sender service and the port the sender listens on,
// and the sender reports dead letters to that partner server with the token
// from the environment.
func TestDeployComposeFile(t *testing.T) {
	services := deployCompose(t)
	for _, name := range []string{"postgres", "sender", "drill"} {
		if services[name] == nil {
			t.Fatalf("compose file has no %s service (has %v)", name, services)
		}
	}
	var drill *drills.Drill
	listenPort := map[string]string{} // service → the port it listens on
	for name, svc := range services {
		if svc.Image != "stormdrill" {
			continue
		}
		if len(svc.Entrypoint) > 0 {
			if svc.Entrypoint[0] != "/usr/local/bin/river-sender" {
				t.Errorf("%s: entrypoint %v: want /usr/local/bin/river-sender (or none: stormdrill)", name, svc.Entrypoint)
				continue
			}
			known := riverSenderFlags(t)
			flags, pos := flagNames(svc.Command, func(f string) bool { return known[f] })
			for _, f := range flags {
				if _, ok := known[f]; !ok {
					t.Errorf("%s: river-sender has no --%s", name, f)
				}
			}
			if len(pos) > 0 {
				t.Errorf("%s: river-sender takes no arguments (got %v)", name, pos)
			}
			for i, a := range svc.Command {
				if a == "--listen" && i+1 < len(svc.Command) {
					_, listenPort[name], _ = net.SplitHostPort(svc.Command[i+1])
				}
			}
			continue
		}
		if len(svc.Command) == 0 {
			t.Errorf("%s: no command", name)
			continue
		}
		for _, d := range checkStormdrillArgs(t, name, svc.Command) {
			if svc.Command[0] == "run" {
				drill = d
				_, listenPort[name], _ = net.SplitHostPort(d.PartnerServer.Listen)
			}
		}
	}
	if drill == nil {
		t.Fatal("no service runs `stormdrill run` on a bundled drill")
	}
	hostPort := func(what, raw string) (string, string) {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatalf("%s %q: %v", what, raw, err)
		}
		return u.Hostname(), u.Port()
	}
	ps := drill.PartnerServer
	if ps.ListenIsLoopback() {
		t.Errorf("the compose drill's partner server listens on loopback (%s): the sender could not reach it", ps.Listen)
	}
	if h, p := hostPort("partner_server.url", ps.URL); services[h] == nil || listenPort[h] != p {
		t.Errorf("partner_server.url %s: want a service's name and the port it listens on (%v)", ps.URL, listenPort)
	}
	if h, p := hostPort("system.ingest_url", drill.System.IngestURL); services[h] == nil || listenPort[h] != p {
		t.Errorf("system.ingest_url %s: want a service's name and the port it listens on (%v)", drill.System.IngestURL, listenPort)
	}
	sender := services["sender"]
	for i, a := range sender.Command {
		if (a == "--dead-letter-url" || a == "--alert-url") && i+1 < len(sender.Command) && !strings.HasPrefix(sender.Command[i+1], strings.TrimRight(ps.URL, "/")+"/") {
			t.Errorf("sender %s %s is not on the drill's partner server %s", a, sender.Command[i+1], ps.URL)
		}
	}
	for _, name := range []string{"sender", "drill"} {
		if _, ok := services[name].Environment[ps.TokenEnv]; !ok && name == "drill" {
			t.Errorf("the drill service does not pass $%s, the drill's token_env", ps.TokenEnv)
		}
		if _, ok := services[name].Environment["STORMDRILL_PARTNER_TOKEN"]; !ok && name == "sender" {
			t.Error("the sender service does not get $STORMDRILL_PARTNER_TOKEN for its dead letters")
		}
	}
}

// checkStormdrillArgs checks a stormdrill command line written in a
// deployment file: the subcommand and every flag exist, and each drill or
// experiment it names is a file of the image (/drills/...) or a bundled
// one, and loads. It returns the drills it loaded.
func checkStormdrillArgs(t *testing.T, where string, args []string) []*drills.Drill {
	t.Helper()
	var cmd *command
	for _, c := range commands() {
		if len(args) > 0 && c.name == args[0] {
			cmd = &c
		}
	}
	if cmd == nil {
		t.Errorf("%s: %v: not a stormdrill subcommand", where, args)
		return nil
	}
	known := map[string]bool{}
	for _, f := range commandFlags(*cmd, nil) {
		_, isBool := f.Value.(interface{ IsBoolFlag() bool })
		known[f.Name] = !isBool
	}
	flags, pos := flagNames(args[1:], func(f string) bool { return known[f] })
	for _, f := range flags {
		if _, ok := known[f]; !ok {
			t.Errorf("%s: stormdrill %s has no --%s", where, cmd.name, f)
		}
	}
	var loaded []*drills.Drill
	for _, p := range pos {
		if rel, ok := strings.CutPrefix(p, "/drills/"); ok {
			d, err := drills.Load(filepath.Join("../../drills", rel), nil)
			if err != nil {
				t.Errorf("%s: %s: %v", where, p, err)
				continue
			}
			loaded = append(loaded, d)
			continue
		}
		if strings.HasPrefix(p, "/") {
			continue // a directory of the container
		}
		if _, ok := experiments.BundledExperimentName(p); ok {
			if _, err := experiments.LoadExperiment(p); err != nil {
				t.Errorf("%s: bundled experiment %s: %v", where, p, err)
			}
			continue
		}
		d, err := drills.Load(p, nil)
		if !drills.ResolvesToBundled(p) || err != nil {
			t.Errorf("%s: %s: neither a bundled drill nor a bundled experiment (%v)", where, p, err)
			continue
		}
		loaded = append(loaded, d)
	}
	return loaded
}

// TestDeployKubernetesCommands: every stormdrill container of the
// manifests in deploy/k8s runs a subcommand, flags and drills that exist
// (deploy's own module decodes the manifests strictly into Kubernetes'
// types).
func TestDeployKubernetesCommands(t *testing.T) {
	files, err := filepath.Glob("../../deploy/k8s/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests: %v", err)
	}
	type container struct {
		Name  string   `yaml:"name"`
		Image string   `yaml:"image"`
		Args  []string `yaml:"args"`
	}
	checked := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(data))
		for {
			var doc struct {
				Kind     string `yaml:"kind"`
				Metadata struct {
					Name string `yaml:"name"`
				} `yaml:"metadata"`
				Spec struct {
					Template struct {
						Spec struct {
							Containers []container `yaml:"containers"`
						} `yaml:"spec"`
					} `yaml:"template"`
				} `yaml:"spec"`
			}
			if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			for _, c := range doc.Spec.Template.Spec.Containers {
				if !strings.HasPrefix(c.Image, "stormdrill:") {
					continue
				}
				checkStormdrillArgs(t, fmt.Sprintf("%s: %s %s/%s", filepath.Base(f), doc.Kind, doc.Metadata.Name, c.Name), c.Args)
				checked++
			}
		}
	}
	if checked < 4 {
		t.Errorf("checked %d stormdrill containers; the manifests have a partner server, a dispatcher pod, an Indexed Job and a merge", checked)
	}
}
