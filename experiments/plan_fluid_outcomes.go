package experiments

import "math"

func (f *fluid) breakerClock(t float64) {
	if f.br == nil {
		return
	}
	if f.state == 2 && t >= f.openUntil {
		f.state = 1
		f.probesLeft = float64(f.br.Probes) * f.subsA
		f.probeWins = 0
	}
}

func (f *fluid) open(t float64) {
	f.state = 2
	f.openUntil = t + f.br.Cooldown.Seconds()
	f.consec = 0
	for i := range f.winFails {
		f.winFails[i], f.winCalls[i] = 0, 0
	}
	f.probesOut, f.probesLeft, f.probeWins = 0, 0, 0
}

// record counts closed-state results on the breaker (per subscriber).
func (f *fluid) record(t, ok, no float64) {
	if f.br == nil || f.state != 0 || ok+no == 0 {
		return
	}
	okS, noS := ok/f.subsA, no/f.subsA
	var fails, calls float64
	if f.trip.Info().Windowed {
		fails, calls = f.countWindow(t, okS, noS)
	} else {
		// A run of failures grows while failures outnumber successes;
		// steady transient errors never make a run of Threshold.
		if ok > no {
			f.consec = 0
			return
		}
		f.consec += noS
	}
	if f.trip.Info().FluidOpens(&f.bs, f.consec, fails, calls) {
		f.open(t)
	}
}

// countWindow adds a step's results to the window's bins and returns the
// failures and calls the window holds.
func (f *fluid) countWindow(t, okS, noS float64) (fails, calls float64) {
	b := int(t/f.winBin) % len(f.winFails)
	if b != f.lastBin {
		for i := (f.lastBin + 1) % len(f.winFails); ; i = (i + 1) % len(f.winFails) {
			f.winFails[i], f.winCalls[i] = 0, 0
			if i == b {
				break
			}
		}
		f.lastBin = b
	}
	f.winFails[b] += noS
	f.winCalls[b] += okS + noS
	for i := range f.winFails {
		fails += f.winFails[i]
		calls += f.winCalls[i]
	}
	return fails, calls
}

func (f *fluid) terminal(pp int, m float64, reason string) {
	if pp == 0 {
		f.pending -= m
	}
	if reason != "" {
		f.out.dead[reason] += m
	}
}

func (f *fluid) complete(t float64, cb int) {
	// Probes decide the half-open breaker first.
	if f.br != nil {
		if no := f.probeNo[cb]; no > 0 && f.state == 1 {
			f.open(t)
		} else if ok := f.probeOK[cb]; ok > 0 && f.state == 1 {
			f.probesOut -= ok
			f.probeWins += ok
			if f.probeWins >= float64(f.br.Probes)*f.subsA-1e-9 {
				f.state = 0
				f.consec = 0
			}
		}
		if ig := f.probeIg[cb]; ig > 0 && f.state == 1 {
			// An ignored failure hands the probe's slot back.
			f.probesOut = math.Max(0, f.probesOut-ig)
			f.probesLeft += ig
		}
		f.probeOK[cb], f.probeNo[cb], f.probeIg[cb] = 0, 0, 0
	}
	var okAll float64
	for pp := range 2 {
		for k := 1; k <= f.classes; k++ {
			if s := f.succ[pp][k]; s != nil && s[cb] > 0 {
				okAll += s[cb]
				f.terminal(pp, s[cb], "")
				s[cb] = 0
			}
			for ra := range 2 {
				ring := f.fail[pp][k]
				if ra == 1 {
					ring = f.failRA[pp][k]
				}
				if ring == nil || ring[cb] == 0 {
					continue
				}
				m := ring[cb]
				ring[cb] = 0
				retryAfter := 0.0
				if ra == 1 {
					retryAfter = f.raAt[cb]
				}
				f.decide(t, pp, k, m, retryAfter)
			}
		}
	}
	f.raAt[cb] = 0
	f.record(t, okAll, f.counted[cb])
	f.counted[cb] = 0
	f.inA = math.Max(0, f.inA-f.relA[cb])
	f.inO = math.Max(0, f.inO-f.relO[cb])
	f.relA[cb], f.relO[cb] = 0, 0
}

// decide is the policy's decision on m failed attempts number k.
func (f *fluid) decide(t float64, pp, k int, m, retryAfter float64) {
	in := &f.p.in
	switch {
	case in.MaxAttempts > 0 && k >= in.MaxAttempts:
		f.terminal(pp, m, "max-attempts")
		return
	case f.winDead[k]:
		f.terminal(pp, m, "window-expired")
		return
	case f.br != nil && f.br.OnOpenDeadLetter && f.state == 2:
		f.terminal(pp, m, "circuit-open")
		return
	}
	next := min(k+1, f.classes+1)
	lo, hi := f.delayLo[next], f.delayHi[next]
	cls := min(k, f.classes)
	switch {
	case retryAfter <= lo:
		f.spread(pp, cls, m, lo, hi)
	case retryAfter >= hi:
		f.spread(pp, cls, m, retryAfter, retryAfter)
	default: // the delay is max(backoff, Retry-After)
		share := (retryAfter - lo) / (hi - lo)
		f.spread(pp, cls, m*share, retryAfter, retryAfter)
		f.spread(pp, cls, m*(1-share), retryAfter, hi)
	}
}

// spread schedules mass m of class k to come due uniformly over
// [now+lo, now+hi].
func (f *fluid) spread(pp, k int, m, lo, hi float64) {
	if m <= 0 {
		return
	}
	d := f.diff[pp][k]
	if d == nil {
		d = make([]float64, f.ring)
		f.diff[pp][k] = d
	}
	a := min(f.bins(lo), f.ring-2)
	b := max(a, min(f.bins(hi), f.ring-2))
	now := f.cur
	per := m / float64(b-a+1)
	d[(now+a)%f.ring] += per
	d[(now+b+1)%f.ring] -= per
	f.delayed[pp] += m
}

func (f *fluid) releaseDelays(db int) {
	for pp := range 2 {
		for k := range f.diff[pp] {
			d := f.diff[pp][k]
			if d == nil {
				continue
			}
			f.run[pp][k] += d[db]
			d[db] = 0
			if r := f.run[pp][k]; r > 1e-12 {
				r = math.Min(r, f.delayed[pp])
				f.ready[pp][k] += r
				f.delayed[pp] -= r
			} else if r < 1e-12 {
				f.run[pp][k] = math.Max(0, r)
			}
		}
	}
}

func (f *fluid) readyA(pp int) float64 {
	s := 0.0
	for _, v := range f.ready[pp] {
		s += v
	}
	return s
}
