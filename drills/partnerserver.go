package drills

import (
	"net"
	"net/url"
	"regexp"
	"strings"
	"sync"

	"github.com/stormdrill/stormdrill/fakepartner"
)

// PartnerServer is where an external drill's partner server listens, and
// how the system under drill reaches it. By default it is on loopback and
// reached there; a system in another container or on another machine needs
// a non-loopback listen, which needs a token (from the environment, never
// the drill file): the control API, /alerts and /dead-letters then require
// it, and the partner paths stay open.
type PartnerServer struct {
	Listen   string `toml:"listen"`    // host:port; default 127.0.0.1:0
	URL      string `toml:"url"`       // base URL the system uses; default http://LISTEN as bound
	TokenEnv string `toml:"token_env"` // environment variable holding the token
}

// Defaults of the partner_server table.
const (
	DefaultPartnerListen = "127.0.0.1:0"
	limPartnerURL        = 2048
)

var envName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`) })

func partnerServerDefaults(p *PartnerServer) {
	if p.Listen == "" {
		p.Listen = DefaultPartnerListen
	}
	if p.TokenEnv == "" {
		p.TokenEnv = fakepartner.TokenEnv
	}
}

// ListenIsLoopback reports whether the partner server listens on loopback
// only (then no token is needed).
func (p *PartnerServer) ListenIsLoopback() bool {
	host, _, err := net.SplitHostPort(p.Listen)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// validatePartnerServer checks the partner_server table. Whether the token
// is set is checked when the drill runs: it lives in the environment.
func validatePartnerServer(d *Drill, has func(string) bool, bad func(key, format string, args ...any)) {
	p := &d.PartnerServer
	if !d.IsExternal() {
		if has != nil && has("partner_server") {
			bad("partner_server", "applies only to mode = \"external\" (the live partner server and its dispatchers stay on loopback; `stormdrill partner --listen --token` serves a drill's partners to other machines)")
		}
		return
	}
	if _, port, err := net.SplitHostPort(p.Listen); err != nil || port == "" {
		bad("partner_server.listen", "%q is not HOST:PORT, like \"127.0.0.1:0\" or \"0.0.0.0:8080\"", clip(p.Listen))
	} else if !p.ListenIsLoopback() && port == "0" {
		bad("partner_server.listen", "%q: a port that other machines can reach must be fixed, not 0", clip(p.Listen))
	}
	if p.URL != "" {
		u, err := url.Parse(p.URL)
		switch {
		case len(p.URL) > limPartnerURL:
			bad("partner_server.url", "at most %d bytes", limPartnerURL)
		case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
			bad("partner_server.url", "%q is not an http(s) URL like \"http://drill:8080\"", clip(p.URL))
		case u.RawQuery != "" || u.Fragment != "" || u.User != nil:
			bad("partner_server.url", "%q: give only scheme, host, port and path", clip(p.URL))
		}
	} else if !p.ListenIsLoopback() {
		bad("partner_server.url", "required when partner_server.listen is not loopback: the base URL the system under drill reaches the partner server by, like \"http://drill:8080\"")
	}
	if !envName().MatchString(p.TokenEnv) {
		bad("partner_server.token_env", "%q is not an environment variable name", clip(p.TokenEnv))
	}
}

// PartnerBaseURL is the base URL the system under drill is given: the
// drill's partner_server.url, or http:// and the address bound.
func (p *PartnerServer) PartnerBaseURL(bound net.Addr) string {
	if p.URL != "" {
		return strings.TrimRight(p.URL, "/")
	}
	return "http://" + bound.String()
}
