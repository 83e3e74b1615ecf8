package fakepartner

import (
	"strings"
	"testing"
	"time"

	"github.com/stormdrill/stormdrill/model"
)

// Every declared outage kind is complete: a name that parses back to it, a
// one-line doc, validation for each key it uses, an answer and a plan
// effect. A kind added without any of these fails here.
func TestOutageKindsDeclared(t *testing.T) {
	if len(OutageKinds) == 0 {
		t.Fatal("no outage kinds declared")
	}
	for i := range OutageKinds {
		info := &OutageKinds[i]
		name := info.Name
		switch {
		case info.Kind != OutageKind(i):
			t.Errorf("OutageKinds[%d] declares kind %d", i, info.Kind)
		case name == "" || strings.ContainsAny(name, " \t\n"):
			t.Errorf("OutageKinds[%d]: name %q", i, name)
		case info.Doc == "" || strings.Contains(info.Doc, "\n"):
			t.Errorf("%s: doc must be one non-empty line (got %q)", name, info.Doc)
		case info.Answer == nil:
			t.Errorf("%s: no Answer (behaviour)", name)
		case info.Effect == nil:
			t.Errorf("%s: no plan Effect", name)
		case len(info.Uses) > 0 && info.Check == nil:
			t.Errorf("%s: uses %v but checks none of them", name, info.Uses)
		}
		if k, err := ParseOutageKind(name); err != nil || k != OutageKind(i) {
			t.Errorf("ParseOutageKind(%q) = %v, %v", name, k, err)
		}
	}
}

// A slowdown does not make every attempt fail; a hard outage does; a flap
// fails half of them. The plan reads these effects.
func TestOutageKindEffects(t *testing.T) {
	tests := []struct {
		o    Outage
		want OutageEffect
	}{
		{Outage{Kind: OutageUnavailable}, OutageEffect{FailShare: 1, LatencyFactor: 1}},
		{Outage{Kind: OutageTimeout}, OutageEffect{FailShare: 1, LatencyFactor: 1, Hangs: true}},
		{Outage{Kind: OutageReset}, OutageEffect{FailShare: 1, LatencyFactor: 1}},
		{Outage{Kind: OutageThrottle, RetryAfter: "5"}, OutageEffect{FailShare: 1, LatencyFactor: 1, RetryAfter: true}},
		{Outage{Kind: OutageSlow, Factor: 4}, OutageEffect{FailShare: 0, LatencyFactor: 4}},
		{Outage{Kind: OutageFlap, Period: time.Second}, OutageEffect{FailShare: 0.5, LatencyFactor: 1}},
		{Outage{Kind: OutageEmpty}, OutageEffect{FailShare: 1, LatencyFactor: 1}},
		{Outage{Kind: OutageGarbage}, OutageEffect{FailShare: 1, LatencyFactor: 1}},
		{Outage{Kind: OutageTruncated}, OutageEffect{FailShare: 1, LatencyFactor: 1}},
		{Outage{Kind: OutageDribble, DribbleOver: time.Second}, OutageEffect{LatencyFactor: 1}},
		{Outage{Kind: OutageRefused}, OutageEffect{FailShare: 1, LatencyFactor: 1}},
		{Outage{Kind: OutageLostAck}, OutageEffect{FailShare: 1, LatencyFactor: 1}},
		{Outage{Kind: OutageRedirect}, OutageEffect{FailShare: 1, LatencyFactor: 1}},
	}
	if len(tests) != len(OutageKinds) {
		t.Errorf("%d kinds tested, %d declared: add the new kind here", len(tests), len(OutageKinds))
	}
	for _, tt := range tests {
		if got := tt.o.Kind.Info().Effect(&tt.o); got != tt.want {
			t.Errorf("%s: effect %+v, want %+v", tt.o.Kind, got, tt.want)
		}
	}
}

// Counts is the breaker count class of what the dispatcher sees of the
// kind's failing answer, so the plan's breaker counts what the live and
// simulated breakers count; a kind that serves its calls fails none by
// itself, except one whose answer is dropped (a reset).
func TestOutageKindCounts(t *testing.T) {
	for i := range OutageKinds {
		info := &OutageKinds[i]
		o := Outage{Kind: info.Kind, RetryAfter: "5", Factor: 2, Period: time.Second, DribbleOver: time.Second}
		c, _, served := info.Answer(&o, &Behaviour{}, 0, simClock)
		var want model.BreakerCount
		switch {
		case !served:
			want = model.KindOf(c.Result.Outcome())
		case c.Wire == WireDropAnswer:
			want = model.CountReset
		}
		if info.Counts != want {
			t.Errorf("%s: Counts %v, its answer counts as %v", info.Name, info.Counts, want)
		}
	}
}
