package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stormdrill/stormdrill/fakepartner"
	"github.com/stormdrill/stormdrill/model/runtime/queue"
)

// dispatchBase is a valid dispatcher configuration; each case below breaks
// one thing in it.
const dispatchBase = `{
  "workers": 4,
  "claim_batch": 16,
  "lease_timeout": "30s",
  "attempt_timeout": "5s",
  "partners_url": "http://127.0.0.1:9",
  "partners": [{"name": "acme", "members": 2, "url": "/p/acme/{member}",
    "policy": {"retry": {"max_attempts": 3, "base": "1s", "cap": "10s", "jitter": "full"}}}]
}`

// storeRows is every delivery row as text: what a claim would change.
func storeRows(t *testing.T, st *queue.SQLite) string {
	t.Helper()
	rows, err := st.DB().Query(`SELECT id, state, COALESCE(lease_owner, ''), COALESCE(lease_until, 0), attempt, run_at FROM deliveries ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		var id, state, owner string
		var until, attempt, runAt int64
		if err := rows.Scan(&id, &state, &owner, &until, &attempt, &runAt); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintln(&b, id, state, owner, until, attempt, runAt)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestDispatchRefusesBadConfigBeforeClaiming: every invalid configuration
// exits 2 with "FILE: key: what is wrong", and the queue, holding due
// deliveries, is left exactly as it was.
func TestDispatchRefusesBadConfigBeforeClaiming(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "q.db")
	st, err := queue.OpenSQLite(db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var ds []queue.Delivery
	for i := 0; i < 5; i++ {
		ds = append(ds, queue.Delivery{ID: fmt.Sprintf("evt-%d:acme-%d", i, i%2), Event: fmt.Sprintf("evt-%d", i),
			Partner: fmt.Sprintf("acme-%d", i%2), Cohort: "acme", Created: time.Now().Add(-time.Minute)})
	}
	if n, err := st.Enqueue(context.Background(), ds); err != nil || n != len(ds) {
		t.Fatalf("enqueue: %d, %v", n, err)
	}
	before := storeRows(t, st)

	write := func(name, body string) string {
		p := filepath.Join(dir, name+".json")
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// The base is valid: it passes every check (and would run).
	base := write("base", dispatchBase)
	if code, _, errOut := stormdrill(t, "dispatch", "--store", "sqlite:"+db, "--config", base, "--print-config"); code != exitOK {
		t.Fatalf("the base configuration is refused (exit %d): %s", code, errOut)
	}
	r := strings.NewReplacer
	cases := []struct {
		name, body, want string
	}{
		{"workers 10000000", r(`"workers": 4`, `"workers": 10000000`).Replace(dispatchBase), "workers: must be between 1 and 100000"},
		{"workers 0", r(`"workers": 4`, `"workers": 0`).Replace(dispatchBase), "workers: must be between 1"},
		{"lease 0", r(`"lease_timeout": "30s"`, `"lease_timeout": "0s"`).Replace(dispatchBase), "lease_timeout: must be greater than 0"},
		{"lease 1ns", r(`"lease_timeout": "30s"`, `"lease_timeout": "1ns"`).Replace(dispatchBase), "lease_timeout: 1ns is 1ns of wall time"},
		{"claim batch 0", r(`"claim_batch": 16`, `"claim_batch": 0`).Replace(dispatchBase), "claim_batch: must be between 1"},
		{"claim batch -1", r(`"claim_batch": 16`, `"claim_batch": -1`).Replace(dispatchBase), "claim_batch: must be between 1"},
		{"attempt timeout 0", r(`"attempt_timeout": "5s"`, `"attempt_timeout": "0s"`).Replace(dispatchBase), "attempt_timeout: must be greater than 0"},
		{"bogus jitter", r(`"jitter": "full"`, `"jitter": "bogus"`).Replace(dispatchBase), `partners[0].policy.retry.jitter: "bogus" is not one of`},
		{"empty object", `{}`, "partners: required: at least one partner"},
		{"empty file", ``, "empty file"},
		{"unknown key", r(`"workers": 4`, `"wrokers": 4`).Replace(dispatchBase), ":2: wrokers: unknown key"},
		{"duration without unit", r(`"lease_timeout": "30s"`, `"lease_timeout": 30`).Replace(dispatchBase), "lease_timeout: want a string"},
		{"syntax error", r(`"claim_batch": 16,`, `"claim_batch": 16,,`).Replace(dispatchBase), ":3: not valid JSON"},
		{"partner off the machine", r(`"http://127.0.0.1:9"`, `"http://10.0.0.1:9"`).Replace(dispatchBase), "partners_url:"},
		{"the earlier layout", r(`{"retry": {"max_attempts": 3, "base": "1s", "cap": "10s", "jitter": "full"}}`, `{"max_attempts": 3, "base": "1s", "cap": "10s", "jitter": "full"}`).Replace(dispatchBase), "max_attempts: unknown key; a partner's policy is a drill's [policy] now: write it as policy.retry.max_attempts"},
		{"relative url without base", r(`"partners_url": "http://127.0.0.1:9",`, ``).Replace(dispatchBase), "partners[0].url: \"/p/acme/{member}\" is a path"},
	}
	for _, tc := range cases {
		path := write(strings.ReplaceAll(tc.name, " ", "-"), tc.body)
		code, _, errOut := stormdrill(t, "dispatch", "--store", "sqlite:"+db, "--config", path)
		if code != exitUsage {
			t.Errorf("%s: exit %d, want 2 (stderr %q)", tc.name, code, errOut)
		}
		if !strings.Contains(errOut, path) || !strings.Contains(errOut, tc.want) {
			t.Errorf("%s: stderr %q: want the file name and %q", tc.name, errOut, tc.want)
		}
		if after := storeRows(t, st); after != before {
			t.Fatalf("%s: the store changed:\nbefore\n%s\nafter\n%s", tc.name, before, after)
		}
	}
}

// TestDispatchIngestFlags: the ingest's flags are checked before anything
// starts (exit 2, a message naming the flag), and --partner-layout gives
// the dispatcher exactly the partners it lists, with the drill's policy.
func TestDispatchIngestFlags(t *testing.T) {
	const drill = "drills/external-dispatch.toml"
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--ingest-capacity", "10"}, "--ingest-capacity"},
		{[]string{"--ingest", "127.0.0.1:0", "--ingest-capacity", "-1"}, "--ingest-capacity"},
		{[]string{"--partner-layout", "acme"}, "--partner-layout"},
		{[]string{"--partner-layout", "acme:0"}, "--partner-layout"},
		{[]string{"--partner-layout", "acme:2,:3"}, "--partner-layout"},
		{[]string{"--partner-layout", "bad name!:2"}, "name"},
	} {
		args := append([]string{"dispatch", "--drill", drill, "--partners", "http://127.0.0.1:9", "--print-config"}, c.args...)
		code, _, errOut := stormdrill(t, args...)
		if code != exitUsage || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 naming %s", c.args, code, errOut, c.want)
		}
	}
	code, out, errOut := stormdrill(t, "dispatch", "--drill", drill, "--partners", "http://127.0.0.1:9", "--print-config",
		"--partner-layout", "clean:3,sick:8")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{`"name": "clean"`, `"members": 3`, `"name": "sick"`, `"members": 8`, `"/p/sick/{member}"`} {
		if !strings.Contains(out, want) {
			t.Errorf("config has no %s:\n%s", want, out)
		}
	}
	if strings.Contains(out, `"name": "healthy"`) {
		t.Errorf("the drill's own partners are still there:\n%s", out)
	}
}

// TestDispatchMetricsTokenRule: dispatch --metrics follows partner's rule:
// an address other machines could reach needs a token, which --token (or
// the environment) gives; the check comes before anything is read or bound.
func TestDispatchMetricsTokenRule(t *testing.T) {
	t.Setenv(fakepartner.TokenEnv, "")
	base := []string{"dispatch", "--store", "sqlite:" + filepath.Join(t.TempDir(), "q.db"), "--config", filepath.Join(t.TempDir(), "missing.json")}
	code, _, errOut := stormdrill(t, append(base, "--metrics", "0.0.0.0:0")...)
	if code != exitUsage || !strings.Contains(errOut, "--metrics") || !strings.Contains(errOut, "not a loopback address") || !strings.Contains(errOut, "--token") {
		t.Errorf("--metrics 0.0.0.0:0 without a token: exit %d, stderr %q; want 2 naming --token", code, errOut)
	}
	// With a token the address passes; what stops the command is the
	// missing configuration file.
	code, _, errOut = stormdrill(t, append(base, "--metrics", "0.0.0.0:0", "--token", strings.Repeat("k", 20))...)
	if code != exitUsage || strings.Contains(errOut, "--metrics") || !strings.Contains(errOut, "missing.json") {
		t.Errorf("--metrics 0.0.0.0:0 --token: exit %d, stderr %q; want the configuration's error, not the address's", code, errOut)
	}
}
