/// Keeps warnings about misbehaving peers to one line per kind per interval: the first of an
/// interval is logged, the rest counted and reported with the next one logged. A flood of bad
/// connections then costs a few log lines, not one per connection.
///
/// Not thread-safe: its owner keeps it under a lock.
struct WarningLimiter {
    let interval: Duration
    private var kinds: [String: Kind] = [:]

    struct Kind {
        var lastLogged: ContinuousClock.Instant
        var suppressed: Int
    }

    init(interval: Duration) { self.interval = interval }

    /// Whether to log a warning of `kind` now, and how many of that kind were suppressed
    /// since the last one logged.
    mutating func admit(_ kind: String, now: ContinuousClock.Instant) -> (log: Bool, suppressed: Int) {
        guard var entry = kinds[kind] else {
            kinds[kind] = Kind(lastLogged: now, suppressed: 0)
            return (true, 0)
        }
        guard now - entry.lastLogged >= interval else {
            entry.suppressed += 1
            kinds[kind] = entry
            return (false, 0)
        }
        let suppressed = entry.suppressed
        kinds[kind] = Kind(lastLogged: now, suppressed: 0)
        return (true, suppressed)
    }
}
