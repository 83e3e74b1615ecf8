package fakepartner

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

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

// ActiveOutage is an outage in force now, as reported by the control API.
type ActiveOutage struct {
	Kind      string  `json:"kind"`
	Manual    bool    `json:"manual"`
	Members   int     `json:"members"`   // 0 = all
	Effective bool    `json:"effective"` // false in a flap's up half
	EndsInS   float64 `json:"ends_in_s"` // drill seconds, like drill_time_s
}

// PartnerState is one cohort in GET /control/partners.
type PartnerState struct {
	Name   string         `json:"name"`
	Count  int            `json:"count"`
	Active []ActiveOutage `json:"active"`
	Stats  PartnerStats   `json:"stats"`
}

type manualOutage struct {
	o     Outage    // Start 0; For and Period are drill time
	began time.Time // wall; the outage is evaluated on drill time since
}

func (s *Server) handleControlPartners(w http.ResponseWriter, r *http.Request) {
	now := s.now()
	t := s.DrillTime(now)
	out := struct {
		DrillTimeS float64        `json:"drill_time_s"`
		Partners   []PartnerState `json:"partners"`
	}{DrillTimeS: t.Seconds(), Partners: make([]PartnerState, 0, len(s.cohorts))}
	for _, c := range s.cohorts {
		ps := PartnerState{Name: c.spec.Name, Count: c.spec.Count, Active: []ActiveOutage{}}
		c.mu.Lock()
		s.pruneManual(c, now)
		for _, m := range c.manual {
			since := s.since(m.began, now)
			ps.Active = append(ps.Active, ActiveOutage{
				Kind: m.o.Kind.String(), Manual: true, Members: m.o.Members,
				Effective: m.o.EffectiveAt(since), EndsInS: (m.o.End() - since).Seconds(),
			})
		}
		ps.Stats = c.snapshot()
		cut, cutSet := c.scriptCut, c.scriptCutSet
		c.mu.Unlock()
		for i := range c.spec.Outages {
			o := &c.spec.Outages[i]
			if o.ActiveAt(t) && !(cutSet && o.Start <= cut) {
				ps.Active = append(ps.Active, ActiveOutage{
					Kind: o.Kind.String(), Members: o.Members,
					Effective: o.EffectiveAt(t), EndsInS: (o.End() - t).Seconds(),
				})
			}
		}
		out.Partners = append(out.Partners, ps)
	}
	writeJSON(w, http.StatusOK, out)
}

// pruneManual drops c's manual outages that have ended; c.mu must be held.
func (s *Server) pruneManual(c *cohort, now time.Time) {
	kept := c.manual[:0]
	for _, m := range c.manual {
		if s.since(m.began, now) < m.o.End() {
			kept = append(kept, m)
		}
	}
	clear(c.manual[len(kept):])
	c.manual = kept
}

// overlapping says which outage of c, manual or scripted, would be in
// force at once with o started now, by the drill format's rule (one
// outage at a time on a subscriber), or "". c.mu is held.
func (s *Server) overlapping(c *cohort, o Outage, now time.Time) string {
	o.Start = s.DrillTime(now)
	for _, m := range c.manual {
		other := m.o
		other.Start = s.DrillTime(m.began)
		if o.Overlaps(&other) {
			return fmt.Sprintf("partner %q already has a %s outage started by the control API until drill time %v; one outage at a time: end it first (DELETE /control/outage)", c.spec.Name, other.Kind, other.End())
		}
	}
	for i := range c.spec.Outages {
		sc := &c.spec.Outages[i]
		if c.scriptCutSet && sc.Start <= c.scriptCut {
			continue // ended by DELETE /control/outage
		}
		if o.Overlaps(sc) {
			return fmt.Sprintf("partner %q has a scripted %s outage from drill time %v to %v; one outage at a time: end it first, or start this one after it", c.spec.Name, sc.Kind, sc.Start, sc.End())
		}
	}
	return ""
}

// outageRequest is the body of POST /control/outage; durations are drill
// time, like every duration the control API reads or writes.
type outageRequest struct {
	Partner     string  `json:"partner"`
	Kind        string  `json:"kind"`
	For         string  `json:"for"`
	Members     int     `json:"members"`
	RetryAfter  string  `json:"retry_after"`
	Factor      float64 `json:"factor"`
	Period      string  `json:"period"`
	DribbleOver string  `json:"dribble_over"`
}

func (s *Server) handleStartOutage(w http.ResponseWriter, r *http.Request) {
	var req outageRequest
	if err := decodeJSON(w, r, MaxControlBodyBytes, &req); err != nil {
		writeJSONError(w, http.StatusBadRequest, err.Error())
		return
	}
	c := s.byName[req.Partner]
	if c == nil {
		writeJSONError(w, http.StatusBadRequest, fmt.Sprintf("no partner %q", req.Partner))
		return
	}
	kind, err := ParseOutageKind(req.Kind)
	if err != nil {
		writeJSONError(w, http.StatusBadRequest, err.Error())
		return
	}
	o := Outage{Kind: kind, Members: req.Members, RetryAfter: req.RetryAfter, Factor: req.Factor}
	if o.For, err = parseControlDuration("for", req.For); err != nil {
		writeJSONError(w, http.StatusBadRequest, err.Error())
		return
	}
	if req.Period != "" {
		if o.Period, err = parseControlDuration("period", req.Period); err != nil {
			writeJSONError(w, http.StatusBadRequest, err.Error())
			return
		}
	}
	if req.DribbleOver != "" {
		if o.DribbleOver, err = parseControlDuration("dribble_over", req.DribbleOver); err != nil {
			writeJSONError(w, http.StatusBadRequest, err.Error())
			return
		}
	}
	if err := o.Validate(c.spec.Count); err != nil {
		writeJSONError(w, http.StatusBadRequest, err.Error())
		return
	}
	now := s.now()
	c.mu.Lock()
	s.pruneManual(c, now)
	if len(c.manual) >= MaxManualOutages {
		c.mu.Unlock()
		writeJSONError(w, http.StatusBadRequest, fmt.Sprintf("partner %q already has %d manual outages; end them first", c.spec.Name, MaxManualOutages))
		return
	}
	if msg := s.overlapping(c, o, now); msg != "" {
		c.mu.Unlock()
		writeJSONError(w, http.StatusConflict, msg)
		return
	}
	c.manual = append(c.manual, manualOutage{o: o, began: now})
	c.mu.Unlock()
	// ends_at is an instant, so it is on the wall clock: when the outage
	// of o.For drill time will be over.
	writeJSON(w, http.StatusOK, map[string]any{"partner": c.spec.Name, "kind": kind.String(), "ends_at": now.Add(s.wall(o.For))})
}

func (s *Server) handleEndOutage(w http.ResponseWriter, r *http.Request) {
	name := r.URL.Query().Get("partner")
	c := s.byName[name]
	if c == nil {
		writeJSONError(w, http.StatusBadRequest, fmt.Sprintf("no partner %q (give ?partner=NAME)", name))
		return
	}
	now := s.now()
	t := s.DrillTime(now)
	c.mu.Lock()
	s.pruneManual(c, now)
	n := len(c.manual)
	c.manual = nil
	scripted := 0
	for i := range c.spec.Outages {
		o := &c.spec.Outages[i]
		if o.ActiveAt(t) && !(c.scriptCutSet && o.Start <= c.scriptCut) {
			scripted++
		}
	}
	// Scripted outages that have started are over; the script's later
	// outages still happen.
	c.scriptCut, c.scriptCutSet = t, true
	c.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"partner": name, "ended": n + scripted, "ended_manual": n, "ended_scripted": scripted})
}

// parseControlDuration parses a control API duration (drill time).
func parseControlDuration(key, v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 || d > MaxSample {
		return 0, fmt.Errorf("%s: want a positive duration with a unit, like \"30s\" (got %q)", key, v)
	}
	return d, nil
}

// decodeJSON decodes one JSON object of at most limit bytes, refusing
// unknown fields and trailing data.
func decodeJSON(w http.ResponseWriter, r *http.Request, limit int64, v any) error {
	return decodeJSONBody(w, r, limit, v, true)
}

// decodeJSONLoose is decodeJSON that ignores unknown fields.
func decodeJSONLoose(w http.ResponseWriter, r *http.Request, limit int64, v any) error {
	return decodeJSONBody(w, r, limit, v, false)
}

func decodeJSONBody(w http.ResponseWriter, r *http.Request, limit int64, v any, strict bool) error {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, limit))
	if strict {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(v); err != nil {
		if mbe := (*http.MaxBytesError)(nil); errors.As(err, &mbe) {
			return fmt.Errorf("body is larger than %d bytes", limit)
		}
		return fmt.Errorf("bad JSON body: %v", err)
	}
	if dec.More() {
		return errors.New("bad JSON body: more than one value")
	}
	return nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v) // the client may be gone; nothing to do
}

func writeJSONError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": msg})
}
