package fakepartner

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
)

// maxReportAnswerBytes bounds what Report reads of an answer.
const maxReportAnswerBytes = 64 << 10

// Report is the sender's side of the sinks a system under drill reports
// to (POST /dead-letters with a DeadLetter, POST /alerts with count,
// reason, partner and oldest_s): it POSTs v as JSON, with "Authorization: Bearer
// token" when token is set (a server that requires one answers 401
// without), and fails on an answer other than 2xx.
func Report(c *http.Client, url, token string, v any) error {
	body, err := json.Marshal(v)
	if err != nil {
		return err
	}
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxReportAnswerBytes))
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("POST %s: %s", url, resp.Status)
	}
	return nil
}
