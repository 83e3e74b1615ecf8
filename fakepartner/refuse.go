package fakepartner

import (
	"context"
	"net"
	"net/http"
	"time"
)

// A refused connection is the kernel's answer to a connect when nothing
// listens on the port: no request ever reaches a handler. All cohorts
// share the server's one listener, so to refuse calls to one cohort and
// not the others, the cohort is served on a listener of its own
// (ServeRefusing), which is closed while a refused outage is in force and
// opened again, on the same address, when it ends.

// refusePoll bounds how long a manual refused outage (control API) waits
// to take effect; scripted ones are timed exactly.
const refusePoll = 20 * time.Millisecond

// relistenFor is how long ServeRefusing keeps trying to listen again on
// its address when a refused outage ends.
const relistenFor = 5 * time.Second

// Refuses reports whether the cohort's script has a refused outage, so
// that it needs a listener of its own (ServeRefusing) to refuse calls.
func (s *Server) Refuses(cohort string) bool {
	c := s.byName[cohort]
	if c == nil {
		return false
	}
	for i := range c.spec.Outages {
		if c.spec.Outages[i].Kind.Info().ClosesListener {
			return true
		}
	}
	return false
}

// ServeRefusing serves the server's handler on l, a listener of the
// cohort's own (give its partner URLs that address), until Close: while a
// refused outage governs the cohort the listener is closed, so that
// connects to it are refused by the operating system, and requests being
// served end before their connections close; when the outage ends it
// listens on the same address again. A request that still arrives on a
// connection opened before the refusal is closed with no answer (the
// caller sees a reset, as in an empty outage). It returns
// http.ErrServerClosed after Close, or the error of listening again.
func (s *Server) ServeRefusing(cohort string, l net.Listener) error {
	c := s.byName[cohort]
	if c == nil {
		l.Close()
		return net.UnknownNetworkError("no partner " + cohort)
	}
	addr := l.Addr().String()
	for {
		hs := s.newHTTPServer()
		if !s.track(hs) {
			l.Close()
			return http.ErrServerClosed
		}
		go func() { _ = hs.Serve(newLimitListener(l, s.opts.MaxConns)) }()
		if !s.waitRefused(c, true) {
			return http.ErrServerClosed
		}
		// Shutdown closes the listener and idle connections at once and
		// the others once their requests end; it waits for them, so it
		// runs on its own. Close ends it.
		go func() {
			_ = hs.Shutdown(context.Background())
			s.untrack(hs)
		}()
		if !s.waitRefused(c, false) {
			return http.ErrServerClosed
		}
		var err error
		deadline := time.Now().Add(relistenFor)
		for l, err = net.Listen("tcp", addr); err != nil && time.Now().Before(deadline); l, err = net.Listen("tcp", addr) {
			if !s.wait(context.Background(), refusePoll) {
				return http.ErrServerClosed
			}
		}
		if err != nil {
			return err
		}
	}
}

// waitRefused waits until a refused outage governs the cohort (refused
// true) or none does (false); false if the server closed first.
func (s *Server) waitRefused(c *cohort, refused bool) bool {
	for {
		now := s.now()
		o, ok := s.faultAt(c, 0, now)
		if (ok && o.Kind.Info().ClosesListener) == refused {
			return true
		}
		if !s.wait(context.Background(), s.untilScriptChange(c, now)) {
			return false
		}
	}
}

// untilScriptChange is the wall time until the cohort's script next
// starts or ends an outage, at most refusePoll.
func (s *Server) untilScriptChange(c *cohort, now time.Time) time.Duration {
	t := s.DrillTime(now)
	next := refusePoll
	for i := range c.spec.Outages {
		o := &c.spec.Outages[i]
		for _, at := range [2]time.Duration{o.Start, o.End()} {
			if at > t {
				next = min(next, s.wall(at-t))
			}
		}
	}
	return max(next, time.Millisecond/10)
}
