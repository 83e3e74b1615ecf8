package model

import (
	"math/rand/v2"
	"testing"
	"time"
	"unsafe"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func sec(n float64) time.Duration { return time.Duration(n * float64(time.Second)) }

// recorder collects transitions.
type recorder struct{ got []Transition }

func (r *recorder) on(tr Transition) { r.got = append(r.got, tr) }

func newRecorded(s BreakerSettings) (*Breaker, *recorder) {
	b := NewBreaker(s)
	r := &recorder{}
	b.OnTransition = r.on
	return b, r
}

// call admits a call at now and records its result at the same time.
func call(t *testing.T, b *Breaker, now time.Time, success bool) {
	t.Helper()
	gen, ok := b.Admit(now)
	if !ok {
		t.Fatalf("call at %v refused in state %v", now.Sub(t0), b.State(now))
	}
	b.Record(gen, success, now)
}

func wantTransitions(t *testing.T, got []Transition, want ...Transition) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("transitions: got %v, want %v", got, want)
	}
	for i := range want {
		if !got[i].At.Equal(want[i].At) || got[i].From != want[i].From || got[i].To != want[i].To {
			t.Fatalf("transition %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestParseTripRule(t *testing.T) {
	for _, tt := range []struct {
		s    string
		want TripRule
		ok   bool
	}{
		{"consecutive", TripConsecutive, true},
		{"window", TripWindow, true},
		{"rate", TripRate, true},
		{"Rate", 0, false},
		{"", 0, false},
	} {
		got, err := ParseTripRule(tt.s)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParseTripRule(%q) = %v, %v", tt.s, got, err)
		}
	}
}

func TestBreakerDefaults(t *testing.T) {
	s := NewBreaker(BreakerSettings{}).Settings()
	want := BreakerSettings{Trip: TripConsecutive, Threshold: 5, Window: 60 * time.Second, Ratio: 0.5, MinCalls: 10, Cooldown: 30 * time.Second, Probes: 1}
	if s != want {
		t.Errorf("defaults: got %+v, want %+v", s, want)
	}
}

func TestBreakerConsecutive(t *testing.T) {
	t.Run("Given a closed breaker with threshold 3, when 3 failures arrive in a row, then it opens at the third", func(t *testing.T) {
		b, r := newRecorded(BreakerSettings{Threshold: 3, Cooldown: 30 * time.Second})
		call(t, b, t0, false)
		call(t, b, t0.Add(sec(1)), false)
		if b.State(t0.Add(sec(1))) != StateClosed {
			t.Fatal("opened before the threshold")
		}
		call(t, b, t0.Add(sec(2)), false)
		wantTransitions(t, r.got, Transition{t0.Add(sec(2)), StateClosed, StateOpen})
		if _, ok := b.Admit(t0.Add(sec(3))); ok {
			t.Fatal("open breaker admitted a call")
		}
		if !b.OpenUntil().Equal(t0.Add(sec(32))) {
			t.Fatalf("OpenUntil = %v", b.OpenUntil())
		}
	})
	t.Run("Given 2 failures, when a success arrives, then the count starts again", func(t *testing.T) {
		b, r := newRecorded(BreakerSettings{Threshold: 3})
		call(t, b, t0, false)
		call(t, b, t0, false)
		call(t, b, t0, true)
		call(t, b, t0, false)
		call(t, b, t0, false)
		if len(r.got) != 0 {
			t.Fatalf("tripped: %v", r.got)
		}
		call(t, b, t0, false)
		wantTransitions(t, r.got, Transition{t0, StateClosed, StateOpen})
	})
	t.Run("Given an open breaker, when the cooldown passes, then the transition to half-open is reported at the cooldown's end, not when observed", func(t *testing.T) {
		b, r := newRecorded(BreakerSettings{Threshold: 1, Cooldown: 30 * time.Second})
		call(t, b, t0, false)
		if b.State(t0.Add(sec(29.999))) != StateOpen {
			t.Fatal("half-open before the cooldown ended")
		}
		if b.State(t0.Add(sec(100))) != StateHalfOpen {
			t.Fatal("not half-open after the cooldown")
		}
		wantTransitions(t, r.got,
			Transition{t0, StateClosed, StateOpen},
			Transition{t0.Add(sec(30)), StateOpen, StateHalfOpen})
	})
}

func TestBreakerLateResults(t *testing.T) {
	trip := func() (*Breaker, *recorder, []uint64) {
		b, r := newRecorded(BreakerSettings{Threshold: 3, Cooldown: 30 * time.Second})
		var gens []uint64
		for i := 0; i < 5; i++ { // five calls in flight at t0
			g, ok := b.Admit(t0)
			if !ok {
				t.Fatal("closed breaker refused")
			}
			gens = append(gens, g)
		}
		for i := 0; i < 3; i++ {
			b.Record(gens[i], false, t0.Add(sec(1)))
		}
		return b, r, gens[3:]
	}
	t.Run("Given an open breaker, when a late failure from before the trip arrives, then the cooldown does not restart", func(t *testing.T) {
		b, r, late := trip()
		b.Record(late[0], false, t0.Add(sec(20)))
		if b.Stale != 1 {
			t.Fatalf("Stale = %d, want 1", b.Stale)
		}
		if !b.OpenUntil().Equal(t0.Add(sec(31))) {
			t.Fatalf("cooldown restarted: open until %v", b.OpenUntil().Sub(t0))
		}
		if b.State(t0.Add(sec(31))) != StateHalfOpen {
			t.Fatal("not half-open at the original cooldown end")
		}
		wantTransitions(t, r.got,
			Transition{t0.Add(sec(1)), StateClosed, StateOpen},
			Transition{t0.Add(sec(31)), StateOpen, StateHalfOpen})
	})
	t.Run("Given an open breaker, when a late success from before the trip arrives, then it stays open", func(t *testing.T) {
		b, r, late := trip()
		b.Record(late[0], true, t0.Add(sec(5)))
		if b.State(t0.Add(sec(5))) != StateOpen || b.Stale != 1 || len(r.got) != 1 {
			t.Fatalf("state %v stale %d transitions %v", b.State(t0.Add(sec(5))), b.Stale, r.got)
		}
	})
	t.Run("Given a half-open breaker, when a late failure from before the trip arrives, then it does not reopen and the probe is still admitted", func(t *testing.T) {
		b, r, late := trip()
		b.Record(late[0], false, t0.Add(sec(40)))
		if b.State(t0.Add(sec(40))) != StateHalfOpen || b.Stale != 1 {
			t.Fatalf("state %v stale %d", b.State(t0.Add(sec(40))), b.Stale)
		}
		if _, ok := b.Admit(t0.Add(sec(40))); !ok {
			t.Fatal("probe refused after a stale result")
		}
		if len(r.got) != 2 {
			t.Fatalf("transitions %v", r.got)
		}
	})
	t.Run("Given a breaker that closed again, when a failure from before the first trip arrives, then it counts toward nothing", func(t *testing.T) {
		b, _, late := trip()
		call(t, b, t0.Add(sec(40)), true) // the probe closes it
		if b.State(t0.Add(sec(40))) != StateClosed {
			t.Fatal("probe success did not close")
		}
		b.Record(late[0], false, t0.Add(sec(41)))
		b.Record(late[1], false, t0.Add(sec(41)))
		call(t, b, t0.Add(sec(42)), false)
		call(t, b, t0.Add(sec(42)), false)
		if b.State(t0.Add(sec(42))) != StateClosed || b.Stale != 2 {
			t.Fatalf("state %v stale %d: late failures counted", b.State(t0.Add(sec(42))), b.Stale)
		}
	})
}

func TestBreakerHalfOpenProbes(t *testing.T) {
	open := func() (*Breaker, *recorder, time.Time) {
		b, r := newRecorded(BreakerSettings{Threshold: 1, Cooldown: 10 * time.Second, Probes: 3})
		call(t, b, t0, false)
		return b, r, t0.Add(sec(10))
	}
	admit3 := func(t *testing.T, b *Breaker, at time.Time) []uint64 {
		t.Helper()
		var gens []uint64
		for i := 0; i < 3; i++ {
			g, ok := b.Admit(at)
			if !ok {
				t.Fatalf("probe %d refused", i+1)
			}
			gens = append(gens, g)
		}
		return gens
	}
	t.Run("Given a half-open breaker with probes=3, when four calls ask, then three are admitted and the fourth refused", func(t *testing.T) {
		b, _, at := open()
		admit3(t, b, at)
		if _, ok := b.Admit(at); ok {
			t.Fatal("fourth probe admitted")
		}
		if b.State(at) != StateHalfOpen {
			t.Fatal("not half-open")
		}
	})
	t.Run("Given three probes in flight, when all three succeed, then it closes at the third success", func(t *testing.T) {
		b, r, at := open()
		gens := admit3(t, b, at)
		b.Record(gens[0], true, at.Add(sec(1)))
		b.Record(gens[1], true, at.Add(sec(2)))
		if b.State(at.Add(sec(2))) != StateHalfOpen {
			t.Fatal("closed before the third success")
		}
		b.Record(gens[2], true, at.Add(sec(3)))
		wantTransitions(t, r.got,
			Transition{t0, StateClosed, StateOpen},
			Transition{at, StateOpen, StateHalfOpen},
			Transition{at.Add(sec(3)), StateHalfOpen, StateClosed})
	})
	t.Run("Given three probes in flight, when one fails after two successes, then it reopens for another cooldown and the last probe is stale", func(t *testing.T) {
		b, r, at := open()
		gens := admit3(t, b, at)
		b.Record(gens[0], true, at.Add(sec(1)))
		b.Record(gens[1], false, at.Add(sec(2)))
		b.Record(gens[2], true, at.Add(sec(3)))
		if b.Stale != 1 {
			t.Fatalf("Stale = %d, want 1", b.Stale)
		}
		if !b.OpenUntil().Equal(at.Add(sec(12))) {
			t.Fatalf("open until %v, want a cooldown from the failure", b.OpenUntil().Sub(t0))
		}
		if _, ok := b.Admit(at.Add(sec(11))); ok {
			t.Fatal("admitted during the second cooldown")
		}
		wantTransitions(t, r.got,
			Transition{t0, StateClosed, StateOpen},
			Transition{at, StateOpen, StateHalfOpen},
			Transition{at.Add(sec(2)), StateHalfOpen, StateOpen})
	})
	t.Run("Given a reopened breaker, when the next cooldown ends, then three fresh probes are admitted", func(t *testing.T) {
		b, _, at := open()
		gens := admit3(t, b, at)
		b.Record(gens[0], false, at)
		admit3(t, b, at.Add(sec(10)))
	})
}

func TestBreakerRate(t *testing.T) {
	s := BreakerSettings{Trip: TripRate, Ratio: 0.5, MinCalls: 10, Window: 60 * time.Second, Cooldown: 30 * time.Second}
	t.Run("Given a rate breaker with MinCalls 10, when 9 calls all fail, then it stays closed", func(t *testing.T) {
		b, r := newRecorded(s)
		for i := 0; i < 9; i++ {
			call(t, b, t0.Add(sec(float64(i))), false)
		}
		if b.State(t0.Add(sec(9))) != StateClosed || len(r.got) != 0 {
			t.Fatalf("tripped below MinCalls: %v", r.got)
		}
	})
	t.Run("Given 9 failed calls, when the 10th fails, then it opens", func(t *testing.T) {
		b, r := newRecorded(s)
		for i := 0; i < 10; i++ {
			call(t, b, t0.Add(sec(float64(i))), false)
		}
		wantTransitions(t, r.got, Transition{t0.Add(sec(9)), StateClosed, StateOpen})
	})
	t.Run("Given 6 successes then 4 failures, when the ratio is 40%, then it stays closed; a 5th failure at 5/11 stays closed; the 6th at 6/12 opens", func(t *testing.T) {
		b, r := newRecorded(s)
		for i := 0; i < 6; i++ {
			call(t, b, t0, true)
		}
		for i := 0; i < 5; i++ {
			call(t, b, t0, false)
		}
		if len(r.got) != 0 {
			t.Fatalf("tripped at 5/11: %v", r.got)
		}
		call(t, b, t0, false)
		wantTransitions(t, r.got, Transition{t0, StateClosed, StateOpen})
	})
	t.Run("Given failures that slid out of the window, when new calls arrive, then the old failures do not count", func(t *testing.T) {
		b, r := newRecorded(s)
		for i := 0; i < 9; i++ {
			call(t, b, t0, false)
		}
		later := t0.Add(2 * time.Minute)
		for i := 0; i < 9; i++ {
			call(t, b, later, false)
		}
		if len(r.got) != 0 {
			t.Fatalf("counted failures older than the window: %v", r.got)
		}
	})
}

func TestBreakerWindow(t *testing.T) {
	s := BreakerSettings{Trip: TripWindow, Threshold: 5, Window: 60 * time.Second, Cooldown: 30 * time.Second}
	t.Run("Given a window breaker, when 5 failures are spread over more than the window, then it stays closed", func(t *testing.T) {
		b, r := newRecorded(s)
		for i := 0; i < 8; i++ { // every 20s: any 60s holds at most 4
			call(t, b, t0.Add(sec(float64(20*i))), false)
		}
		if len(r.got) != 0 {
			t.Fatalf("tripped: %v", r.got)
		}
	})
	t.Run("Given a window breaker, when 5 failures fall within the window, then it opens at the fifth", func(t *testing.T) {
		b, r := newRecorded(s)
		for i := 0; i < 5; i++ {
			call(t, b, t0.Add(sec(float64(10*i))), false)
		}
		wantTransitions(t, r.got, Transition{t0.Add(sec(40)), StateClosed, StateOpen})
	})
	t.Run("Given 4 recent failures, when successes come between them, then the fifth failure within the window still trips", func(t *testing.T) {
		b, r := newRecorded(s)
		for i := 0; i < 5; i++ {
			call(t, b, t0.Add(sec(float64(10*i))), false)
			if i < 4 {
				call(t, b, t0.Add(sec(float64(10*i+5))), true)
			}
		}
		wantTransitions(t, r.got, Transition{t0.Add(sec(40)), StateClosed, StateOpen})
	})
}

// validEdge lists the only transitions a breaker may make.
func validEdge(from, to BreakerState) bool {
	switch {
	case from == StateClosed && to == StateOpen,
		from == StateOpen && to == StateHalfOpen,
		from == StateHalfOpen && to == StateOpen,
		from == StateHalfOpen && to == StateClosed:
		return true
	}
	return false
}

// TestBreakerProperties drives random breakers with random admit/record
// sequences and time steps and checks every reported transition: open never
// goes to closed without half-open, transitions chain, times never go
// backwards, half-open comes exactly a cooldown after open, and open admits
// nothing.
func TestBreakerProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	starts := []time.Time{t0, time.Unix(0, 0), time.Date(1969, 12, 31, 23, 59, 0, 0, time.UTC), time.Time{}}
	const sequences, steps = 1000, 100
	seen := map[[2]BreakerState]int{} // transitions by edge, so the test is not vacuous
	for seq := 0; seq < sequences; seq++ {
		s := BreakerSettings{
			Trip:      TripRule(r.IntN(3)),
			Threshold: 1 + r.IntN(6),
			Window:    sec(float64(1 + r.IntN(120))),
			Ratio:     0.1 + 0.9*r.Float64(),
			MinCalls:  1 + r.IntN(20),
			Cooldown:  sec(float64(1 + r.IntN(60))),
			Probes:    1 + r.IntN(4),
		}
		b := NewBreaker(s)
		now := starts[r.IntN(len(starts))]
		var last *Transition
		var openedAt time.Time
		b.OnTransition = func(tr Transition) {
			if !validEdge(tr.From, tr.To) {
				t.Fatalf("seq %d: invalid transition %v → %v", seq, tr.From, tr.To)
			}
			if last != nil {
				if tr.From != last.To {
					t.Fatalf("seq %d: transition from %v, but last went to %v", seq, tr.From, last.To)
				}
				if tr.At.Before(last.At) {
					t.Fatalf("seq %d: transition at %v before the previous at %v", seq, tr.At, last.At)
				}
			} else if tr.From != StateClosed {
				t.Fatalf("seq %d: first transition from %v", seq, tr.From)
			}
			if tr.At.After(now) {
				t.Fatalf("seq %d: transition reported in the future", seq)
			}
			if tr.To == StateOpen {
				openedAt = tr.At
			}
			if tr.From == StateOpen && !tr.At.Equal(openedAt.Add(s.Cooldown)) {
				t.Fatalf("seq %d: half-open at %v, want opened %v + cooldown %v", seq, tr.At, openedAt, s.Cooldown)
			}
			seen[[2]BreakerState{tr.From, tr.To}]++
			c := tr
			last = &c
		}
		failP := r.Float64()
		var calls []uint64 // generations of calls in flight
		probes := 0
		gen := b.Generation()
		for i := 0; i < steps; i++ {
			if r.IntN(3) == 0 {
				now = now.Add(time.Duration(r.Int64N(int64(20 * time.Second))))
			}
			if b.Generation() != gen {
				gen, probes = b.Generation(), 0
			}
			if len(calls) < 64 && (len(calls) == 0 || r.IntN(2) == 0) {
				state := b.State(now)
				if b.Generation() != gen {
					gen, probes = b.Generation(), 0
				}
				g, ok := b.Admit(now)
				switch state {
				case StateOpen:
					if ok {
						t.Fatalf("seq %d: open breaker admitted a call", seq)
					}
				case StateHalfOpen:
					if ok {
						probes++
						if probes > s.Probes {
							t.Fatalf("seq %d: half-open admitted %d probes, limit %d", seq, probes, s.Probes)
						}
					}
				case StateClosed:
					if !ok {
						t.Fatalf("seq %d: closed breaker refused", seq)
					}
				}
				if ok {
					calls = append(calls, g)
				}
				continue
			}
			k := r.IntN(len(calls))
			cg := calls[k]
			calls = append(calls[:k], calls[k+1:]...)
			b.State(now) // let a due open → half-open happen first, as Record does
			cur, stale := b.Generation(), b.Stale
			b.Record(cg, r.Float64() >= failP, now)
			wantStale := stale
			if cg != cur {
				wantStale++
				if b.Generation() != cur {
					t.Fatalf("seq %d: a stale result changed state", seq)
				}
			}
			if b.Stale != wantStale {
				t.Fatalf("seq %d: Stale = %d, want %d", seq, b.Stale, wantStale)
			}
			if last != nil && b.State(now) != last.To {
				t.Fatalf("seq %d: state %v, last transition to %v", seq, b.State(now), last.To)
			}
		}
	}
	for _, e := range [][2]BreakerState{{StateClosed, StateOpen}, {StateOpen, StateHalfOpen}, {StateHalfOpen, StateOpen}, {StateHalfOpen, StateClosed}} {
		if seen[e] < 100 {
			t.Errorf("edge %v → %v seen %d times: the random drive does not exercise it", e[0], e[1], seen[e])
		}
	}
	t.Logf("transitions: %v", seen)
}

// TestBreakerRecordClosedSuccess drives two breakers with the same calls,
// one taking the shortcut a dispatcher takes (RecordClosedSuccess, falling
// back to Record), and checks that they never disagree.
func TestBreakerRecordClosedSuccess(t *testing.T) {
	for _, trip := range []TripRule{TripConsecutive, TripWindow, TripRate} {
		s := BreakerSettings{Trip: trip, Threshold: 3, MinCalls: 4, Window: sec(10), Cooldown: sec(5)}
		plain, pr := newRecorded(s)
		fast, fr := newRecorded(s)
		rng := rand.New(rand.NewPCG(uint64(trip), 1))
		now := t0
		shortcuts := 0
		for i := range 2000 {
			now = now.Add(time.Duration(rng.IntN(800)) * time.Millisecond)
			g1, ok1 := plain.Admit(now)
			g2, ok2 := fast.Admit(now)
			if g1 != g2 || ok1 != ok2 {
				t.Fatalf("%v step %d: Admit plain (%d, %v), shortcut (%d, %v)", trip, i, g1, ok1, g2, ok2)
			}
			if !ok1 {
				continue
			}
			success := rng.IntN(3) != 0
			plain.Record(g1, success, now)
			if success && fast.RecordClosedSuccess(g2) {
				shortcuts++
			} else {
				fast.Record(g2, success, now)
			}
			if plain.State(now) != fast.State(now) || plain.Generation() != fast.Generation() || plain.Closed() != fast.Closed() {
				t.Fatalf("%v step %d: plain %v gen %d, shortcut %v gen %d", trip, i,
					plain.State(now), plain.Generation(), fast.State(now), fast.Generation())
			}
		}
		wantTransitions(t, fr.got, pr.got...)
		if len(pr.got) == 0 {
			t.Fatalf("%v: the breaker never moved: the test tests nothing", trip)
		}
		if want := trip != TripRate; (shortcuts > 0) != want {
			t.Fatalf("%v: %d successes took the shortcut", trip, shortcuts)
		}
	}
}

// The simulator keeps one breaker per subscriber, in a slice padded to a
// multiple of 64 bytes: a breaker stays within two cache lines, and what
// an attempt on a closed breaker reads within the first.
func TestBreakerLayout(t *testing.T) {
	var b Breaker
	if n := unsafe.Sizeof(b); n > 128 {
		t.Errorf("Breaker is %d bytes, want at most 128", n)
	}
	for _, f := range []struct {
		name      string
		off, size uintptr
	}{
		{"gen", unsafe.Offsetof(b.gen), unsafe.Sizeof(b.gen)},
		{"run", unsafe.Offsetof(b.run), unsafe.Sizeof(b.run)},
		{"state", unsafe.Offsetof(b.state), unsafe.Sizeof(b.state)},
		{"trip", unsafe.Offsetof(b.trip), unsafe.Sizeof(b.trip)},
	} {
		if f.off+f.size > 64 {
			t.Errorf("%s ends at byte %d, past the first cache line", f.name, f.off+f.size)
		}
	}
}

func TestBreakerRuleMemory(t *testing.T) {
	for _, tt := range []struct {
		trip    TripRule
		wantMem bool
	}{{TripConsecutive, false}, {TripWindow, true}, {TripRate, true}} {
		b := NewBreaker(BreakerSettings{Trip: tt.trip, Threshold: 2, MinCalls: 2, Cooldown: sec(7)})
		if b.mem != nil {
			t.Fatalf("%v: a new breaker has rule memory", tt.trip)
		}
		// Before its first opening, OpenUntil is the zero time + cooldown.
		if got := b.OpenUntil(); !got.Equal(time.Time{}.Add(sec(7))) {
			t.Fatalf("%v: OpenUntil of a new breaker = %v", tt.trip, got)
		}
		call(t, b, t0, false)
		call(t, b, t0.Add(sec(1)), false)
		if b.State(t0.Add(sec(1))) != StateOpen {
			t.Fatalf("%v: two failures left it %v", tt.trip, b.State(t0.Add(sec(1))))
		}
		if (b.mem != nil) != tt.wantMem {
			t.Fatalf("%v: rule memory made = %v, want %v", tt.trip, b.mem != nil, tt.wantMem)
		}
	}
}
