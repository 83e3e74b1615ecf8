package tuning

// PrefetchFrom is the number of subscribers (and of dispatcher partners,
// one per subscriber) from which the simulation prefetches their state:
// about 2 MiB of it (some 450 bytes a subscriber: its simulated partner,
// breaker and core record), past a core's L2 cache. Below it the state
// stays in the caches and prefetching only costs. Measured on the flagship
// drill scaled (CPU-seconds of the run in a CPU profile, two runs each):
// at 2,000 subscribers 4.4 and 4.3 with prefetch, 4.1 and 4.0 without; at
// 4,000 the same within noise; at 8,000 22 and 24 with, 25 and 27 without;
// at 20,000 97 with, 119 without. Measured again with the requests
// trimmed to what each event reads (user CPU-s of the flagship ×10, eight
// runs each, alternated): 2.86 with, 2.44 without (medians).
const PrefetchFrom = 4096
