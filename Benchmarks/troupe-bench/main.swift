// troupe-bench: the Savina micro suite (plus CAF's N:1 test, spawn cost, latency percentiles
// and idle cost) on Troupe, Swift native actors and libdispatch serial queues.
// Usage: see `troupe-bench --help` (Harness/Command.swift) and Benchmarks/README.md.

TroupeBench.main()
