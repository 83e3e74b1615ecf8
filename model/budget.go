package model

import "math"

// Budget is a retry token bucket with gRPC's retry-throttling semantics: it
// starts full at MaxTokens; every failure takes one token, every success
// adds TokenRatio; a retry is allowed only while tokens > MaxTokens/2. First
// attempts are never refused, so successes can refill it.
//
// Tokens are kept in thousandths, as gRPC does, so that the bucket is exact
// and the same on every platform.
type Budget struct {
	max, ratio, tokens int64 // milli-tokens
}

// NewBudget returns a full bucket. maxTokens must be > 0.
func NewBudget(maxTokens, tokenRatio float64) *Budget {
	// Round, not truncate: 1.001 × 1000 is 1000.9999999999999 as a float.
	m := int64(math.Round(maxTokens * 1000))
	return &Budget{max: m, ratio: int64(math.Round(tokenRatio * 1000)), tokens: m}
}

// RecordFailure takes one token.
func (b *Budget) RecordFailure() {
	b.tokens -= 1000
	if b.tokens < 0 {
		b.tokens = 0
	}
}

// RecordSuccess adds TokenRatio tokens, up to MaxTokens.
func (b *Budget) RecordSuccess() {
	b.tokens += b.ratio
	if b.tokens > b.max {
		b.tokens = b.max
	}
}

// AllowRetry reports whether a retry may be made now.
func (b *Budget) AllowRetry() bool { return b.tokens > b.max/2 }

// Tokens is the current token count.
func (b *Budget) Tokens() float64 { return float64(b.tokens) / 1000 }
