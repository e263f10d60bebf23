import Troupe

/// One child's mutable supervision state.
struct ChildEntry {
    let record: ChildRecord
    /// `nil` while the child is being spawned.
    var target: ChildTarget?
    /// When the restarts still inside the intensity window were decided, oldest first.
    var restartTimes: [ContinuousClock.Instant] = []
    var consecutiveRestarts = 0
    /// When the last backoff delay ended (or ends).
    var restartDue: ContinuousClock.Instant?
    var restarts = 0
    var failures = 0

    init(record: ChildRecord) { self.record = record }

    /// Records a restart for the intensity budget; false (recording nothing) when it would
    /// exceed it.
    mutating func admitRestart(at now: ContinuousClock.Instant) -> Bool {
        let intensity = record.policy.intensity
        guard !intensity.isUnlimited else { return true }
        let cutoff = now - intensity.window
        if let firstKept = restartTimes.firstIndex(where: { $0 > cutoff }) {
            restartTimes.removeFirst(firstKept)
        } else {
            restartTimes.removeAll()
        }
        guard restartTimes.count < intensity.maxRestarts else { return false }
        restartTimes.append(now)
        return true
    }

    /// The backoff delay of the restart being decided now.
    mutating func nextBackoffDelay(at now: ContinuousClock.Instant) -> Duration {
        let backoff = record.policy.backoff
        guard !backoff.isNone else { return .zero }
        if let restartDue, now - restartDue >= backoff.resetAfter { consecutiveRestarts = 0 }
        consecutiveRestarts += 1
        let delay = backoff.delay(forConsecutiveRestart: consecutiveRestarts)
        restartDue = now + delay
        return delay
    }
}
