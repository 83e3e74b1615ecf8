package fakepartner

import "hash/maphash"

// idKey is a delivery id as accepted by one cohort. The id itself is not
// kept, only a 128-bit hash of it: an Idempotency-Key may be 512 bytes,
// and a million of them would take over a gigabyte. Two distinct ids share
// a hash with probability about n²/2¹²⁹, nil for any run.
type idKey struct {
	cohort int32
	h      [2]uint64
}

// idHashSeeds are per process: the hashes never leave it.
var idHashSeeds = [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}

func newIDKey(cohort int, id string) idKey {
	return idKey{cohort: int32(cohort), h: [2]uint64{maphash.String(idHashSeeds[0], id), maphash.String(idHashSeeds[1], id)}}
}

// idSet is a bounded set of accepted delivery ids: once full, the oldest id
// is forgotten (and counted), so memory stays bounded on long drills. It is
// not safe for concurrent use.
type idSet struct {
	limit   int
	members map[idKey]struct{}
	ring    []idKey // insertion order; grows to limit, then overwrites
	next    int     // ring index of the oldest id once full
}

func newIDSet(limit int) *idSet {
	return &idSet{limit: max(limit, 1), members: make(map[idKey]struct{})}
}

// add inserts k and reports whether it was already there; evicted is the
// cohort of an id forgotten to make room, or -1.
func (s *idSet) add(k idKey) (seen bool, evicted int) {
	if _, ok := s.members[k]; ok {
		return true, -1
	}
	evicted = -1
	if len(s.ring) < s.limit {
		s.ring = append(s.ring, k)
	} else {
		old := s.ring[s.next]
		delete(s.members, old)
		evicted = int(old.cohort)
		s.ring[s.next] = k
		s.next = (s.next + 1) % s.limit
	}
	s.members[k] = struct{}{}
	return false, evicted
}

func (s *idSet) has(k idKey) bool {
	_, ok := s.members[k]
	return ok
}
