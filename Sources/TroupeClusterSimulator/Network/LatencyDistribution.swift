#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

import TroupeClusterMembership

/// One-way message latency on a link, drawn per message: log-normal, given by its median and
/// 99th percentile (the two figures a measurement of a real network gives), so that most
/// messages take about the median and a few take several times as long.
public struct LatencyDistribution: Sendable, Hashable, CustomStringConvertible {
    public let median: Duration
    public let p99: Duration
    /// The log-normal's σ: ln(p99 / median) / z(0.99).
    let sigma: Double
    let medianNanoseconds: Double

    /// `p99` below `median` is taken as equal to it (a fixed latency).
    public init(median: Duration, p99: Duration) {
        self.median = median
        self.p99 = max(p99, median)
        medianNanoseconds = Double(median.simulatedNanoseconds)
        let ratio = Double(self.p99.simulatedNanoseconds) / max(1, medianNanoseconds)
        sigma = ratio > 1 ? log(ratio) / 2.326_348 : 0
    }

    /// A fixed latency.
    public static func fixed(_ latency: Duration) -> LatencyDistribution {
        LatencyDistribution(median: latency, p99: latency)
    }

    /// Loopback TCP between two processes on this project's 2-vCPU VM, as
    /// `troupe-bench cluster`'s echo rows measure it (the fidelity rows' default).
    public static let localMachine = LatencyDistribution(median: .microseconds(60), p99: .microseconds(400))

    /// One data centre: 250 µs typical, 2 ms at the 99th percentile.
    public static let dataCentre = LatencyDistribution(median: .microseconds(250), p99: .milliseconds(2))

    /// A draw, in nanoseconds (at least 1).
    func sample(using generator: inout SplitMix) -> Int64 {
        guard sigma > 0 else { return max(1, Int64(medianNanoseconds)) }
        return max(1, Int64(medianNanoseconds * exp(sigma * generator.nextGaussian())))
    }

    public var description: String { "latency median \(median), p99 \(p99)" }
}

extension SplitMix {
    /// Uniform in [0, 1).
    mutating func nextUnit() -> Double { Double(next() >> 11) * 0x1.0p-53 }

    /// Standard normal (Box–Muller; one of the pair is dropped, for simplicity).
    mutating func nextGaussian() -> Double {
        let u1 = max(nextUnit(), .leastNonzeroMagnitude)
        let u2 = nextUnit()
        return (-2 * log(u1)).squareRoot() * cos(2 * .pi * u2)
    }
}

extension Duration {
    /// The whole nanoseconds (the simulator's clock unit).
    var simulatedNanoseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}
