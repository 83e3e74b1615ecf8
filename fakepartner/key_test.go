package fakepartner

import (
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"net/http"
	"testing"
	"time"
)

// KeyHash is FNV-1a 64: the published test vectors, the standard library's
// hash, and the piecewise form agree.
func TestKeyHash(t *testing.T) {
	vectors := []struct {
		id   string
		want uint64
	}{
		{"", 0xcbf29ce484222325},       // the offset basis
		{"a", 0xaf63dc4c8601ec8c},      // FNV-1a reference vector
		{"foobar", 0x85944171f73967e8}, // FNV-1a reference vector
	}
	for _, v := range vectors {
		if got := KeyHash(v.id); got != v.want {
			t.Errorf("KeyHash(%q) = %#x, want %#x", v.id, got, v.want)
		}
	}
	for _, id := range []string{"evt-000123:acme-0", "evt-1234567:healthy-199", "x", "ünïcode:ok"} {
		h := fnv.New64a()
		h.Write([]byte(id))
		if got, want := KeyHash(id), h.Sum64(); got != want {
			t.Errorf("KeyHash(%q) = %#x, hash/fnv says %#x", id, got, want)
		}
		// Byte by byte for the first half, then the rest as a string.
		half := len(id) / 2
		p := KeyHashInit
		for i := 0; i < half; i++ {
			p = KeyHashByte(p, id[i])
		}
		if got := KeyHashString(p, id[half:]); got != KeyHash(id) {
			t.Errorf("piecewise hash of %q = %#x, want %#x", id, got, KeyHash(id))
		}
	}
}

func deliveryKey(i int) uint64 { return KeyHash(fmt.Sprintf("evt-%06d:p-0", i)) }

// Bad data follows the delivery: every attempt of a bad delivery that the
// partner serves is a 422, a good one never is; over many deliveries the bad
// fraction is PermanentErrors, and among good deliveries' calls the 503
// fraction is TransientErrors.
func TestSimBadDataFollowsDelivery(t *testing.T) {
	tests := []struct {
		name   string
		pe, te float64
	}{
		{"bad data only", 0.15, 0},
		{"bad data and transients", 0.15, 0.2},
		{"transients only: nothing is bad", 0, 0.3},
		{"everything bad", 1, 0.5},
		{"rare bad data", 0.002, 0.01},
	}
	const deliveries, attempts = 20_000, 3
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := constSpec(ms)
			s.PermanentErrors, s.TransientErrors = tt.pe, tt.te
			p := newTestSim(t, s, 0, 9)
			p.SetSeed(42)
			bad, goodCalls, transients := 0, 0, 0
			now := time.Duration(0)
			for i := range deliveries {
				key := deliveryKey(i)
				want := s.BadData(42, key)
				if want {
					bad++
				}
				for a := range attempts {
					now += ms
					c := p.BeginKey(now, key)
					if got := c.Result.Status == http.StatusUnprocessableEntity; got != want {
						t.Fatalf("delivery %d attempt %d: 422 is %v, want %v on every attempt", i, a+1, got, want)
					}
					if !want {
						goodCalls++
						if c.Result.Status == http.StatusServiceUnavailable {
							transients++
						}
					}
				}
			}
			checkRate(t, "bad deliveries", bad, deliveries, tt.pe)
			if goodCalls > 0 {
				checkRate(t, "503s among good deliveries' calls", transients, goodCalls, tt.te)
			}
		})
	}
}

// checkRate fails unless k of n is within 5 binomial standard deviations
// (and a tiny slack for p at 0 or 1) of p.
func checkRate(t *testing.T, what string, k, n int, p float64) {
	t.Helper()
	got := float64(k) / float64(n)
	tol := 5*math.Sqrt(p*(1-p)/float64(n)) + 1e-9
	if math.Abs(got-p) > tol {
		t.Errorf("%s: %d of %d = %.4f, want %.4f ± %.4f", what, k, n, got, p, tol)
	}
}

// Keys leave the transient rate and the latency stream unchanged: the same
// spec and seed give the same latencies with and without keys, and the
// overall 503 fraction is (1-pe)·te either way.
func TestSimKeyKeepsTransientRateAndLatencies(t *testing.T) {
	s := Spec{Name: "p", Count: 1, Latency: Dist{Kind: DistLognormal, P50: 80 * ms, P99: 600 * ms},
		PermanentErrors: 0.1, TransientErrors: 0.2}
	keyed, plain := newTestSim(t, s, 0, 3), newTestSim(t, s, 0, 3)
	const n = 100_000
	counts := map[bool]map[int]int{true: {}, false: {}}
	for i := range n {
		at := time.Duration(i) * time.Second
		a, b := keyed.BeginKey(at, deliveryKey(i)), plain.Begin(at)
		if a.Latency != b.Latency {
			t.Fatalf("call %d: latency %v with a key, %v without", i, a.Latency, b.Latency)
		}
		counts[true][a.Result.Status]++
		counts[false][b.Result.Status]++
	}
	for _, k := range []bool{true, false} {
		checkRate(t, fmt.Sprintf("keyed %v: 503s", k), counts[k][503], n, 0.9*0.2)
		checkRate(t, fmt.Sprintf("keyed %v: 422s", k), counts[k][422], n, 0.1)
	}
}

// The bad set depends on the seed and the cohort, and on nothing else: two
// Sims (members, random streams) with the same seed agree; another seed or
// another cohort name picks other deliveries.
func TestBadDataDeterministic(t *testing.T) {
	s := constSpec(ms)
	s.Count, s.PermanentErrors = 2, 0.3
	other := s
	other.Name = "q"
	set := func(spec Spec, member int, rngSeed, seed uint64) []bool {
		p := newTestSim(t, spec, member, rngSeed)
		p.SetSeed(seed)
		out := make([]bool, 2000)
		for i := range out {
			c := p.BeginKey(time.Duration(i)*ms, deliveryKey(i))
			out[i] = c.Result.Status == 422
			if out[i] != spec.BadData(seed, deliveryKey(i)) {
				t.Fatalf("Sim and Spec.BadData disagree on delivery %d", i)
			}
		}
		return out
	}
	equal := func(a, b []bool) bool {
		for i := range a {
			if a[i] != b[i] {
				return false
			}
		}
		return true
	}
	base := set(s, 0, 1, 7)
	if !equal(base, set(s, 1, 99, 7)) {
		t.Error("same seed, another member and random stream: different bad deliveries")
	}
	if equal(base, set(s, 0, 1, 8)) {
		t.Error("another seed: the same bad deliveries")
	}
	if equal(base, set(other, 0, 1, 7)) {
		t.Error("another cohort: the same bad deliveries")
	}
}

// Over HTTP the Idempotency-Key decides bad data exactly as in simulation
// under the same seed, on every attempt; without the key it is drawn per
// call.
func TestServerBadDataByKey(t *testing.T) {
	spec := quickSpec("acme")
	spec.Latency = Dist{}
	spec.PermanentErrors = 0.3
	s, base, _ := startServer(t, []Spec{spec}, ServerOptions{Seed: 42})
	simSpec := spec
	p := newTestSim(t, simSpec, 0, 1)
	p.SetSeed(42)
	c := client(5 * time.Second)
	bad := 0
	const ids = 100
	for i := range ids {
		id := fmt.Sprintf("evt-%06d:acme-0", i)
		want := 200
		if p.BeginKey(time.Duration(i)*ms, KeyHash(id)).Result.Status == 422 {
			want = 422
			bad++
		}
		for attempt := range 2 {
			if a := post(c, base+"/p/acme", id, "{}"); a.err != nil || a.status != want {
				t.Fatalf("%s attempt %d: %d, %v; want %d as in simulation", id, attempt+1, a.status, a.err, want)
			}
		}
	}
	if bad == 0 || bad == ids {
		t.Fatalf("%d of %d ids bad at 30%%: the test proves nothing", bad, ids)
	}
	if st := statsOf(s, "acme"); st.ByStatus[422] != int64(2*bad) {
		t.Errorf("server counted %d 422s, want %d", st.ByStatus[422], 2*bad)
	}

	// Without a key, the same request is sometimes rejected and sometimes not.
	got := map[int]int{}
	for range 60 {
		a := post(c, base+"/p/acme", "", "{}")
		if a.err != nil {
			t.Fatal(a.err)
		}
		got[a.status]++
	}
	if got[422] == 0 || got[200] == 0 {
		t.Errorf("keyless statuses %v: want both 200 and 422 (a per-call draw)", got)
	}
}

func BenchmarkSimBeginKey(b *testing.B) {
	s := Spec{
		Name: "p", Count: 1, Concurrency: 8,
		Latency:         Dist{Kind: DistLognormal, P50: 80 * ms, P99: 600 * ms},
		TransientErrors: 0.01, PermanentErrors: 0.001,
		Outages: []Outage{{Start: 10 * time.Minute, For: 20 * time.Minute, Kind: OutageUnavailable}},
	}
	p := NewSim(&s, 0, rand.New(rand.NewPCG(1, 0)))
	b.ReportAllocs()
	now, key := time.Duration(0), KeyHashInit
	for b.Loop() {
		now += 5 * ms
		key = KeyHashByte(key, byte(now))
		c := p.BeginKey(now, key)
		p.Finish(&c, now+c.Latency)
	}
}

// An external run puts a run id into its delivery ids; the partner decides
// bad data from the id without it, so the run rejects the deliveries that a
// run without a run id (a simulation, a live run) of the same seed rejects.
func TestBadDataIgnoresTheRunID(t *testing.T) {
	spec := quickSpec("acme")
	spec.PermanentErrors = 0.5
	_, plain, _ := startServer(t, []Spec{spec}, ServerOptions{Seed: 7})
	_, withRun, _ := startServer(t, []Spec{spec}, ServerOptions{Seed: 7, RunID: "ab12cd"})
	c := client(5 * time.Second)
	rejected := 0
	for i := range 40 {
		a := post(c, plain+"/p/acme/0", fmt.Sprintf("evt-%06d:acme-0", i), "{}")
		b := post(c, withRun+"/p/acme/0", fmt.Sprintf("evt-ab12cd-%06d:acme-0", i), "{}")
		if a.err != nil || b.err != nil || a.status != b.status {
			t.Errorf("delivery %d: %d (%v) without the run id, %d (%v) with it; want the same answer", i, a.status, a.err, b.status, b.err)
		}
		if a.status == 422 {
			rejected++
		}
	}
	if rejected == 0 || rejected == 40 {
		t.Errorf("%d of 40 rejected: want some, not all, with permanent_errors 0.5", rejected)
	}
}
