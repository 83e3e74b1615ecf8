package live

import (
	"strings"
	"testing"

	"github.com/stormdrill/stormdrill/drills"
)

// A live run with a PostgreSQL store starts each dispatcher process with
// the DSN in its environment: its command line, which every user of the
// machine sees in ps, holds no part of it.
func TestDispatcherGetsTheStoreDSNThroughItsEnvironment(t *testing.T) {
	const dsn = "postgres://u:PASSWORD@127.0.0.1:5432/db?sslpassword=KEYPASS"
	r := &runner{exe: "/bin/stormdrill", dispatchConfig: "dispatcher.json", storeDSN: dsn}
	cmd := r.dispatchCommand("dispatch-1")
	argv := strings.Join(cmd.Args, " ")
	for _, secret := range []string{"PASSWORD", "KEYPASS", "postgres://", "--store"} {
		if strings.Contains(argv, secret) {
			t.Errorf("the child's argv holds %q: %s", secret, argv)
		}
	}
	found := false
	for _, e := range cmd.Env {
		found = found || e == StoreEnv+"="+dsn
	}
	if !found {
		t.Errorf("the child's environment has no %s=DSN", StoreEnv)
	}
}

// A store that cannot be opened (nothing listens on port 1) is an error
// that says so, not a panic in the runner's close.
func TestStoreThatCannotBeOpenedIsAnError(t *testing.T) {
	d, err := drills.Parse("unreachable.toml", []byte(`name = "unreachable"
mode = "live"
duration = "1s"
[source]
rate = "1/s"
[[partners]]
name = "a"
`))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Run(d, t.TempDir(), Options{Executable: testExecutable(t), Store: "postgres://u@127.0.0.1:1/db?connect_timeout=2"})
	if err == nil || !strings.Contains(err.Error(), "opening the store") {
		t.Fatalf("got %v, want an error opening the store", err)
	}
}
