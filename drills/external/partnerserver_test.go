package external

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stormdrill/stormdrill/drills"
	"github.com/stormdrill/stormdrill/fakepartner"
)

const tokenDrill = `
name = "ps"
mode = "external"
duration = "2s"
[source]
rate = "1/s"
[[partners]]
name = "acme"
[system]
ingest_url = "http://127.0.0.1:9/events"
[partner_server]
token_env = "PS_TEST_TOKEN"
`

// With a token in the drill's token_env, the harness's partner server
// requires it on /dead-letters and the control API, leaves the partner
// paths open, and hands the token to the system as $STORMDRILL_PARTNER_TOKEN.
// Loopback only: a reachable listen is checked (and refused without a
// token) before any bind, which TestPartnerServerRefused shows.
func TestPartnerServerToken(t *testing.T) {
	const tok = "harness-token-0123456789"
	t.Setenv("PS_TEST_TOKEN", tok)
	h := harnessFor(t, "ps.toml", tokenDrill)
	if h.env[fakepartner.TokenEnv] != tok {
		t.Errorf("the system's environment has %s=%q, want the token", fakepartner.TokenEnv, h.env[fakepartner.TokenEnv])
	}
	if !strings.HasPrefix(h.base, "http://127.0.0.1:") || h.env["STORMDRILL_DEAD_LETTER_URL"] != h.base+"/dead-letters" {
		t.Fatalf("base %q, env %v", h.base, h.env)
	}
	c := &http.Client{Timeout: 10 * time.Second}
	do := func(method, url, auth, body string) int {
		t.Helper()
		req, _ := http.NewRequest(method, url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", "evt-000001:acme-0")
		if auth != "" {
			req.Header.Set("Authorization", "Bearer "+auth)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
		resp.Body.Close()
		return resp.StatusCode
	}
	dl := `{"id":"evt-000001:acme-0","reason":"max-attempts","attempts":2}`
	for _, tt := range []struct {
		method, url, auth, body string
		want                    int
	}{
		{"POST", h.env["STORMDRILL_DEAD_LETTER_URL"], "", dl, 401},
		{"POST", h.env["STORMDRILL_DEAD_LETTER_URL"], "wrong-token-0123456789", dl, 401},
		{"POST", h.env["STORMDRILL_DEAD_LETTER_URL"], tok, dl, 202},
		{"GET", h.base + "/control/partners", "", "", 401},
		{"GET", h.base + "/control/partners", tok, "", 200},
		{"POST", h.partnerURL("acme", 0), "", "{}", 200},
	} {
		if got := do(tt.method, tt.url, tt.auth, tt.body); got != tt.want {
			t.Errorf("%s %s (token %q): %d, want %d", tt.method, tt.url, tt.auth, got, tt.want)
		}
	}
	h.rec.mu.Lock()
	n := len(h.rec.dead)
	h.rec.mu.Unlock()
	if n != 1 {
		t.Errorf("%d dead letters recorded, want only the one sent with the token", n)
	}
}

// A reachable listen without the token in the environment is refused
// before anything is bound, as the drill's mistake (ErrPartnerListen); the
// URL given in the drill is what the system is told.
func TestPartnerServerRefused(t *testing.T) {
	t.Setenv("PS_TEST_TOKEN", "")
	d, err := drills.Parse("ps.toml", []byte(tokenDrill+"listen = \"0.0.0.0:18080\"\nurl = \"http://drill:18080\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckPartnerServer(d); !errors.Is(err, ErrPartnerListen) || !strings.Contains(err.Error(), "$PS_TEST_TOKEN") {
		t.Errorf("CheckPartnerServer: %v, want ErrPartnerListen naming $PS_TEST_TOKEN", err)
	}
	if _, err := newHarness(d, t.TempDir(), Options{}); !errors.Is(err, ErrPartnerListen) {
		t.Errorf("newHarness: %v, want ErrPartnerListen", err)
	}
	if got := d.PartnerServer.PartnerBaseURL(nil); got != "http://drill:18080" {
		t.Errorf("base URL %q, want the drill's url", got)
	}
}
