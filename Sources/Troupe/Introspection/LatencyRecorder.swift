internal import CTroupe

/// A latency histogram that any number of threads record into, for modules and applications
/// that measure their own latencies (a journal's write acknowledgements, a client's round
/// trips) with the same buckets as Troupe's own histograms, and publish them in
/// ``ActorSystem/snapshot()`` with a ``SnapshotSection``.
///
/// Recording is a few relaxed atomic adds (no lock, no allocation); ``histogram`` copies the
/// counts out (racy but torn-free: a copy taken while others record may miss the newest
/// samples).
///
/// ```swift
/// let commits = LatencyRecorder()
/// let started = ContinuousClock.now
/// try await store.commit(batch)
/// commits.record(ContinuousClock.now - started)
/// print(commits.histogram)   // n=…, p50 …, p99 …, max …
/// ```
public final class LatencyRecorder: Sendable {
    private nonisolated(unsafe) let recorded: OpaquePointer  // C histogram: any thread records or reads

    /// An empty recorder.
    public init() { recorded = CTroupe_histogram_create() }

    deinit { CTroupe_histogram_destroy(recorded) }

    /// Records one sample (negative durations count as zero). Any thread.
    public func record(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        guard seconds >= 0, attoseconds >= 0 else { return record(nanoseconds: 0) }
        record(nanoseconds: UInt64(seconds) &* 1_000_000_000 &+ UInt64(attoseconds / 1_000_000_000))
    }

    /// Records one sample in nanoseconds. Any thread.
    public func record(nanoseconds: UInt64) {
        CTroupe_histogram_record(recorded, nanoseconds)
    }

    /// A copy of the samples so far. Any thread.
    public var histogram: LatencyHistogram { LatencyHistogram(copying: recorded) }
}
