package fakepartner

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// wait sleeps d (at most TimeoutHoldMax); false if the caller left or the
// server closed first.
func (s *Server) wait(ctx context.Context, d time.Duration) bool {
	d = min(d, s.opts.TimeoutHoldMax)
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	case <-s.closing:
		return false
	}
}

// answerBody is the body of an answer: what writeJSON writes.
func answerBody(status int) []byte {
	var v any = map[string]any{"ok": true}
	if status != http.StatusOK {
		v = map[string]string{"error": http.StatusText(status)}
	}
	b, _ := json.Marshal(v)
	return append(b, '\n')
}

// dribble writes the headers at once and the body one byte at a time,
// evenly over d; false if the caller left (or the server closed) first.
func (s *Server) dribble(ctx context.Context, w http.ResponseWriter, status int, d time.Duration) bool {
	body := answerBody(status)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	rc := http.NewResponseController(w)
	if rc.Flush() != nil {
		return false
	}
	step := d / time.Duration(len(body))
	for i := range body {
		if !s.wait(ctx, step) {
			return false
		}
		if _, err := w.Write(body[i : i+1]); err != nil || rc.Flush() != nil {
			return false
		}
	}
	return true
}

// writeBroken takes the connection over and ends it the way wire says:
// closed with no answer (empty, and a refused partner's stray request),
// bytes that are not HTTP (garbage) or a 200 whose body stops short of
// its Content-Length (truncated). false if the connection cannot be
// hijacked (HTTP/2).
func writeBroken(w http.ResponseWriter, wire Wire) bool {
	conn, buf, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return false
	}
	defer conn.Close()
	body := answerBody(http.StatusOK)
	switch wire {
	case WireGarbage:
		_, _ = buf.WriteString(GarbageAnswer)
	case WireTruncated:
		// Twice the body promised, half of it sent.
		_, _ = fmt.Fprintf(buf, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", 2*len(body))
		_, _ = buf.Write(body[:len(body)/2])
	}
	_ = buf.Flush() // the caller may be gone; nothing to do
	return true
}

// cutAnswer takes the connection over, sends the first bytes of a status
// line and closes it: the caller gets an error and no answer. Closing
// before any byte would not do for a scripted lost answer (verify): on a
// reused connection, Go's http.Transport resends a request that carries an
// Idempotency-Key by itself, once for every reused connection it can try,
// and those resends, with the same key, could take every dropped answer
// within one attempt of the system's own, whose retry then went unseen.
// An answer cut after its first byte is not resent.
func cutAnswer(w http.ResponseWriter) bool {
	conn, buf, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return false
	}
	defer conn.Close()
	_, _ = buf.WriteString("HTTP/1.1 ")
	_ = buf.Flush() // the caller may be gone; nothing to do
	return true
}

// hijackClose takes the connection over and closes it, with a TCP RST when
// reset is true. It reports false if the connection cannot be hijacked
// (HTTP/2).
func hijackClose(w http.ResponseWriter, reset bool) bool {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return false
	}
	if l, ok := conn.(interface{ SetLinger(int) error }); ok && reset {
		_ = l.SetLinger(0) // linger 0: Close sends RST instead of FIN
	}
	_ = conn.Close()
	return true
}
