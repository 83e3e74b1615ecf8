package drills

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/stormdrill/stormdrill/fakepartner"
)

// PartnerSpecs converts the drill's partners, with defaults applied, to
// fake partner specs in the same order, and checks each with the fake
// partner's own validation.
func (d *Drill) PartnerSpecs() ([]fakepartner.Spec, error) {
	specs := make([]fakepartner.Spec, 0, len(d.Partners))
	var errs Errors
	for i := range d.Partners {
		p := &d.Partners[i]
		key := "partners[" + strconv.Itoa(i) + "]"
		s := fakepartner.Spec{
			Name:            p.Name,
			Count:           p.Count,
			TransientErrors: p.TransientErrors,
			PermanentErrors: p.PermanentErrors,
			Concurrency:     p.Concurrency,
			RejectWhenBusy:  p.OnBusy == "reject",
			Contended:       p.Contended,
		}
		var err error
		if s.Latency, err = p.Latency.dist(); err != nil {
			errs = append(errs, &Error{Key: key + ".latency", Msg: err.Error()})
		}
		if !p.NetworkDelay.isZero() {
			if s.NetworkDelay, err = p.NetworkDelay.dist(); err != nil {
				errs = append(errs, &Error{Key: key + ".network_delay", Msg: err.Error()})
			}
		}
		s.CallFaults, s.DribbleOver = p.callFaults(), p.DribbleOver.D
		for j := range p.Outages {
			if _, err := fakepartner.ParseOutageKind(p.Outages[j].Kind); err != nil {
				errs = append(errs, &Error{Key: key + ".outages[" + strconv.Itoa(j) + "].kind", Msg: err.Error()})
			}
			s.Outages = append(s.Outages, p.fakeOutage(&p.Outages[j]))
		}
		if err := s.Validate(); err != nil {
			errs = append(errs, &Error{Key: key, Msg: err.Error()})
		}
		specs = append(specs, s)
	}
	// An outage-end action cuts its outage short: every runner, the plan
	// and the report see the outage the operator ended.
	for k, at := range d.OutageEnds() {
		if o := &specs[k[0]].Outages[k[1]]; at > o.Start && at < o.End() {
			o.For = at - o.Start
		}
	}
	if len(errs) > 0 {
		return nil, boundErrors(errs)
	}
	return specs, nil
}

// dist converts a latency table to a fake partner distribution.
func (l *Latency) dist() (fakepartner.Dist, error) {
	kind, err := fakepartner.ParseDistKind(l.Dist)
	if err != nil {
		return fakepartner.Dist{}, fmt.Errorf("dist: %v", err)
	}
	d := fakepartner.Dist{
		Kind:   kind,
		Value:  l.Value.D,
		Min:    l.Min.D,
		Max:    l.Max.D,
		Mean:   l.Mean.D,
		Stddev: l.Stddev.D,
		P50:    l.P50.D,
		P99:    l.P99.D,
		Alpha:  l.Alpha,
	}
	for _, q := range l.Quantiles {
		d.Quantiles = append(d.Quantiles, fakepartner.Quantile{Q: q.Q, Value: q.Value.D})
	}
	return d, nil
}

// fakeOutage converts one of the partner's outages; an unknown kind becomes
// the zero kind (the caller reports it).
func (p *Partner) fakeOutage(o *Outage) fakepartner.Outage {
	kind, _ := fakepartner.ParseOutageKind(o.Kind)
	return fakepartner.Outage{
		Start:       o.Start.D,
		For:         o.For.D,
		Kind:        kind,
		RetryAfter:  o.RetryAfter,
		Factor:      o.Factor,
		Period:      o.Period.D,
		DribbleOver: o.DribbleOver.D,
		Members:     o.Members,
		AnswerAfter: p.answerAfter(o),
	}
}

// CallFaultKey is how a per-call fault kind is written in the faults
// table: its name with "_" for "-" (lost_ack).
func CallFaultKey(kind string) string { return strings.ReplaceAll(kind, "-", "_") }

// callFaults converts the faults table, in the kinds' declaration order
// so that the draws do not depend on the table's order; names that are
// no per-call kind are left out (validation reports them).
func (p *Partner) callFaults() []fakepartner.CallFault {
	var fs []fakepartner.CallFault
	for i := range fakepartner.OutageKinds {
		k := &fakepartner.OutageKinds[i]
		if pr, ok := p.Faults[CallFaultKey(k.Name)]; ok && k.PerCall && pr > 0 {
			fs = append(fs, fakepartner.CallFault{Kind: k.Kind, P: pr})
		}
	}
	return fs
}

// AnswerAfterPartner is the answer_after dist that stands for the
// partner's own latency.
const AnswerAfterPartner = "partner"

// answerAfter is the outage's answer_after as a distribution: nil when
// it is not given or does not convert (validation reports it).
func (p *Partner) answerAfter(o *Outage) *fakepartner.Dist {
	l := &o.AnswerAfter
	if l.isZero() {
		return nil
	}
	if l.Dist == AnswerAfterPartner {
		l = &p.Latency
	}
	d, err := l.dist()
	if err != nil {
		return nil
	}
	return &d
}
