package main

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stormdrill/stormdrill/drills"
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

// composeService is one service of the compose file in docs/external.md, as far as
// the test reads it.
type composeService struct {
	image               string
	entrypoint, command []string
	env                 map[string]string
}

// readmeCompose reads the compose file in docs/external.md (the yaml block that
// starts "# compose.yaml"). It reads only what the file uses: services with
// image, entrypoint and command as flow sequences, and environment maps.
func readmeCompose(t *testing.T) map[string]*composeService {
	t.Helper()
	data, err := os.ReadFile("../../docs/external.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(data), "```yaml\n# compose.yaml\n")
	if !ok {
		t.Fatal("docs/external.md has no ```yaml block starting with # compose.yaml")
	}
	block, _, _ := strings.Cut(rest, "```")
	services := map[string]*composeService{}
	var cur *composeService
	inServices, inEnv := false, false
	for _, line := range strings.Split(block, "\n") {
		code, _, _ := strings.Cut(line, " #")
		if strings.TrimSpace(code) == "" {
			continue
		}
		indent := len(code) - len(strings.TrimLeft(code, " "))
		key, val, _ := strings.Cut(strings.TrimSpace(code), ":")
		val = strings.TrimSpace(val)
		switch {
		case indent == 0:
			inServices, cur = key == "services", nil
		case inServices && indent == 2:
			cur = &composeService{env: map[string]string{}}
			services[key] = cur
			inEnv = false
		case cur != nil && indent == 4:
			inEnv = key == "environment"
			var list []string
			if key == "entrypoint" || key == "command" {
				if err := json.Unmarshal([]byte(val), &list); err != nil {
					t.Fatalf("compose: %s: %q is not a flow sequence of strings: %v", key, val, err)
				}
			}
			switch key {
			case "image":
				cur.image = val
			case "entrypoint":
				cur.entrypoint = list
			case "command":
				cur.command = list
			}
		case cur != nil && inEnv && indent == 6:
			cur.env[key] = val
		}
	}
	return services
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

// The compose file of docs/external.md runs only subcommands and flags that exist, a
// drill the image holds, and addresses that agree with that drill: its
// partner server's URL names the drill service and the port it listens on,
// its ingest names the sender service and the port the sender listens on,
// and the sender reports dead letters to that partner server with the token
// from the environment.
func TestDocsComposeFile(t *testing.T) {
	services := readmeCompose(t)
	for _, name := range []string{"postgres", "sender", "drill"} {
		if services[name] == nil {
			t.Fatalf("compose file has no %s service (has %v)", name, services)
		}
	}
	var drill *drills.Drill
	listenPort := map[string]string{} // service → the port it listens on
	for name, svc := range services {
		if svc.image != "stormdrill" {
			continue
		}
		if len(svc.entrypoint) > 0 {
			if svc.entrypoint[0] != "/usr/local/bin/river-sender" {
				t.Errorf("%s: entrypoint %v: want /usr/local/bin/river-sender (or none: stormdrill)", name, svc.entrypoint)
				continue
			}
			known := riverSenderFlags(t)
			flags, pos := flagNames(svc.command, func(f string) bool { return known[f] })
			for _, f := range flags {
				if _, ok := known[f]; !ok {
					t.Errorf("%s: river-sender has no --%s", name, f)
				}
			}
			if len(pos) > 0 {
				t.Errorf("%s: river-sender takes no arguments (got %v)", name, pos)
			}
			for i, a := range svc.command {
				if a == "--listen" && i+1 < len(svc.command) {
					_, listenPort[name], _ = net.SplitHostPort(svc.command[i+1])
				}
			}
			continue
		}
		if len(svc.command) == 0 {
			t.Errorf("%s: no command", name)
			continue
		}
		var cmd *command
		for _, c := range commands() {
			if c.name == svc.command[0] {
				cmd = &c
			}
		}
		if cmd == nil {
			t.Errorf("%s: stormdrill has no subcommand %q", name, svc.command[0])
			continue
		}
		known := map[string]bool{}
		for _, f := range commandFlags(*cmd, nil) {
			_, isBool := f.Value.(interface{ IsBoolFlag() bool })
			known[f.Name] = !isBool
		}
		flags, pos := flagNames(svc.command[1:], func(f string) bool { return known[f] })
		for _, f := range flags {
			if _, ok := known[f]; !ok {
				t.Errorf("%s: stormdrill %s has no --%s", name, cmd.name, f)
			}
		}
		for _, p := range pos {
			rel, ok := strings.CutPrefix(p, "/drills/")
			if !ok {
				continue
			}
			d, err := drills.Load(filepath.Join("../../drills", rel), nil)
			if err != nil {
				t.Errorf("%s: %s: %v", name, p, err)
				continue
			}
			if cmd.name == "run" {
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
	for i, a := range sender.command {
		if (a == "--dead-letter-url" || a == "--alert-url") && i+1 < len(sender.command) && !strings.HasPrefix(sender.command[i+1], strings.TrimRight(ps.URL, "/")+"/") {
			t.Errorf("sender %s %s is not on the drill's partner server %s", a, sender.command[i+1], ps.URL)
		}
	}
	for _, name := range []string{"sender", "drill"} {
		if _, ok := services[name].env[ps.TokenEnv]; !ok && name == "drill" {
			t.Errorf("the drill service does not pass $%s, the drill's token_env", ps.TokenEnv)
		}
		if _, ok := services[name].env["STORMDRILL_PARTNER_TOKEN"]; !ok && name == "sender" {
			t.Error("the sender service does not get $STORMDRILL_PARTNER_TOKEN for its dead letters")
		}
	}
}
