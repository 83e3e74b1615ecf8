package drills

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const externalBase = `
name = "ps"
mode = "external"
duration = "2s"
[source]
rate = "1/s"
[[partners]]
name = "acme"
[system]
ingest_url = "http://127.0.0.1:9/events"
`

// The partner_server table: loopback by default; a reachable listen needs
// a fixed port and the URL the system uses; it exists for external drills
// only. Each refusal names the key with the file and line.
func TestPartnerServerKeys(t *testing.T) {
	d, err := Parse("ok.toml", []byte(externalBase))
	if err != nil {
		t.Fatal(err)
	}
	if p := d.PartnerServer; p.Listen != "127.0.0.1:0" || p.TokenEnv != "STORMDRILL_PARTNER_TOKEN" || p.URL != "" || !p.ListenIsLoopback() {
		t.Errorf("defaults: %+v", p)
	}
	d, err = Parse("ok.toml", []byte(externalBase+"[partner_server]\nlisten = \"0.0.0.0:8080\"\nurl = \"http://drill:8080/\"\ntoken_env = \"DRILL_TOKEN\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if d.PartnerServer.ListenIsLoopback() || d.PartnerServer.PartnerBaseURL(nil) != "http://drill:8080" {
		t.Errorf("reachable listen: %+v, base %q", d.PartnerServer, d.PartnerServer.PartnerBaseURL(nil))
	}
	for _, tt := range []struct{ name, text, want string }{
		{"not external", strings.Replace(externalBase, `mode = "external"`, `mode = "live"`, 1) + "[partner_server]\nlisten = \"127.0.0.1:0\"\n", `bad.toml:11: partner_server: applies only to mode = "external"`},
		{"no port", externalBase + "[partner_server]\nlisten = \"0.0.0.0\"\n", "partner_server.listen: \"0.0.0.0\" is not HOST:PORT"},
		{"port 0 outside", externalBase + "[partner_server]\nlisten = \"0.0.0.0:0\"\nurl = \"http://drill:8080\"\n", "must be fixed, not 0"},
		{"no url", externalBase + "[partner_server]\nlisten = \"0.0.0.0:8080\"\n", "partner_server.url: required when partner_server.listen is not loopback"},
		{"bad url", externalBase + "[partner_server]\nlisten = \"0.0.0.0:8080\"\nurl = \"drill:8080\"\n", "is not an http(s) URL"},
		{"url with query", externalBase + "[partner_server]\nurl = \"http://drill:8080/?x=1\"\n", "give only scheme, host, port and path"},
		{"bad env name", externalBase + "[partner_server]\ntoken_env = \"MY-TOKEN\"\n", "partner_server.token_env: \"MY-TOKEN\" is not an environment variable name"},
	} {
		_, err := Parse("bad.toml", []byte(tt.text))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want %q", tt.name, err, tt.want)
		}
	}
}

// An absolute system.dir is the directory itself, not joined onto the
// drill's; a relative one is taken from the drill file's directory.
func TestAbsoluteSystemDirIsNotJoined(t *testing.T) {
	abs := t.TempDir()
	d, err := Parse(filepath.Join("testdata", "x.toml"), []byte(externalBase+"dir = "+strconv.Quote(abs)+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := d.SystemDir("testdata"); got != abs {
		t.Errorf("SystemDir = %q, want %q", got, abs)
	}
	d.System.Dir = "bad"
	if got := d.SystemDir("testdata"); got != filepath.Join("testdata", "bad") {
		t.Errorf("SystemDir = %q, want testdata/bad", got)
	}
}
