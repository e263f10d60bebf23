extension Duration {
    /// Whole nanoseconds (saturating).
    var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let (product, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return seconds < 0 ? .min : .max }
        return product &+ attoseconds / 1_000_000_000
    }
}

