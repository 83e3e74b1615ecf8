package dispatcher

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"time"
)

type alertKey struct{ partner, reason string }

type alertAgg struct {
	count   int
	oldestC int64 // created (drill ns) of the oldest delivery
}

// Alert is the JSON body of one DLQ alert.
type Alert struct {
	Count   int     `json:"count"`
	Reason  string  `json:"reason"`
	Partner string  `json:"partner"` // the Config.Partners entry's name
	OldestS float64 `json:"oldest_s"`
}

// flushAlerts hands the aggregated alerts to the poster. The loop calls it
// once per alert_interval; if the poster is still busy with the previous
// batch, the alerts keep aggregating until the next call (rate limit).
// final (the dispatcher is stopping) waits for the poster instead.
func (ds *dispatcher) flushAlerts(final bool) {
	if len(ds.alerts) == 0 || ds.cfg.AlertURL == "" {
		return
	}
	if !final && (ds.alertBusy.Load() || time.Now().UnixNano() < ds.alertReadyNS.Load()) {
		return
	}
	now := ds.cfg.Clock.Now().UnixNano()
	batch := make([]Alert, 0, len(ds.alerts))
	for k, a := range ds.alerts {
		batch = append(batch, Alert{Count: a.count, Reason: k.reason, Partner: k.partner, OldestS: max(0, float64(now-a.oldestC)/1e9)})
	}
	ds.alertBusy.Store(true)
	if final {
		t := time.NewTimer(alertTimeout)
		defer t.Stop()
		select {
		case ds.alertCh <- batch:
		case <-t.C:
			return
		}
	} else {
		select {
		case ds.alertCh <- batch:
		default:
			return // cannot happen while alertBusy was clear
		}
	}
	clear(ds.alerts)
}

func (ds *dispatcher) postAlerts(batch []Alert) {
	for _, a := range batch {
		body, _ := json.Marshal(a)
		ctx, cancel := context.WithTimeout(context.Background(), alertTimeout)
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, ds.cfg.AlertURL, bytes.NewReader(body))
		if err != nil {
			cancel()
			ds.logf("alert: %v", err)
			return
		}
		req.GetBody = nil
		req.Header.Set("Content-Type", "application/json")
		if ds.cfg.AlertToken != "" {
			req.Header.Set("Authorization", "Bearer "+ds.cfg.AlertToken)
		}
		resp, err := ds.client.Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, MaxResponseBytes))
			resp.Body.Close()
			if resp.StatusCode/100 == 2 {
				ds.eventsMu.Lock()
				ds.stats.AlertsSent++
				ds.eventsMu.Unlock()
			}
		} else {
			ds.logf("alert: %v", err)
		}
		cancel()
	}
}
