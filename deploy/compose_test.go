package deploy

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/loader"
	"github.com/compose-spec/compose-go/v2/types"
)

// loadCompose loads compose.yaml as docker compose does: compose-spec's
// loader, which checks the file against the Compose Specification's JSON
// schema, interpolates the environment and checks consistency (every
// depends_on, volume and network named exists).
func loadCompose(t *testing.T, env map[string]string) (*types.Project, error) {
	t.Helper()
	data, err := os.ReadFile("compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	wd, _ := os.Getwd()
	return loader.LoadWithContext(context.Background(), types.ConfigDetails{
		WorkingDir:  wd,
		ConfigFiles: []types.ConfigFile{{Filename: "compose.yaml", Content: data}},
		Environment: env,
	})
}

func TestComposeFileLoads(t *testing.T) {
	p, err := loadCompose(t, map[string]string{"STORMDRILL_PARTNER_TOKEN": "0123456789abcdef0123456789abcdef"})
	if err != nil {
		t.Fatalf("compose.yaml: %v", err)
	}
	names := p.ServiceNames()
	slices.Sort(names)
	if strings.Join(names, " ") != "drill postgres sender" {
		t.Fatalf("services %v, want drill, postgres and sender", names)
	}
	drill, sender := p.Services["drill"], p.Services["sender"]
	for _, s := range []types.ServiceConfig{drill, sender} {
		if s.Image != "stormdrill" || s.PullPolicy != types.PullPolicyNever {
			t.Errorf("%s: image %q pull_policy %q: want the locally built stormdrill, never pulled", s.Name, s.Image, s.PullPolicy)
		}
		if tok := s.Environment["STORMDRILL_PARTNER_TOKEN"]; tok == nil || *tok != "0123456789abcdef0123456789abcdef" {
			t.Errorf("%s: the token is not passed from the environment", s.Name)
		}
	}
	if len(drill.Command) < 2 || drill.Command[0] != "run" || drill.Command[1] != "/drills/compose/river.toml" {
		t.Errorf("drill: command %v: want run /drills/compose/river.toml", drill.Command)
	}
	if len(sender.Entrypoint) != 1 || sender.Entrypoint[0] != "/usr/local/bin/river-sender" {
		t.Errorf("sender: entrypoint %v", sender.Entrypoint)
	}
	if dep, ok := sender.DependsOn["postgres"]; !ok || dep.Condition != types.ServiceConditionHealthy {
		t.Errorf("sender: depends_on %v: want postgres healthy", sender.DependsOn)
	}
	if p.Services["postgres"].HealthCheck == nil {
		t.Error("postgres has no healthcheck for the sender to wait on")
	}
	if len(drill.Ports) != 1 || drill.Ports[0].Target != 8080 {
		t.Errorf("drill: ports %v: want 8080, the drill's partner server", drill.Ports)
	}
}

// Without the token the file refuses to load (${VAR:?message}), rather
// than starting a partner server that would refuse to listen.
func TestComposeFileNeedsTheToken(t *testing.T) {
	_, err := loadCompose(t, map[string]string{})
	if err == nil || !strings.Contains(err.Error(), "export a token first") {
		t.Fatalf("loaded without STORMDRILL_PARTNER_TOKEN: %v", err)
	}
}

// The loader is strict: a key the Compose Specification does not have is
// an error, so the test above could fail on a typo.
func TestComposeLoaderRefusesUnknownKeys(t *testing.T) {
	_, err := loader.LoadWithContext(context.Background(), types.ConfigDetails{
		WorkingDir:  t.TempDir(),
		ConfigFiles: []types.ConfigFile{{Filename: "bad.yaml", Content: []byte("services:\n  a:\n    image: x\n    comand: [run]\n")}},
	}, func(o *loader.Options) { o.SetProjectName("bad", true) })
	if err == nil || !strings.Contains(err.Error(), "comand") {
		t.Fatalf("a misspelt key loaded: %v", err)
	}
}
