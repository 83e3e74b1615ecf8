package fakepartner

import (
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Observation is one request a partner saw, as the external mode records
// it: which subscriber, which delivery (the idempotency key as sent), when
// it arrived and ended (wall time), and what the partner answered.
type Observation struct {
	Cohort  string
	Member  int
	Key     string // the idempotency-key header as sent; "" when missing
	Attempt int    // the attempt header, 0 when missing or not a number
	Arrived time.Time
	Done    time.Time
	// Status is the HTTP status answered, 0 when there was no answer
	// (reset, held, caller gone, answer dropped).
	Status    int
	Reset     bool
	Held      bool // a timeout outage held it and then dropped the connection
	Abandoned bool // the caller left before the answer
	// Commit: the partner processed the delivery (a state change), even if
	// the caller never saw the answer.
	Commit    bool
	Duplicate bool // Commit for a key this partner had already accepted
	// DroppedAnswer: the partner committed, then dropped the connection
	// instead of answering (Scripted.DropAnswer).
	DroppedAnswer bool
	// Fault is the outage kind in force for this subscriber at arrival
	// ("" none).
	Fault      string
	RetryAfter string // the Retry-After header sent, "" none
	// InFlight is how many requests to this cohort were being served when
	// this one arrived, itself included.
	InFlight int
}

// Down reports whether the partner was down for this request: an outage
// was in force that leaves it not Up (OutageKindInfo.Up).
func (o *Observation) Down() bool {
	if o.Fault == "" {
		return false
	}
	k, err := ParseOutageKind(o.Fault)
	return err != nil || !k.Info().Up
}

// Scripted is an answer scripted for one request (ServerOptions.Script):
// the release checklist of `stormdrill verify` needs exact answers per
// delivery, not probabilities.
type Scripted struct {
	Status     int    // answer this status instead of the behaviour's; 0 none
	RetryAfter string // with Status: the Retry-After header sent
	DropAnswer bool   // process the delivery, then cut the connection before its answer's status line (see cutAnswer)
}

// DeadLetter is one dead letter a system under drill reported to
// POST /dead-letters.
type DeadLetter struct {
	ID       string    `json:"id"`
	Reason   string    `json:"reason"`
	Attempts int       `json:"attempts"`
	At       time.Time `json:"-"`
}

// MaxDeadLetterBodyBytes bounds one POST /dead-letters body.
const MaxDeadLetterBodyBytes = 16 << 10

func (s *Server) keyHeader() string {
	if s.opts.KeyHeader != "" {
		return s.opts.KeyHeader
	}
	return HeaderIdempotencyKey
}

func (s *Server) attemptHeader() string {
	if s.opts.AttemptHeader != "" {
		return s.opts.AttemptHeader
	}
	return HeaderAttempt
}

// handleDeadLetter takes one dead letter {"id","reason","attempts"} from the
// system under drill.
func (s *Server) handleDeadLetter(w http.ResponseWriter, r *http.Request) {
	var dl DeadLetter
	// Fields beyond id, reason and attempts are the sender's own and are
	// ignored, as in a dead_letter_command's listing.
	if err := decodeJSONLoose(w, r, MaxDeadLetterBodyBytes, &dl); err != nil {
		s.refuseReport(w, r, err.Error())
		return
	}
	dl.ID = strings.TrimSpace(dl.ID)
	switch {
	case dl.ID == "" || len(dl.ID) > MaxIDBytes:
		s.refuseReport(w, r, "id must be a delivery id (1 to 512 bytes)")
		return
	case dl.Attempts < 0:
		s.refuseReport(w, r, "attempts must not be negative")
		return
	}
	if len(dl.Reason) > 200 {
		dl.Reason = dl.Reason[:200]
	}
	dl.At = s.now()
	s.opts.OnDeadLetter(dl)
	writeJSON(w, http.StatusAccepted, map[string]any{"ok": true})
}

// observe passes one finished request to ServerOptions.Observe.
func (s *Server) observe(c *cohort, member int, id string, attempt int, arrived, done time.Time, out outcome, dup bool, inFlight int) {
	if s.opts.Observe == nil {
		return
	}
	s.opts.Observe(Observation{
		Cohort: c.spec.Name, Member: member, Key: id, Attempt: attempt,
		Arrived: arrived, Done: done, Status: out.status, Reset: out.reset && !out.dropped,
		Held: out.held, Abandoned: out.abandoned, Commit: out.commit, Duplicate: dup,
		DroppedAnswer: out.dropped, Fault: out.fault, RetryAfter: out.retryAfter, InFlight: inFlight,
	})
}

// ReportRefusal counts the requests to /alerts or /dead-letters the
// server refused: each is a report of the system under drill that the run
// lost, so a run shows them (a finding in external mode).
type ReportRefusal struct {
	Count   int64     `json:"count"`
	FirstAt time.Time `json:"first_at"`
	First   string    `json:"first"` // the first refusal: path, status and message
}

// refuseReport answers 400 to a report the server cannot take, and
// counts it.
func (s *Server) refuseReport(w http.ResponseWriter, r *http.Request, msg string) {
	s.noteReportRefused(r.URL.Path, http.StatusBadRequest, msg)
	writeJSONError(w, http.StatusBadRequest, msg)
}

func (s *Server) noteReportRefused(path string, status int, msg string) {
	s.refusedMu.Lock()
	defer s.refusedMu.Unlock()
	if s.refused.Count == 0 {
		s.refused.FirstAt = s.now()
		s.refused.First = fmt.Sprintf("POST %s answered %d: %s", clipText(path, 100), status, clipText(msg, 200))
	}
	s.refused.Count++
}

// ReportsRefused returns the refused reports so far.
func (s *Server) ReportsRefused() ReportRefusal {
	s.refusedMu.Lock()
	defer s.refusedMu.Unlock()
	return s.refused
}

// ReceivedAlert is one alert posted to /alerts.
type ReceivedAlert struct {
	At      time.Time `json:"at"`
	Count   int       `json:"count"`
	Reason  string    `json:"reason"`
	Partner string    `json:"partner"`
	OldestS float64   `json:"oldest_s"`
}

// Alerts returns the alerts received so far, oldest first.
func (s *Server) Alerts() []ReceivedAlert {
	s.alertsMu.Lock()
	defer s.alertsMu.Unlock()
	return append([]ReceivedAlert(nil), s.alerts...)
}

// AlertsDropped is how many alerts arrived after MaxAlerts were kept.
func (s *Server) AlertsDropped() int64 {
	s.alertsMu.Lock()
	defer s.alertsMu.Unlock()
	return s.alertsDropped
}

func (s *Server) handleAlert(w http.ResponseWriter, r *http.Request) {
	var a struct {
		Count   *int     `json:"count"`
		Reason  string   `json:"reason"`
		Partner string   `json:"partner"`
		OldestS *float64 `json:"oldest_s"`
	}
	if err := decodeJSON(w, r, MaxAlertBodyBytes, &a); err != nil {
		s.refuseReport(w, r, err.Error())
		return
	}
	switch {
	case a.Count == nil || *a.Count < 0:
		s.refuseReport(w, r, "count must be present and not negative")
		return
	case a.OldestS != nil && !(*a.OldestS >= 0):
		s.refuseReport(w, r, "oldest_s must not be negative")
		return
	}
	ra := ReceivedAlert{At: s.now(), Count: *a.Count, Reason: clipText(a.Reason, MaxAlertFieldBytes), Partner: clipText(a.Partner, MaxAlertFieldBytes)}
	if a.OldestS != nil {
		ra.OldestS = *a.OldestS
	}
	s.alertsMu.Lock()
	if len(s.alerts) < MaxAlerts {
		s.alerts = append(s.alerts, ra)
	} else {
		s.alertsDropped++
	}
	s.alertsMu.Unlock()
	writeJSON(w, http.StatusAccepted, map[string]any{"ok": true})
}

// Attempt is one request to a partner as the server saw it.
type Attempt struct {
	Cohort   string
	Member   int
	ID       string // Idempotency-Key ("" if none)
	Ordinal  int    // X-Attempt (0 if none)
	Arrived  time.Time
	Answered time.Time // when the server answered, reset or gave up on it
	Status   int       // HTTP status answered; 0 if none
	Reset    bool      // the connection was reset, closed or broken on purpose (reset, empty, garbage, truncated, lost-ack)
	AckLost  bool      // lost-ack: the delivery was recorded and its answer dropped
	// Refused: the caller's connection was refused. The partner never
	// sees such an attempt; the caller reports it (a live run reads the
	// dispatcher's refused events into these records).
	Refused   bool
	Held      bool // a timeout outage held it and never answered
	Abandoned bool // the caller left before the answer
	Duplicate bool // a success for a delivery id already accepted
}
