package sim

import (
	"unsafe"

	"github.com/stormdrill/stormdrill/drills/sim/tuning"
	"github.com/stormdrill/stormdrill/fakepartner"
	"github.com/stormdrill/stormdrill/model/dispatchcore"
)

// Where the simulator turns on the CPU hints of package tuning: huge pages
// for its large slices, and prefetch of the state an event is about to
// read. At tens of thousands of subscribers each piece of a subscriber's
// state (its simulated partner, its breaker, the dispatcher core's record
// of it) is a cache and TLB miss; fetched as soon as the subscriber is
// known, they overlap instead of adding up. None of it changes a result,
// and built with the tag stormdrill_notuning none of it is on (tuning.On).

// prefetchPays reports whether n subscribers' state outgrows the caches, so
// that prefetching it pays; below that it only costs.
func prefetchPays(n int) bool { return tuning.On && n >= prefetchFrom }

// prefetchFrom is tuning.PrefetchFrom; a test sets it to 0 to check that
// prefetching changes no figure.
var prefetchFrom = tuning.PrefetchFrom

// newSubscribers returns the subscribers' slice: a large allocation starts
// on a page, so each subscriber starts a cache line (see layout.go).
func newSubscribers(n int) []subscriber {
	s := make([]subscriber, n)
	tuning.HugePagesOf(s)
	return s
}

// newCoreState returns the storage of the dispatcher core's partner records,
// one a subscriber, in subscriber order.
func newCoreState(n int) []dispatchcore.PartnerState {
	s := make([]dispatchcore.PartnerState, n)
	tuning.HugePagesOf(s)
	return s
}

// newBreakers returns n breakers' storage, in subscriber order.
func newBreakers(n int) []simBreaker {
	s := make([]simBreaker, n)
	tuning.HugePagesOf(s)
	return s
}

// maxSlabBytes bounds a slab of items (newSlab); an item's index has room
// for the places of one (see itemPlaceBits).
const maxSlabBytes = 4 << 20

// newSlab returns the next slab of items after made items: a sixteenth as
// many, from 512 items up to 4 MiB, so that the deliveries in flight span
// few pages (a 4 MiB slab holds at least one whole huge page) while the
// last slab, mostly unused when pending deliveries peak, costs at most a
// sixteenth of them (peak heap per pending delivery is what bench measures).
func newSlab(made int) []dispatchcore.Item {
	size := int(unsafe.Sizeof(dispatchcore.Item{}))
	n := min(max(made/16, 512), maxSlabBytes/size)
	s := make([]dispatchcore.Item, n)
	tuning.HugePagesOf(s)
	return s
}

// coreStateLines is how many cache lines a core partner record spans.
const coreStateLines = (unsafe.Sizeof(dispatchcore.PartnerState{}) + 63) / 64

// subscriberHot is how many bytes of a subscriber an attempt reads: up to
// the end of its partner's counters and server heap.
const subscriberHot = unsafe.Offsetof(subscriber{}.partner) + fakepartner.SimHotBytes

// prefetchStart asks for the cache lines of subscriber si's state that an
// attempt's start reads, all at once: its random stream, its simulated
// partner and its breaker.
// (The core's record of it was asked for two entries earlier, by
// prefetchRing; asked for again here, it cost about 2% at 20,000 and
// 100,000 subscribers.)
func (r *simRun) prefetchStart(si int32) {
	tuning.PrefetchLines(unsafe.Pointer(&r.subs[si]), (subscriberHot+63)/64)
	if r.breakers != nil {
		tuning.Prefetch(unsafe.Pointer(&r.breakers[si]))
	}
}

// prefetchNextEvent asks for what the next event reads if it is a
// completion: its slot, its item and what it reads of its subscriber's
// state, all named by the event, fetched while this event runs. (Reading
// the item from the slot cost a cache miss before the item could be asked
// for: a tenth of the CPU at 100,000 subscribers.)
func (r *simRun) prefetchNextEvent() {
	if next, ok := r.q.PeekEvent(); ok && next.kind() == evComplete {
		tuning.Prefetch(unsafe.Pointer(&r.slots[next.slot]))
		if it := r.items.at(next.item); it != nil {
			tuning.Prefetch(unsafe.Pointer(it))
		}
		r.prefetchCompletion(next.sub)
	}
}

// prefetchCompletion asks for what a completion reads of subscriber si's
// state: its breaker and the core's record of it. Not its simulated
// partner, which the usual completion does not read (complete takes the
// call's planned result from its slot): asked for all the same, its three
// lines cost 7-9% of the CPU at 20,000 subscribers.
func (r *simRun) prefetchCompletion(si int32) {
	if r.breakers != nil {
		tuning.Prefetch(unsafe.Pointer(&r.breakers[si]))
	}
	tuning.PrefetchLines(unsafe.Pointer(&r.coreState[si]), coreStateLines)
}

// prefetchRing asks, before each call of the core's Next, for what the next entries of
// the core's round-robin ring will read, a stage each: the core's record of
// the third, the head delivery of the second (read from its record, asked
// for a call earlier), and the rest of the state of the first after the
// one Next returns now. It asks only when the ring has moved since it last
// asked: half its calls come before a Next that takes nothing, and the
// next call (at the next event) would ask for the same lines again.
func (r *simRun) prefetchRing() {
	head, n := r.core.RingPos()
	if head == r.ringAsked[0] && n == r.ringAsked[1] {
		return
	}
	r.ringAsked = [2]int{head, n}
	if p := r.core.UpcomingAt(3); p >= 0 {
		tuning.PrefetchLines(unsafe.Pointer(&r.coreState[p]), coreStateLines)
	}
	if p := r.core.UpcomingAt(2); p >= 0 {
		if it := r.core.Head(p); it != nil {
			tuning.Prefetch(unsafe.Pointer(it))
		}
	}
	if p := r.core.Upcoming(); p >= 0 {
		r.prefetchStart(p)
	}
}

// prefetchFanout asks for the state of the subscribers a few deliveries on
// in the source's fan-out, in two stages: the core's record, then the
// breaker it points to.
func (r *simRun) prefetchFanout() {
	if k := r.heldSub + 8; k < len(r.fanout) {
		tuning.PrefetchLines(unsafe.Pointer(&r.coreState[r.fanout[k]]), coreStateLines)
		if r.breakers != nil {
			tuning.Prefetch(unsafe.Pointer(&r.breakers[r.fanout[k-4]]))
		}
	}
}

// prefetchPool asks for the freed item newItem takes after the next one:
// freed items are cold.
func (r *simRun) prefetchPool() {
	if it := r.items.upcoming(); it != nil {
		tuning.Prefetch(unsafe.Pointer(it))
	}
}
