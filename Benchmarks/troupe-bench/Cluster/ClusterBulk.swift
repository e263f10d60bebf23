// Bulk arguments between two TroupeCluster nodes (issue 28's rows).

import CBenchSupport
import Histogram
import TroupeCluster

/// Calls whose argument is a `[UInt8]` of 1 MiB and 8 MiB (the reply is its count): one way of
/// bulk data plus a small reply.
func clusterBulkRows(_ options: ClusterBenchOptions) async throws -> [ClusterRow] {
    clusterProgress("bulk arguments")
    // 8 MiB of payload needs a little more than the default 8 MiB frame.
    let nodes = try await TwoNodes(maximumFrameSize: 16 << 20)
    var rows: [ClusterRow] = []
    for (size, label, count) in [
        (1 << 20, "1 MiB", options.quick ? 30 : 200), (8 << 20, "8 MiB", options.quick ? 5 : 30),
    ] {
        let bytes = [UInt8]((0..<size).map { UInt8(truncatingIfNeeded: $0) })
        for _ in 0..<3 { _ = try await nodes.remote.count(bytes) }
        var histogram = makeLatencyHistogram()
        for _ in 0..<count {
            let start = CBenchSupport_now_ns()
            let answer = try await nodes.remote.count(bytes)
            histogram.record(CBenchSupport_now_ns() &- start)
            guard answer == size else { fatalError("the remote count was \(answer), not \(size)") }
        }
        var row = ClusterRow(
            section: .latency, name: "TroupeCluster call with a \(label) [UInt8] argument",
            note: "a task awaits count(bytes) on the other node (the bytes one way, an Int back); event loops unpinned",
            histogram: histogram)
        if size == 1 << 20 { row.target = .p50AtMost(.milliseconds(5)) }
        rows.append(row)
    }
    await nodes.shutdown()
    return rows
}
