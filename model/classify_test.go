package model

import "testing"

func TestClassifyDefaults(t *testing.T) {
	tests := []struct {
		o    Outcome
		want Class
		why  string
	}{
		{Outcome{Status: 200}, ClassSuccess, "200 OK"},
		{Outcome{Status: 201}, ClassSuccess, "201 Created"},
		{Outcome{Status: 202}, ClassSuccess, "202 Accepted"},
		{Outcome{Status: 204}, ClassSuccess, "204 No Content"},
		{Outcome{Status: 299}, ClassSuccess, "top of 2xx"},
		{Outcome{Err: ErrTimeout}, ClassRetryable, "attempt timeout"},
		{Outcome{Err: ErrRefused}, ClassRetryable, "connection refused"},
		{Outcome{Err: ErrReset}, ClassRetryable, "connection reset"},
		{Outcome{}, ClassRetryable, "no status and no error: not a success nobody saw"},
		{Outcome{Status: 408}, ClassRetryable, "408 Request Timeout"},
		{Outcome{Status: 429}, ClassRetryable, "429 Too Many Requests"},
		{Outcome{Status: 500}, ClassRetryable, "500 Internal Server Error"},
		{Outcome{Status: 502}, ClassRetryable, "502 Bad Gateway"},
		{Outcome{Status: 503}, ClassRetryable, "503 Service Unavailable"},
		{Outcome{Status: 504}, ClassRetryable, "504 Gateway Timeout"},
		{Outcome{Status: 599}, ClassRetryable, "top of 5xx"},
		{Outcome{Status: 501}, ClassPermanent, "501 Not Implemented: the exception among 5xx"},
		{Outcome{Status: 400}, ClassPermanent, "400 Bad Request"},
		{Outcome{Status: 401}, ClassPermanent, "401 Unauthorized"},
		{Outcome{Status: 403}, ClassPermanent, "403 Forbidden"},
		{Outcome{Status: 404}, ClassPermanent, "404 Not Found"},
		{Outcome{Status: 409}, ClassPermanent, "409 Conflict"},
		{Outcome{Status: 410}, ClassPermanent, "410 Gone"},
		{Outcome{Status: 422}, ClassPermanent, "422 Unprocessable: bad data"},
		{Outcome{Status: 499}, ClassPermanent, "top of 4xx"},
		{Outcome{Status: 100}, ClassPermanent, "1xx is not an answer a webhook gives"},
		{Outcome{Status: 301}, ClassPermanent, "redirect not followed: will not succeed on retry"},
		{Outcome{Status: 600}, ClassPermanent, "outside HTTP's range"},
		{Outcome{Status: -1}, ClassPermanent, "negative status"},
		{Outcome{Status: 503, RetryAfter: "5"}, ClassRetryable, "Retry-After does not change the class"},
	}
	var c Classifier
	for _, tt := range tests {
		if got := c.Classify(tt.o); got != tt.want {
			t.Errorf("%+v (%s): got %v, want %v", tt.o, tt.why, got, tt.want)
		}
		var nilC *Classifier
		if got := nilC.Classify(tt.o); got != tt.want {
			t.Errorf("nil classifier %+v (%s): got %v, want %v", tt.o, tt.why, got, tt.want)
		}
	}
}

func TestClassifyOverrides(t *testing.T) {
	c := Classifier{Overrides: map[int]Class{
		409: ClassRetryable, // a partner that answers 409 while a lock is held
		501: ClassRetryable, // a partner that misuses 501 for "not yet"
		503: ClassPermanent, // a partner that says 503 for "account disabled"
		302: ClassSuccess,   // a partner that redirects on accept
	}}
	tests := []struct {
		o    Outcome
		want Class
		why  string
	}{
		{Outcome{Status: 409}, ClassRetryable, "override turns a 4xx retryable"},
		{Outcome{Status: 501}, ClassRetryable, "override beats the 501 exception"},
		{Outcome{Status: 503}, ClassPermanent, "override turns a 5xx permanent"},
		{Outcome{Status: 302}, ClassSuccess, "override may declare success"},
		{Outcome{Status: 404}, ClassPermanent, "not overridden: default"},
		{Outcome{Status: 502}, ClassRetryable, "not overridden: default"},
		{Outcome{Status: 200}, ClassSuccess, "not overridden: default"},
		{Outcome{Err: ErrTimeout}, ClassRetryable, "overrides are per status; errors keep their class"},
	}
	for _, tt := range tests {
		if got := c.Classify(tt.o); got != tt.want {
			t.Errorf("%+v (%s): got %v, want %v", tt.o, tt.why, got, tt.want)
		}
	}
}

func TestEnumStrings(t *testing.T) {
	tests := []struct{ got, want string }{
		{ClassSuccess.String(), "success"},
		{ClassRetryable.String(), "retryable"},
		{ClassPermanent.String(), "permanent"},
		{ActAck.String(), "ack"},
		{ActReschedule.String(), "reschedule"},
		{ActDeadLetter.String(), "dead-letter"},
		{ErrTimeout.String(), "timeout"},
		{ErrRefused.String(), "refused"},
		{ErrReset.String(), "reset"},
		{ErrNone.String(), "none"},
		{StateClosed.String(), "closed"},
		{StateHalfOpen.String(), "half-open"},
		{StateOpen.String(), "open"},
		{TripConsecutive.String(), "consecutive"},
		{TripWindow.String(), "window"},
		{TripRate.String(), "rate"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
	// The reasons are the names docs/metrics.md defines; reports key on them.
	want := []Reason{"permanent", "max-attempts", "window-expired", "circuit-open", "budget-exhausted", "queue-full"}
	if len(Reasons) != len(want) {
		t.Fatalf("Reasons has %d entries, want %d", len(Reasons), len(want))
	}
	for i, r := range Reasons {
		if r != want[i] {
			t.Errorf("Reasons[%d] = %q, want %q", i, r, want[i])
		}
	}
}
