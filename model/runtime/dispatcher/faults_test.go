package dispatcher

import (
	"net/http"
	"testing"
	"time"

	"github.com/stormdrill/stormdrill/fakepartner"
	"github.com/stormdrill/stormdrill/internal/testsuite"
	"github.com/stormdrill/stormdrill/model"
	"github.com/stormdrill/stormdrill/model/dispatchcore"
)

// simOutcome is what the simulation makes of a simulated partner's
// answer to a call with attempt timeout timeout (as drills' simulation
// does): the outcome the policy sees.
func simOutcome(c fakepartner.Call, r fakepartner.Result, timeout time.Duration) model.Outcome {
	if c.NoAnswer || c.Latency > timeout {
		return model.Outcome{Err: model.ErrTimeout}
	}
	switch r.Kind {
	case fakepartner.ResultTimeout:
		return model.Outcome{Err: model.ErrTimeout}
	case fakepartner.ResultReset:
		return model.Outcome{Err: model.ErrReset}
	case fakepartner.ResultRefused:
		return model.Outcome{Err: model.ErrRefused}
	}
	return model.Outcome{Status: r.Status, RetryAfter: r.RetryAfter}
}

// Each fault kind of the fake partner, served over HTTP on loopback and
// called by the dispatcher's own client and call, ends in the outcome the
// simulation gives the same call: the same status or transport failure,
// so the same class and the same breaker count name.
func TestFaultKindsOverHTTPAsSimulated(t *testing.T) {
	const timeout = 400 * time.Millisecond
	hour := time.Hour
	tests := []struct {
		o    fakepartner.Outage
		want model.Outcome
	}{
		{fakepartner.Outage{Kind: fakepartner.OutageEmpty}, model.Outcome{Err: model.ErrReset}},
		{fakepartner.Outage{Kind: fakepartner.OutageGarbage}, model.Outcome{Err: model.ErrReset}},
		{fakepartner.Outage{Kind: fakepartner.OutageTruncated}, model.Outcome{Err: model.ErrReset}},
		{fakepartner.Outage{Kind: fakepartner.OutageDribble, DribbleOver: 100 * time.Millisecond}, model.Outcome{Status: 200}},
		{fakepartner.Outage{Kind: fakepartner.OutageDribble, DribbleOver: 2 * time.Second}, model.Outcome{Err: model.ErrTimeout}},
		{fakepartner.Outage{Kind: fakepartner.OutageRefused}, model.Outcome{Err: model.ErrRefused}},
		{fakepartner.Outage{Kind: fakepartner.OutageLostAck}, model.Outcome{Err: model.ErrReset}},
		{fakepartner.Outage{Kind: fakepartner.OutageRedirect}, model.Outcome{Status: http.StatusTemporaryRedirect}},
	}
	wantClass := map[fakepartner.OutageKind]string{
		fakepartner.OutageEmpty: "reset", fakepartner.OutageGarbage: "reset", fakepartner.OutageTruncated: "reset",
		fakepartner.OutageRefused: "refused", fakepartner.OutageLostAck: "reset", fakepartner.OutageRedirect: "other",
	}
	for _, tt := range tests {
		o := tt.o
		o.For = hour
		spec := fakepartner.Spec{Name: "acme", Count: 1, Latency: fakepartner.Dist{Value: time.Millisecond}, Outages: []fakepartner.Outage{o}}
		sim := fakepartner.NewSim(&spec, 0, fakepartner.SubscriberRand(1, "acme", 0))
		c := sim.BeginKey(time.Second, fakepartner.KeyHash("evt-1:acme-0"))
		simO := simOutcome(c, sim.Finish(&c, time.Second+c.Latency), timeout)
		if simO != tt.want {
			t.Errorf("%s: simulated outcome %+v, want %+v", o.Kind, simO, tt.want)
		}

		srv, err := fakepartner.NewServer([]fakepartner.Spec{spec}, fakepartner.ServerOptions{Start: time.Now().Add(-time.Second)})
		if err != nil {
			t.Fatal(err)
		}
		l, err := fakepartner.ListenLoopback("127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		if srv.Refuses("acme") {
			go func() { _ = srv.ServeRefusing("acme", l) }()
		} else {
			go func() { _ = srv.Serve(l) }()
		}
		ds := &dispatcher{client: newHTTPClient(2, timeout+clientSlack), wallTO: timeout, speed: 1, cfg: Config{Clock: Clock{Start: time.Now(), Speed: 1}}}
		var res result
		// A refusing listener closes within a poll of its start: call
		// until it has.
		testsuite.Poll(30*time.Second, func() bool {
			res = ds.call(job{it: &dispatchcore.Item{Attempts: 1}, id: "evt-1:acme-0", url: "http://" + l.Addr().String() + "/p/acme", body: []byte("{}")})
			return res.o == tt.want || o.Kind != fakepartner.OutageRefused
		})
		srv.Close()
		if res.o != tt.want {
			t.Errorf("%s over HTTP: outcome %+v (%s), want %+v as simulated", o.Kind, res.o, res.errText, tt.want)
		}
		var cl model.Classifier
		if res.o.Status != 200 {
			if got := cl.Classify(res.o); got == model.ClassSuccess {
				t.Errorf("%s: classed a success", o.Kind)
			}
			if name, ok := wantClass[o.Kind]; ok && model.KindOf(res.o).String() != name {
				t.Errorf("%s: the breaker counts it as %q, want %q", o.Kind, model.KindOf(res.o), name)
			}
		}
		if o.Kind == fakepartner.OutageRedirect && cl.Classify(res.o) != model.ClassPermanent {
			t.Errorf("redirect classed %v, want permanent", cl.Classify(res.o))
		}
	}
}
