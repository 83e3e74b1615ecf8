package fakepartner

import (
	"net/http"

	"github.com/stormdrill/stormdrill/model/runtime/httpguard"
)

// The control API (/control/...), the alert sink (/alerts) and the
// dead-letter endpoint (/dead-letters) change what the partners do or what
// a run reports. guardControl protects them with httpguard's one check
// (the same the dispatcher's ingest and every /metrics use): without
// ServerOptions.ControlToken, a foreign Host gets 421 (DNS rebinding), a
// foreign Origin or Sec-Fetch-Site: cross-site 403 (CSRF), a POST or
// DELETE that is not application/json 415; with the token, a request
// without it gets 401 first, and the token replaces the Host check.
//
// The partner endpoints (/p/...) are not guarded: they are what the system
// under drill calls.
//
// /alerts and /dead-letters are what the system under drill reports to,
// and many a sender posts JSON without saying so (or as curl's default
// form type): guardReport takes their bodies as JSON whatever the
// Content-Type. The other checks still keep a browser out: a cross-site
// POST carries an Origin (or Sec-Fetch-Site) that is refused, and a
// rebinding page a Host that is.

// guardControl wraps a control handler with the checks above.
func (s *Server) guardControl(next http.HandlerFunc) http.HandlerFunc {
	return s.guard().Wrap(next).ServeHTTP
}

// guardReport wraps the alert and dead-letter handlers: the checks above
// but the Content-Type; a refusal is counted (see ReportsRefused).
func (s *Server) guardReport(next http.HandlerFunc) http.HandlerFunc {
	p := s.guard()
	p.AnyContentType = true
	return func(w http.ResponseWriter, r *http.Request) {
		if status, msg := p.Refusal(r); status != 0 {
			s.noteReportRefused(r.URL.Path, status, msg)
			httpguard.WriteError(w, status, msg)
			return
		}
		next(w, r)
	}
}

// guard is the server's policy for everything but the partner endpoints.
func (s *Server) guard() httpguard.Policy {
	return httpguard.Policy{Token: s.opts.ControlToken, Hosts: s.opts.ControlHosts}
}

// TokenOK reports whether r carries "Authorization: Bearer TOKEN" with
// this token, compared in constant time.
func TokenOK(r *http.Request, token string) bool { return httpguard.TokenOK(r, token) }

// Guard wraps h with httpguard's checks (every /metrics listener uses
// it): when token is set, a request without it gets 401 with a JSON
// error; without one, a foreign Host, Origin or content type is refused.
func Guard(token string, h http.Handler) http.Handler {
	return httpguard.Policy{Token: token}.Wrap(h)
}

// clipText shortens s to at most n bytes for a message.
func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}
