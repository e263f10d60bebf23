internal import CTroupe

extension Duration {
    /// Whole nanoseconds, truncated toward zero; saturating at `Int64.min` and `Int64.max`.
    var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let (product, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return seconds < 0 ? .min : .max }
        let (sum, sumOverflow) = product.addingReportingOverflow(attoseconds / 1_000_000_000)
        if sumOverflow { return seconds < 0 ? .min : .max }
        return sum
    }
}

/// Monotonic-clock deadlines (``CTroupe_monotonic_ns`` time, in nanoseconds).
enum MonotonicDeadline {
    /// The latest representable deadline: "never" for every timer and wait of the runtime.
    static let distantFuture = Int64.max - 1

    /// `nanoseconds` after `start`; saturates at ``distantFuture``. A negative delay counts as
    /// zero.
    static func after(_ nanoseconds: Int64, from start: Int64) -> Int64 {
        let delay = max(0, nanoseconds)
        return delay >= distantFuture - start ? distantFuture : start + delay
    }

    /// `duration` from now; saturates at ``distantFuture``.
    static func after(_ duration: Duration) -> Int64 {
        after(duration.nanoseconds, from: CTroupe_monotonic_ns())
    }
}
