package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stormdrill/stormdrill/drills"
	"github.com/stormdrill/stormdrill/fakepartner"
)

// A listen address other machines could reach is refused without a token,
// with exit status 2 and a message naming the way out. The check comes
// before anything is bound: had 0.0.0.0:0 been bound, the command would be
// serving (until a signal) instead of returning. No test binds anything but
// loopback.
func TestPartnerRemoteListenNeedsToken(t *testing.T) {
	t.Setenv(fakepartner.TokenEnv, "")
	path := filepath.Join(t.TempDir(), "p.toml")
	if err := os.WriteFile(path, []byte(partnerDrill), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"--listen", "0.0.0.0:0"},
		{"--listen", ":0"},
		{"--listen", "[::]:0"},
		{"--listen", "192.0.2.10:0"},                  // a documentation address: binding it would fail differently
		{"--listen", "partner.invalid:0"},             // a host name: resolving it would fail differently
		{"--metrics", "0.0.0.0:0"},                    // the metrics listener follows the same rule
		{"--listen", "0.0.0.0:0", "--token", "short"}, // a token too short to be one
	} {
		code, stdout, stderr := stormdrill(t, append([]string{"partner", path}, args...)...)
		if code != exitUsage {
			t.Errorf("partner %v: exit %d, want 2 (stderr %q)", args, code, stderr)
		}
		if stdout != "" {
			t.Errorf("partner %v: printed %q: it served", args, stdout)
		}
		want := "not a loopback address"
		if args[len(args)-1] == "short" {
			want = "16 to 256 characters"
		}
		if !strings.Contains(stderr, want) {
			t.Errorf("partner %v: stderr %q lacks %q", args, stderr, want)
		}
		if want == "not a loopback address" && (!strings.Contains(stderr, "--token") || !strings.Contains(stderr, fakepartner.TokenEnv)) {
			t.Errorf("partner %v: stderr %q should name --token and $%s", args, stderr, fakepartner.TokenEnv)
		}
	}
}

// With a token, the partner command's control API, alert sink and /metrics
// answer 401 without it or with a wrong one, and 2xx with it; the partner
// paths answer without it.
func TestPartnerTokenGuardsControlAndMetrics(t *testing.T) {
	const tok = "cli-token-0123456789abcdef"
	path := filepath.Join(t.TempDir(), "p.toml")
	if err := os.WriteFile(path, []byte(partnerDrill), 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := drills.Load(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	var stderr bytes.Buffer
	done := make(chan error, 1)
	go func() {
		done <- servePartnersMetrics(ctx, d, partnerServe{listen: "127.0.0.1:0", token: tok, metrics: "127.0.0.1:0"}, pw, &stderr)
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, pr)
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("partner server: %v", err)
		}
	}()
	base := strings.TrimSpace(line)
	// Everything on stderr was written before the base URL on stdout.
	m := regexp.MustCompile(`metrics: (http://\S+/metrics)`).FindStringSubmatch(stderr.String())
	if m == nil {
		t.Fatalf("no metrics URL on stderr: %q", stderr.String())
	}
	do := func(method, url, auth, body string) int {
		t.Helper()
		req, _ := http.NewRequest(method, url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", "evt-1:up-0")
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, ep := range []struct{ method, url, body string }{
		{"GET", base + "/control/partners", ""},
		{"POST", base + "/control/outage", `{"partner":"up","kind":"unavailable","for":"5m"}`},
		{"POST", base + "/alerts", `{"count":1}`},
		{"GET", m[1], ""},
	} {
		for _, auth := range []string{"", "Bearer wrong-token-0123456789"} {
			if got := do(ep.method, ep.url, auth, ep.body); got != 401 {
				t.Errorf("%s %s with Authorization %q: %d, want 401", ep.method, ep.url, auth, got)
			}
		}
		if got := do(ep.method, ep.url, "Bearer "+tok, ep.body); got < 200 || got > 299 {
			t.Errorf("%s %s with the token: %d, want 2xx", ep.method, ep.url, got)
		}
	}
	// The outage started with the token is in force on `up`; `acme` is in
	// its scripted outage. Both answer without a token.
	if got := do("POST", base+"/p/up/0", "", "{}"); got != 503 {
		t.Errorf("partner path during the manual outage: %d, want 503", got)
	}
	if got := do("POST", base+"/p/acme/0", "", "{}"); got != 503 {
		t.Errorf("partner path in the scripted outage: %d, want 503", got)
	}
}

// `stormdrill run` refuses an external drill whose partner server would be
// reachable from other machines without a token: exit 2, the file and the
// key named, nothing written, nothing bound.
func TestRunExternalRemoteListenNeedsToken(t *testing.T) {
	t.Setenv("RUN_TEST_TOKEN", "")
	dir := t.TempDir()
	path := filepath.Join(dir, "remote.toml")
	drill := `name = "remote"
mode = "external"
duration = "2s"
[source]
rate = "1/s"
[[partners]]
name = "acme"
[system]
ingest_url = "http://127.0.0.1:9/events"
[partner_server]
listen = "0.0.0.0:18080"
url = "http://drill:18080"
token_env = "RUN_TEST_TOKEN"
`
	if err := os.WriteFile(path, []byte(drill), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	code, _, stderr := stormdrill(t, "run", path, "--out", out, "--quiet")
	if code != exitUsage || !strings.Contains(stderr, "partner_server.listen") || !strings.Contains(stderr, "$RUN_TEST_TOKEN") || !strings.Contains(stderr, "remote.toml") {
		t.Errorf("run: exit %d, stderr %q; want 2 naming the file, partner_server.listen and $RUN_TEST_TOKEN", code, stderr)
	}
	if entries, _ := os.ReadDir(out); len(entries) > 0 {
		t.Errorf("the refused run wrote %d entries under --out", len(entries))
	}
	// verify refuses the same drill the same way, before writing anything.
	vout := filepath.Join(dir, "verify-out")
	code, _, stderr = stormdrill(t, "verify", path, "--out", vout)
	if code != exitUsage || !strings.Contains(stderr, "partner_server.listen") || !strings.Contains(stderr, "$RUN_TEST_TOKEN") {
		t.Errorf("verify: exit %d, stderr %q; want 2 naming partner_server.listen and $RUN_TEST_TOKEN", code, stderr)
	}
	if _, err := os.Stat(vout); !os.IsNotExist(err) {
		t.Errorf("the refused verify created %s (stat: %v)", vout, err)
	}
}
