package httpguard

import (
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// Policy is what a server accepts.
//
// Without Token the server listens on loopback only, and the threat is a
// web page open in a browser on the same machine: a cross-site form post
// (CSRF) or a page whose name resolves to 127.0.0.1 (DNS rebinding).
// Refusal refuses, in this order:
//
//   - a Host that is neither a loopback address, "localhost" nor one of
//     Hosts (DNS rebinding sends the attacker's name): 421 Misdirected
//     Request;
//   - an Origin that is not the same loopback or allowed host, or
//     Sec-Fetch-Site: cross-site (a page's request carries them): 403;
//   - a POST, PUT, PATCH or DELETE without Content-Type: application/json
//     (a browser sends that type cross-origin only after a CORS preflight,
//     which these servers never grant): 415.
//
// With Token set (required to listen on a non-loopback address), the token
// comes first: a request without "Authorization: Bearer TOKEN", or with
// another token, gets 401 before anything else is looked at. The token
// then replaces the Host check, since a caller on another machine names
// the server by a non-loopback Host; the Origin and content-type checks
// still apply (a browser cannot add the Authorization header to a
// cross-site request without the preflight either).
type Policy struct {
	Token string
	// Hosts are Host names (or host:port) accepted besides loopback.
	Hosts []string
	// AnyContentType lifts the content-type check, for an endpoint that
	// reads its body as JSON whatever the type and that programs, not
	// browsers, post to (a system under drill reporting its dead letters);
	// the Origin and Sec-Fetch-Site checks still refuse a cross-site page.
	AnyContentType bool
}

// Refusal returns the status and message that refuse r, or 0 and "".
func (p Policy) Refusal(r *http.Request) (int, string) {
	if p.Token != "" && !TokenOK(r, p.Token) {
		return http.StatusUnauthorized, "this endpoint needs Authorization: Bearer TOKEN (the server's token)"
	}
	if p.Token == "" && !p.AllowedHost(r.Host) {
		return http.StatusMisdirectedRequest, fmt.Sprintf("requests must name a loopback Host (got %q)", clip(r.Host))
	}
	if o := r.Header.Get("Origin"); o != "" && o != "null" {
		u, err := url.Parse(o)
		if err != nil || !p.AllowedHost(u.Host) {
			return http.StatusForbidden, fmt.Sprintf("cross-site request refused (Origin %q)", clip(o))
		}
	} else if o == "null" {
		return http.StatusForbidden, "cross-site request refused (Origin null)"
	}
	if r.Header.Get("Sec-Fetch-Site") == "cross-site" {
		return http.StatusForbidden, "cross-site request refused (Sec-Fetch-Site: cross-site)"
	}
	switch r.Method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		if p.AnyContentType {
			break
		}
		mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
		if err != nil || mt != "application/json" {
			return http.StatusUnsupportedMediaType, "requests with a body need Content-Type: application/json"
		}
	}
	return 0, ""
}

// Wrap refuses what Refusal refuses with a JSON error {"error": "…"} and
// passes the rest to h.
func (p Policy) Wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if status, msg := p.Refusal(r); status != 0 {
			WriteError(w, status, msg)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// WriteError writes {"error": msg} with status.
func WriteError(w http.ResponseWriter, status int, msg string) {
	b, _ := json.Marshal(map[string]string{"error": msg})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// TokenOK reports whether r carries "Authorization: Bearer TOKEN" with
// this token, compared in constant time.
func TokenOK(r *http.Request, token string) bool {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(got), []byte(token)) == 1
}

// AllowedHost reports whether hostport (a Host header or an Origin's host)
// names this machine's loopback or one of Hosts.
func (p Policy) AllowedHost(hostport string) bool {
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
	for _, h := range p.Hosts {
		if strings.EqualFold(h, hostport) || strings.EqualFold(h, host) {
			return true
		}
	}
	return false
}

func clip(s string) string {
	if len(s) <= 100 {
		return s
	}
	return s[:97] + "..."
}
