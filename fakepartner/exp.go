package fakepartner

import "math"

// exp is e^x for the lognormal's samples, within 0.51 ulp, with the same
// bits whatever the CPU's features. math.Exp is within about 1.6 ulp and,
// on amd64, takes a fused multiply-add path only where the CPU has one, so
// its bits (and a drill's latencies, rounded to the nanosecond) could
// differ between two amd64 machines; and its chain of about twenty
// dependent operations sits on the simulator's critical path (each sampled
// latency orders the next event), where this one's is about half as long.
//
// The method is the table-driven one of ARM's optimized-routines (and
// musl): x = k ln2/N + r with |r| ≤ ln2/2N, e^x = 2^(k/N) e^r, 2^(k/N)
// from a table of N values with their rounding tails, e^r from a degree-5
// Taylor polynomial (its truncation error, r^6/720 < 2^-60, is far below an
// ulp). The conversions to float64 round each product on its own, so no
// compiler fuses them into a multiply-add on one platform and not another.
func exp(x float64) float64 {
	if !(x > -700 && x < 700) { // overflow, underflow, subnormals, NaN: rare
		return math.Exp(x)
	}
	z := float64(x*expInvLn2N) + expShift
	bits := math.Float64bits(z)
	k := z - expShift // round(x N/ln2)
	r := x + float64(k*expNegLn2HiN) + float64(k*expNegLn2LoN)
	i := 2 * (bits % expN)
	tail := math.Float64frombits(expTable[i])
	scale := math.Float64frombits(expTable[i+1] + bits<<(52-expTableBits))
	r2 := float64(r * r)
	p := tail + r + float64(r2*(0.5+float64(r*(1.0/6)))) + float64(float64(r2*r2)*(1.0/24+float64(r*(1.0/120))))
	return scale + float64(scale*p)
}

const (
	expTableBits = 7
	expN         = 1 << expTableBits
	expInvLn2N   = 0x1.71547652b82fep0 * expN // N/ln2
	// expShift rounds to an integer when added: z's low mantissa bits are k.
	expShift = 0x1.8p52
	// ln2/N in two parts; the high part's trailing zeros make k times it
	// exact for |k| < 2^16, beyond what |x| < 700 needs.
	expNegLn2HiN = -0x1.62e42fefa0000p-8
	expNegLn2LoN = -0x1.cf79abc9e3b3ap-47
)
