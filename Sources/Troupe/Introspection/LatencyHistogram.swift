internal import CTroupe

/// A copy of a sampled latency histogram (time in mailbox, or handler duration): log-linear
/// buckets, four per power of two, so a percentile is exact to within a quarter of its power of
/// two (12.5 % either way at most).
///
/// Counts are samples, not messages: with the default sampling interval of 1,024, one message
/// in 1,024 per sending thread is measured.
public struct LatencyHistogram: Sendable, Hashable {
    /// Samples per bucket (``bucketCount`` entries; see ``lowerBound(ofBucket:)``).
    public let bucketCounts: [UInt64]
    /// The sum of all samples, in nanoseconds.
    public let totalNanoseconds: UInt64
    /// The largest sample, in nanoseconds.
    public let maximumNanoseconds: UInt64

    /// Buckets of every histogram.
    public static var bucketCount: Int { Int(CTroupe_histogram_bucket_count) }

    /// An empty histogram.
    public init() {
        bucketCounts = Array(repeating: 0, count: Self.bucketCount)
        totalNanoseconds = 0
        maximumNanoseconds = 0
    }

    /// A copy of a C histogram. Any thread.
    init(copying histogram: OpaquePointer) {
        var count: UInt64 = 0
        var sum: UInt64 = 0
        var max: UInt64 = 0
        // Safety: `CTroupe_histogram_read` writes all `bucketCount` counters (its contract), so every
        // element is initialised; the capacity is not 0, so the base address exists.
        bucketCounts = [UInt64](unsafeUninitializedCapacity: Self.bucketCount) { buffer, initialized in
            CTroupe_histogram_read(histogram, &count, &sum, &max, buffer.baseAddress!)
            initialized = Self.bucketCount
        }
        totalNanoseconds = sum
        maximumNanoseconds = max
    }

    /// Samples recorded (the sum of the buckets).
    public var count: UInt64 { bucketCounts.reduce(0, &+) }

    /// The mean sample; zero when empty.
    public var mean: Duration {
        let samples = count
        return samples == 0 ? .zero : .nanoseconds(Int64(totalNanoseconds / samples))
    }

    /// The largest sample.
    public var maximum: Duration { .nanoseconds(Int64(clamping: maximumNanoseconds)) }

    /// The smallest value bucket `index` holds, in nanoseconds.
    public static func lowerBound(ofBucket index: Int) -> UInt64 {
        requireValidUse(
            index >= 0 && index < bucketCount,
            "LatencyHistogram.lowerBound(ofBucket:): \(index) is not in 0..<\(bucketCount)")
        return CTroupe_histogram_bucket_lower_bound(UInt32(index))
    }

    /// The value below which `fraction` of the samples fall (0.5: the median; 0.99: p99), as the
    /// middle of its bucket (never above ``maximum``); zero when empty. `fraction` is clamped to
    /// 0...1.
    public func percentile(_ fraction: Double) -> Duration {
        let samples = count
        guard samples > 0 else { return .zero }
        let clamped = min(1, max(0, fraction))
        let rank = max(1, UInt64((clamped * Double(samples)).rounded(.up)))
        var seen: UInt64 = 0
        for (index, bucket) in bucketCounts.enumerated() where bucket > 0 {
            seen += bucket
            if seen >= rank {
                let lower = Self.lowerBound(ofBucket: index)
                let upper = index + 1 < Self.bucketCount ? Self.lowerBound(ofBucket: index + 1) : lower
                let middle = lower + (upper - lower) / 2
                return .nanoseconds(Int64(clamping: min(middle, maximumNanoseconds)))
            }
        }
        return maximum
    }

    /// This histogram's samples plus `other`'s (to combine actors, or systems).
    public func merged(with other: LatencyHistogram) -> LatencyHistogram {
        LatencyHistogram(
            bucketCounts: zip(bucketCounts, other.bucketCounts).map { $0 &+ $1 },
            totalNanoseconds: totalNanoseconds &+ other.totalNanoseconds,
            maximumNanoseconds: max(maximumNanoseconds, other.maximumNanoseconds))
    }

    private init(bucketCounts: [UInt64], totalNanoseconds: UInt64, maximumNanoseconds: UInt64) {
        self.bucketCounts = bucketCounts
        self.totalNanoseconds = totalNanoseconds
        self.maximumNanoseconds = maximumNanoseconds
    }
}

extension LatencyHistogram: CustomStringConvertible {
    /// `n=…, p50 …, p99 …, max …`.
    public var description: String {
        let samples = count
        guard samples > 0 else { return "n=0" }
        return
            "n=\(samples), p50 \(Self.format(percentile(0.5))), p99 \(Self.format(percentile(0.99))), max \(Self.format(maximum))"
    }

    /// A duration as this histogram's description and the system's snapshots print it: three
    /// significant figures in the largest unit that fits (`"412 µs"`, `"3.41 ms"`, `"1.5 s"`), for
    /// modules that print latencies beside them. Any thread.
    public static func format(_ duration: Duration) -> String {
        let nanoseconds = Double(duration.nanoseconds)
        let (value, unit): (Double, String) =
            switch nanoseconds {
            case ..<1_000: (nanoseconds, "ns")
            case ..<1_000_000: (nanoseconds / 1_000, "µs")
            case ..<1_000_000_000: (nanoseconds / 1_000_000, "ms")
            default: (nanoseconds / 1_000_000_000, "s")
            }
        let rounded =
            value >= 100 ? (value).rounded() : value >= 10 ? (value * 10).rounded() / 10 : (value * 100).rounded() / 100
        return value >= 100 ? "\(Int(rounded)) \(unit)" : "\(rounded) \(unit)"
    }
}
