package fakepartner

import (
	"crypto/subtle"
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// The control API (/control/...), the alert sink (/alerts) and the
// dead-letter endpoint (/dead-letters) change what the partners do or what
// a run reports. guardControl protects them in one of two ways.
//
// Without ServerOptions.ControlToken the server listens on loopback only
// (see Listen), and the threat is a web page open in a browser on the same
// machine: a cross-site form post (CSRF) or a page whose name resolves to
// 127.0.0.1 (DNS rebinding). It refuses, in this order:
//
//   - a Host that is neither a loopback address, "localhost" nor one of
//     ServerOptions.ControlHosts (DNS rebinding sends the attacker's name):
//     421 Misdirected Request;
//   - an Origin that is not the same loopback or allowed host, or
//     Sec-Fetch-Site: cross-site (a page's request carries them): 403;
//   - a POST or DELETE without Content-Type: application/json (a browser
//     sends that type cross-origin only after a CORS preflight, which this
//     server never grants): 415.
//
// With ControlToken set (required to listen on a non-loopback address),
// the token comes first: a request without "Authorization: Bearer TOKEN",
// or with another token, gets 401 before anything else is looked at. The
// token then replaces the Host check, since a caller on another machine
// names the server by a non-loopback Host; the Origin and content-type
// checks still apply (a browser cannot add the Authorization header to a
// cross-site request without the preflight either).
//
// The partner endpoints (/p/...) are not guarded: they are what the system
// under drill calls.

// guardControl wraps a control or alert handler with the checks above.
func (s *Server) guardControl(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if status, msg := s.controlRefusal(r); status != 0 {
			writeJSONError(w, status, msg)
			return
		}
		next(w, r)
	}
}

// controlRefusal returns the status and message that refuse r, or 0.
func (s *Server) controlRefusal(r *http.Request) (int, string) {
	tok := s.opts.ControlToken
	if tok != "" && !TokenOK(r, tok) {
		return http.StatusUnauthorized, "control requests need Authorization: Bearer TOKEN (the server's token)"
	}
	if tok == "" && !s.allowedHost(r.Host) {
		return http.StatusMisdirectedRequest, fmt.Sprintf("control requests must name a loopback Host (got %q)", clipText(r.Host, 100))
	}
	if o := r.Header.Get("Origin"); o != "" && o != "null" {
		u, err := url.Parse(o)
		if err != nil || !s.allowedHost(u.Host) {
			return http.StatusForbidden, fmt.Sprintf("cross-site control request refused (Origin %q)", clipText(o, 100))
		}
	} else if o == "null" {
		return http.StatusForbidden, "cross-site control request refused (Origin null)"
	}
	if r.Header.Get("Sec-Fetch-Site") == "cross-site" {
		return http.StatusForbidden, "cross-site control request refused (Sec-Fetch-Site: cross-site)"
	}
	if r.Method == http.MethodPost || r.Method == http.MethodDelete {
		mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
		if err != nil || mt != "application/json" {
			return http.StatusUnsupportedMediaType, "control requests need Content-Type: application/json"
		}
	}
	return 0, ""
}

// TokenOK reports whether r carries "Authorization: Bearer TOKEN" with
// this token, compared in constant time.
func TokenOK(r *http.Request, token string) bool {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(got), []byte(token)) == 1
}

// RequireToken wraps h so that, when token is not empty, a request without
// it gets 401 with a JSON error (the /metrics listener uses it).
func RequireToken(token string, h http.Handler) http.Handler {
	if token == "" {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !TokenOK(r, token) {
			writeJSONError(w, http.StatusUnauthorized, "this endpoint needs Authorization: Bearer TOKEN (the server's token)")
			return
		}
		h.ServeHTTP(w, r)
	})
}

// allowedHost reports whether hostport (a Host header or an Origin's host)
// names this machine's loopback or one of ServerOptions.ControlHosts.
func (s *Server) allowedHost(hostport string) bool {
	if hostport == "" {
		return false
	}
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return true
	}
	for _, h := range s.opts.ControlHosts {
		if strings.EqualFold(h, hostport) || strings.EqualFold(h, host) {
			return true
		}
	}
	return false
}

// clipText shortens s to at most n bytes for a message.
func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}
