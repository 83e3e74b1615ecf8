package dispatcher

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// With AlertToken set, every alert carries it as a bearer token (a partner
// server with a control token answers 401 otherwise); without, none is sent.
func TestAlertsCarryToken(t *testing.T) {
	const tok = "alert-token-0123456789"
	var mu sync.Mutex
	var auths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auths = append(auths, r.Header.Get("Authorization"))
		mu.Unlock()
		if r.Header.Get("Authorization") != "Bearer "+tok {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.WriteHeader(http.StatusAccepted)
	}))
	defer srv.Close()
	for _, token := range []string{tok, ""} {
		ds := &dispatcher{cfg: Config{AlertURL: srv.URL + "/alerts", AlertToken: token}, client: srv.Client(), logw: io.Discard}
		ds.postAlerts([]Alert{{Count: 2, Reason: "max-attempts", Partner: "acme"}, {Count: 1, Reason: "permanent", Partner: "acme"}})
		want := int64(2)
		if token == "" {
			want = 0
		}
		if ds.stats.AlertsSent != want {
			t.Errorf("token %q: %d alerts accepted, want %d", token, ds.stats.AlertsSent, want)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(auths) != 4 || auths[0] != "Bearer "+tok || auths[1] != "Bearer "+tok || auths[2] != "" || auths[3] != "" {
		t.Errorf("Authorization headers %q: want the token on the first two alerts and none on the last two", auths)
	}
}
