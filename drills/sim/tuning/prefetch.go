package tuning

// PrefetchFrom is the number of subscribers (and of dispatcher partners,
// one per subscriber) from which the simulation prefetches their state:
// about 1 MiB of it, more than a core's L2 cache. Below it the state stays
// in the caches and prefetching only costs.
const PrefetchFrom = 1024
