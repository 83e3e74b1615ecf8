package fakepartner

import (
	"math/rand/v2"
	"net/http"
	"slices"
	"testing"
	"time"
	"unsafe"
)

func newTestSim(t *testing.T, s Spec, member int, seed uint64) *Sim {
	t.Helper()
	if err := s.Validate(); err != nil {
		t.Fatalf("spec: %v", err)
	}
	return NewSim(&s, member, rand.New(rand.NewPCG(seed, 0)))
}

func constSpec(latency time.Duration) Spec {
	return Spec{Name: "p", Count: 1, Latency: Dist{Value: latency}}
}

// With C servers and a constant service time, calls queue FIFO exactly.
func TestSimCapacityQueueing(t *testing.T) {
	tests := []struct {
		name        string
		concurrency int
		begins      []time.Duration
		latencies   []time.Duration
	}{
		// second call waits for the first to finish at 100ms: 90ms wait + 100ms
		{"one server", 1, []time.Duration{0, 10 * ms, 20 * ms, 300 * ms}, []time.Duration{100 * ms, 190 * ms, 280 * ms, 100 * ms}},
		// two run at once; the third waits for the earlier of the two
		{"two servers", 2, []time.Duration{0, 10 * ms, 20 * ms, 30 * ms}, []time.Duration{100 * ms, 100 * ms, 180 * ms, 180 * ms}},
		// eight servers (the heap inside the Behaviour) and nine (the heap
		// beside it): the call after the last free server waits 100ms
		{"eight servers", 8, []time.Duration{0, 0, 0, 0, 0, 0, 0, 0, 0}, []time.Duration{100 * ms, 100 * ms, 100 * ms, 100 * ms, 100 * ms, 100 * ms, 100 * ms, 100 * ms, 200 * ms}},
		{"nine servers", 9, []time.Duration{0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, []time.Duration{100 * ms, 100 * ms, 100 * ms, 100 * ms, 100 * ms, 100 * ms, 100 * ms, 100 * ms, 100 * ms, 200 * ms}},
		// unlimited: nobody waits
		{"unlimited", 0, []time.Duration{0, 0, 0}, []time.Duration{100 * ms, 100 * ms, 100 * ms}},
	}
	for _, tt := range tests {
		s := constSpec(100 * ms)
		s.Concurrency = tt.concurrency
		p := newTestSim(t, s, 0, 1)
		for i, b := range tt.begins {
			c := p.Begin(b)
			if c.Latency != tt.latencies[i] || c.Result.Status != 200 || !c.Processed {
				t.Errorf("%s: call %d at %v: latency %v status %d processed %v; want %v 200 true",
					tt.name, i, b, c.Latency, c.Result.Status, c.Processed, tt.latencies[i])
			}
		}
	}
}

func TestSimRejectWhenBusy(t *testing.T) {
	s := constSpec(100 * ms)
	s.Concurrency, s.RejectWhenBusy = 1, true
	p := newTestSim(t, s, 0, 1)
	steps := []struct {
		at      time.Duration
		status  int
		latency time.Duration
	}{
		{0, 200, 100 * ms},                 // takes the only server
		{50 * ms, 503, FastAnswerLatency},  // busy: refused at once, not queued
		{100 * ms, 200, 100 * ms},          // free again exactly at 100ms
		{199 * ms, 503, FastAnswerLatency}, // busy until 200ms
	}
	for i, st := range steps {
		c := p.Begin(st.at)
		if c.Result.Status != st.status || c.Latency != st.latency {
			t.Errorf("step %d at %v: %d after %v, want %d after %v", i, st.at, c.Result.Status, c.Latency, st.status, st.latency)
		}
	}
	if got := p.Stats().Rejected; got != 2 {
		t.Errorf("Rejected = %d, want 2", got)
	}
}

// Contended: read one hop after the start, write one hop later; a write
// fails if another write succeeded after this call's read.
func TestSimContended(t *testing.T) {
	s := constSpec(0)
	s.Contended = true
	s.NetworkDelay = Dist{Value: 10 * ms}
	p := newTestSim(t, s, 0, 1)

	a := p.Begin(0)       // reads at 10, writes at 20
	b := p.Begin(5 * ms)  // reads at 15, writes at 25: a wrote after b read
	c := p.Begin(11 * ms) // reads at 21, after a's write, writes at 31
	d := p.Begin(30 * ms) // reads at 40, writes at 50; alone
	if a.ReadAt != 10*ms || a.Latency != 20*ms || a.Processed {
		t.Fatalf("a: ReadAt %v Latency %v Processed %v; want 10ms 20ms false (decided at Finish)", a.ReadAt, a.Latency, a.Processed)
	}
	steps := []struct {
		name      string
		c         *Call
		at        time.Duration
		status    int
		processed bool
	}{
		{"a first write wins", &a, 20 * ms, 200, true},
		{"b read before a's write: conflict", &b, 25 * ms, 409, false},
		{"c read after a's write: wins", &c, 31 * ms, 200, true},
		{"d alone", &d, 50 * ms, 200, true},
	}
	for _, st := range steps {
		if r := p.Finish(st.c, st.at); r.Status != st.status || st.c.Processed != st.processed {
			t.Errorf("%s: %d processed %v, want %d %v", st.name, r.Status, st.c.Processed, st.status, st.processed)
		}
	}
	// Finishing again changes nothing.
	if r := p.Finish(&b, 25*ms); r.Status != 409 {
		t.Errorf("second Finish of b: %d, want 409 again", r.Status)
	}
	if st := p.Stats(); st.Conflicts != 1 || st.Accepted != 3 {
		t.Errorf("stats %+v, want 1 conflict and 3 accepted", st)
	}
}

// Contended calls contend only with writes, not with failed calls.
func TestSimContendedErrorsDoNotWrite(t *testing.T) {
	s := constSpec(0)
	s.Contended = true
	s.NetworkDelay = Dist{Value: 10 * ms}
	s.PermanentErrors = 1
	p := newTestSim(t, s, 0, 1)
	a := p.Begin(0)
	if r := p.Finish(&a, a.Latency); r.Status != 422 || a.Processed {
		t.Errorf("got %d processed %v, want 422 false", r.Status, a.Processed)
	}
}

func TestSimOutages(t *testing.T) {
	sec := time.Second
	s := constSpec(100 * ms)
	s.Count = 2
	s.Outages = []Outage{
		{Start: 10 * sec, For: 10 * sec, Kind: OutageUnavailable},
		{Start: 20 * sec, For: 10 * sec, Kind: OutageTimeout},
		{Start: 30 * sec, For: 10 * sec, Kind: OutageReset},
		{Start: 40 * sec, For: 10 * sec, Kind: OutageThrottle, RetryAfter: "5"},
		{Start: 50 * sec, For: 10 * sec, Kind: OutageThrottle, RetryAfter: "date:30s"},
		{Start: 60 * sec, For: 10 * sec, Kind: OutageThrottle, RetryAfter: "garbage"},
		{Start: 70 * sec, For: 10 * sec, Kind: OutageSlow, Factor: 3},
		{Start: 80 * sec, For: 20 * sec, Kind: OutageFlap, Period: 10 * sec},
		{Start: 100 * sec, For: 10 * sec, Kind: OutageUnavailable, Members: 1},
	}
	tests := []struct {
		name       string
		member     int
		at         time.Duration
		kind       ResultKind
		status     int
		latency    time.Duration
		retryAfter string
		noAnswer   bool
	}{
		{"healthy before", 0, 0, ResultOK, 200, 100 * ms, "", false},
		{"unavailable", 0, 10 * sec, ResultHTTP, 503, FastAnswerLatency, "", false},
		{"timeout never answers", 0, 20 * sec, ResultTimeout, 0, NoAnswerLatency, "", true},
		{"reset", 0, 30 * sec, ResultReset, 0, FastAnswerLatency, "", false},
		{"throttle delta-seconds", 0, 40 * sec, ResultHTTP, 429, FastAnswerLatency, "5", false},
		// epoch + 55.5s + 30s, truncated to the second by the date format
		{"throttle http-date", 0, 55*sec + 500*ms, ResultHTTP, 429, FastAnswerLatency, "Thu, 01 Jan 2026 00:01:25 GMT", false},
		{"throttle garbage", 0, 60 * sec, ResultHTTP, 429, FastAnswerLatency, GarbageRetryAfter, false},
		{"slow triples latency", 0, 70 * sec, ResultOK, 200, 300 * ms, "", false},
		{"flap down half", 0, 84 * sec, ResultHTTP, 503, FastAnswerLatency, "", false},
		{"flap up half", 0, 96 * sec, ResultOK, 200, 100 * ms, "", false},
		{"member 0 is hit", 0, 105 * sec, ResultHTTP, 503, FastAnswerLatency, "", false},
		{"member 1 is not", 1, 105 * sec, ResultOK, 200, 100 * ms, "", false},
	}
	sims := []*Sim{newTestSim(t, s, 0, 1), newTestSim(t, s, 1, 1)}
	for _, tt := range tests {
		c := sims[tt.member].Begin(tt.at)
		r := sims[tt.member].Finish(&c, tt.at+c.Latency)
		if r.Kind != tt.kind || r.Status != tt.status || c.Latency != tt.latency || r.RetryAfter != tt.retryAfter || c.NoAnswer != tt.noAnswer {
			t.Errorf("%s: got %v %d after %v RetryAfter %q NoAnswer %v; want %v %d after %v %q %v",
				tt.name, r.Kind, r.Status, c.Latency, r.RetryAfter, c.NoAnswer, tt.kind, tt.status, tt.latency, tt.retryAfter, tt.noAnswer)
		}
		if c.Processed != (tt.status == 200) {
			t.Errorf("%s: Processed %v", tt.name, c.Processed)
		}
	}
	// The HTTP-date is a valid one, parseable by the standard library.
	at := 55 * sec
	c := sims[0].Begin(at)
	if got, err := http.ParseTime(c.Result.RetryAfter); err != nil || !got.Equal(SimEpoch.Add(at+30*sec)) {
		t.Errorf("Retry-After %q parses to %v, %v", c.Result.RetryAfter, got, err)
	}
}

// Error rates: 422 with the permanent probability, else 503 with the
// transient probability.
func TestSimErrorRates(t *testing.T) {
	s := constSpec(ms)
	s.PermanentErrors, s.TransientErrors = 0.1, 0.2
	p := newTestSim(t, s, 0, 5)
	counts := map[int]int{}
	const n = 100_000
	for i := range n {
		c := p.Begin(time.Duration(i) * time.Second)
		counts[c.Result.Status]++
	}
	want := map[int]float64{422: 0.1, 503: 0.9 * 0.2, 200: 0.9 * 0.8}
	for status, f := range want {
		if got := float64(counts[status]) / n; relErr(got, f) > 0.03 {
			t.Errorf("status %d: fraction %.4f, want %.4f", status, got, f)
		}
	}
}

// The same seed gives the same calls; another seed does not.
func TestSimDeterministic(t *testing.T) {
	s := Spec{
		Name: "p", Count: 1, Concurrency: 4,
		Latency:         Dist{Kind: DistLognormal, P50: 80 * ms, P99: 600 * ms},
		TransientErrors: 0.05, PermanentErrors: 0.01,
	}
	run := func(seed uint64) []Call {
		p := newTestSim(t, s, 0, seed)
		p.SetSeed(seed)
		out := make([]Call, 0, 2000)
		for i := range 1000 {
			out = append(out, p.Begin(time.Duration(2*i)*20*ms))
			out = append(out, p.BeginKey(time.Duration(2*i+1)*20*ms, deliveryKey(i)))
		}
		return out
	}
	a, b, c := run(42), run(42), run(43)
	same := func(x, y []Call) bool {
		for i := range x {
			if x[i] != y[i] {
				return false
			}
		}
		return true
	}
	if !same(a, b) {
		t.Error("same seed gave different calls")
	}
	if same(a, c) {
		t.Error("different seeds gave identical calls")
	}
}

func TestSimBeginFinishAllocs(t *testing.T) {
	s := Spec{
		Name: "p", Count: 1, Concurrency: 8, Contended: true,
		Latency:         Dist{Kind: DistLognormal, P50: 80 * ms, P99: 600 * ms},
		NetworkDelay:    Dist{Kind: DistAbsNormal, Mean: 10 * ms, Stddev: 2 * ms},
		TransientErrors: 0.05,
		Outages:         []Outage{{Start: time.Hour, For: time.Hour, Kind: OutageSlow, Factor: 2}},
	}
	p := newTestSim(t, s, 0, 1)
	now := time.Duration(0)
	allocs := testing.AllocsPerRun(10_000, func() {
		now += 10 * ms
		c := p.Begin(now)
		p.Finish(&c, now+c.Latency)
		now += 10 * ms
		c = p.BeginKey(now, uint64(now))
		p.Finish(&c, now+c.Latency)
	})
	if allocs != 0 {
		t.Errorf("%v allocs per Begin+Finish and BeginKey+Finish, want 0", allocs)
	}
}

func BenchmarkSimBegin(b *testing.B) {
	s := Spec{
		Name: "p", Count: 1, Concurrency: 8,
		Latency:         Dist{Kind: DistLognormal, P50: 80 * ms, P99: 600 * ms},
		TransientErrors: 0.01, PermanentErrors: 0.001,
		Outages: []Outage{{Start: 10 * time.Minute, For: 20 * time.Minute, Kind: OutageUnavailable}},
	}
	p := NewSim(&s, 0, rand.New(rand.NewPCG(1, 0)))
	b.ReportAllocs()
	now := time.Duration(0)
	for b.Loop() {
		now += 5 * ms
		c := p.Begin(now)
		p.Finish(&c, now+c.Latency)
	}
}

// TestServersFreeFirst: the servers' free times (a sorted ring up to 8
// servers, a heap above) give the same earliest free time as a plain list
// of them, whatever order the times a call takes them until come in:
// mostly later than every other (the ring's usual case), sometimes not,
// and ties.
func TestServersFreeFirst(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for n := 1; n <= 20; n++ {
		spec := &Spec{Name: "s", Count: 1, Concurrency: n}
		b := NewBehaviour(spec, rng, 0)
		if inRing := n <= len(b.ring); inRing != (b.ringN != ringInHeap) || inRing != (b.cold == nil) {
			t.Fatalf("%d servers: ringN %d, cold state %v", n, b.ringN, b.cold != nil)
		}
		want := make([]time.Duration, n)
		for step := range 2000 {
			minAt := slices.Index(want, slices.Min(want))
			if got := b.earliestFree(); got != want[minAt] {
				t.Fatalf("%d servers, step %d: earliest free %v, want %v", n, step, got, want[minAt])
			}
			until := want[minAt]
			switch k := rng.IntN(10); {
			case k < 6:
				until = slices.Max(want) + time.Duration(rng.IntN(3)) // the usual case, ties included
			case k < 9:
				until += time.Duration(rng.IntN(100))
			}
			b.takeEarliest(until)
			want[minAt] = until
		}
	}
}

// TestSimCompact: a Sim stays within two cache lines, what every call
// touches within SimHotBytes of its start, and the members of a cohort
// share one copy of what they have in common (a second spec, even with
// the same latency, gets its own: it may differ in anything else).
func TestSimCompact(t *testing.T) {
	if size := unsafe.Sizeof(Sim{}); size > 128 {
		t.Errorf("Sim is %d bytes, want at most 128", size)
	}
	if SimHotBytes > unsafe.Sizeof(Sim{}) {
		t.Errorf("SimHotBytes %d beyond the Sim's %d bytes", SimHotBytes, unsafe.Sizeof(Sim{}))
	}
	spec := Spec{Name: "a", Count: 2, Concurrency: 8, Latency: Dist{Kind: DistLognormal, P50: 80 * ms, P99: 600 * ms}}
	other := spec
	a := NewSim(&spec, 0, rand.New(rand.NewPCG(1, 0)))
	b := NewSim(&spec, 1, rand.New(rand.NewPCG(2, 0)))
	c := NewSim(&other, 0, rand.New(rand.NewPCG(3, 0)))
	if a.b.cohort != b.b.cohort {
		t.Error("two members of a cohort keep separate copies of its shared state")
	}
	if a.b.cohort == c.b.cohort {
		t.Error("two cohorts share one copy of their shared state")
	}
	if a.b.cold != nil {
		t.Error("a cohort with 8 servers and no faults allocates cold state")
	}
}

// BeginDrawTo with a delivery's data draw plans the same call as BeginKey
// with its key: a caller may keep the draw instead of the key.
func TestBeginDrawToIsBeginKey(t *testing.T) {
	s := Spec{
		Name: "p", Count: 1,
		Latency:         Dist{Kind: DistLognormal, P50: 80 * ms, P99: 600 * ms},
		TransientErrors: 0.1, PermanentErrors: 0.3,
	}
	const seed = 42
	byKey, byDraw := newTestSim(t, s, 0, seed), newTestSim(t, s, 0, seed)
	byKey.SetSeed(seed)
	byDraw.SetSeed(seed)
	dataSeed := DataSeed(seed, s.Name)
	bad := 0
	for i := range 2000 {
		now := time.Duration(i) * 20 * ms
		want := byKey.BeginKey(now, deliveryKey(i))
		var got Call
		byDraw.BeginDrawTo(&got, now, DataDraw(dataSeed, deliveryKey(i)))
		if got != want {
			t.Fatalf("delivery %d: BeginDrawTo planned %+v, BeginKey %+v", i, got, want)
		}
		if want.Result.Status == 422 {
			bad++
		}
		if s.BadData(seed, deliveryKey(i)) != (want.Result.Status == 422) {
			t.Fatalf("delivery %d: BadData %v, but the call was answered %d", i, s.BadData(seed, deliveryKey(i)), want.Result.Status)
		}
	}
	if bad < 400 || bad > 800 { // 30% of 2,000
		t.Errorf("%d of 2000 deliveries bad, want about 600", bad)
	}
}
