package model

// Classifier maps outcomes to classes. The zero value applies the default
// lists: retryable are timeouts, refused and reset connections, 408, 429 and
// every 5xx except 501; permanent are the other 4xx and 501; 2xx succeed.
type Classifier struct {
	// Overrides maps a status code to the class to use instead of the
	// default. nil: no overrides.
	Overrides map[int]Class
}

// Classify returns the class of an outcome.
func (c *Classifier) Classify(o Outcome) Class {
	if o.Status == 0 {
		if o.Err == ErrNone {
			// No status and no error: a transport that reported nothing. Treat
			// it as retryable rather than as a success nobody saw.
			return ClassRetryable
		}
		return ClassRetryable
	}
	if c != nil && c.Overrides != nil {
		if cl, ok := c.Overrides[o.Status]; ok {
			return cl
		}
	}
	return DefaultClass(o.Status)
}

// DefaultClass is the default classification of an HTTP status.
func DefaultClass(status int) Class {
	switch {
	case status >= 200 && status < 300:
		return ClassSuccess
	case status == 408 || status == 429:
		return ClassRetryable
	case status == 501:
		return ClassPermanent
	case status >= 500 && status < 600:
		return ClassRetryable
	case status >= 400 && status < 500:
		return ClassPermanent
	}
	// 1xx and 3xx are not expected from a webhook endpoint; a redirect we do
	// not follow will not succeed on retry either.
	return ClassPermanent
}
