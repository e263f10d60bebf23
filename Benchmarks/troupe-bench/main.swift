// troupe-bench: Troupe vs Swift native actors vs libdispatch.
// Usage: troupe-bench [--quick] [--json] [--filter NAME]... [--runs N] [--no-warmup]

let config = BenchConfig.parse(Array(CommandLine.arguments.dropFirst()))
printHeader(config)

var results: [Measurement] = []
// Baselines first, so their idle/memory figures are taken before the Troupe runtime starts.
results += nativeWorkloads(config)
results += dispatchWorkloads(config)
results += troupeWorkloads(config)

report(results, config)
