package fakepartner

import (
	"net/http"
	"strings"
)

// Bad data is a property of a delivery, not of a call: whether a delivery
// carries data the partner rejects is decided from its id (the idempotency
// key) and the drill seed, so every attempt of it gets the same 422, and a
// simulated and a live drill with the same seed reject the same deliveries.
// Transient errors stay a per-call draw: they clear on retry.

// FNV-1a 64 parameters.
const (
	// KeyHashInit is the hash of the empty id; feed it to KeyHashString and
	// KeyHashByte to hash an id piece by piece without building it.
	KeyHashInit  uint64 = 14695981039346656037
	keyHashPrime uint64 = 1099511628211
)

// dataSeedSalt keeps the bad-data seed apart from the subscribers' random
// streams, which are also derived from the drill seed and the cohort name.
const dataSeedSalt uint64 = 0x6261642d64617461 // "bad-data"

// KeyHash is the 64-bit FNV-1a hash of a delivery id: the key Sim.BeginKey
// takes and the Server computes from the Idempotency-Key header.
func KeyHash(id string) uint64 { return KeyHashString(KeyHashInit, id) }

// KeyHashString continues hash h with the bytes of s:
// KeyHashString(KeyHashString(KeyHashInit, a), b) == KeyHash(a+b).
func KeyHashString(h uint64, s string) uint64 {
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= keyHashPrime
	}
	return h
}

// KeyHashByte continues hash h with one byte.
func KeyHashByte(h uint64, b byte) uint64 { return (h ^ uint64(b)) * keyHashPrime }

// DataSeed is the seed of a cohort's bad data, derived from the drill seed
// and the cohort's name (as ServerOptions.Seed and Sim.SetSeed derive it).
func DataSeed(seed uint64, cohort string) uint64 {
	return mix64(seed ^ mix64(KeyHash(cohort)^dataSeedSalt))
}

// BadData reports whether the cohort rejects the delivery with that key
// (see KeyHash) as bad data under the drill seed: then every attempt the
// partner serves is answered 422. Over many deliveries the fraction is
// PermanentErrors.
func (s *Spec) BadData(seed, key uint64) bool {
	return badData(s.PermanentErrors, DataDraw(DataSeed(seed, s.Name), key))
}

// DataDraw is the number in [0, 2^53) that the key of a delivery and its
// cohort's data seed (DataSeed) hash to: the delivery carries bad data when
// it is below PermanentErrors × 2^53. It fits in 53 bits, where the key
// takes 64, for a caller that keeps it with the delivery (Sim.BeginDrawTo).
func DataDraw(dataSeed, key uint64) uint64 { return mix64(key^dataSeed) >> 11 }

// badData: the delivery's data draw as a uniform number in [0, 1); bad
// when it is below pe.
func badData(pe float64, draw uint64) bool {
	if !(pe > 0) {
		return false
	}
	return float64(draw)*0x1p-53 < pe
}

// errorStatus decides the answer of a call the partner serves: 422, 503 or
// 200. u is the call's own uniform draw. With a key, the 422 follows the
// delivery (badData) and u decides only the transient 503, with probability
// te for a good delivery; without one, u decides both, as before keys:
// 422 with probability pe, else 503 with probability te. Either way the
// overall rates are pe and (1-pe)·te.
func errorStatus(pe, te, u float64, keyed bool, draw uint64) int {
	if keyed {
		switch {
		case badData(pe, draw):
			return http.StatusUnprocessableEntity
		case u < te:
			return http.StatusServiceUnavailable
		}
		return http.StatusOK
	}
	switch {
	case u < pe:
		return http.StatusUnprocessableEntity
	case pe < 1 && (u-pe)/(1-pe) < te: // "else, with probability te"; one draw for both
		return http.StatusServiceUnavailable
	}
	return http.StatusOK
}

// mix64 is the SplitMix64 finalizer: a bijection whose every output bit
// depends on every input bit, so that FNV's weak low bits do not show.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// withoutRunID returns a delivery id without the run id of
// ServerOptions.RunID: "evt-RUNID-000123:acme-0" → "evt-000123:acme-0".
func (s *Server) withoutRunID(id string) string {
	if s.opts.RunID == "" {
		return id
	}
	if rest, ok := strings.CutPrefix(id, "evt-"+s.opts.RunID+"-"); ok {
		return "evt-" + rest
	}
	return id
}
