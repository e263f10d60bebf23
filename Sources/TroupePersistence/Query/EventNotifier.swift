internal import TroupeLocks

/// A count that a store raises when it may have stored tagged events, and that readers wait
/// on: how followers of ``EventsByTagQuery/eventsByTag(_:after:follow:pollInterval:pageSize:)``
/// wake at once after a write of this process (or, for PostgreSQL, a notification from the
/// server). For a store of your own: call ``signal()`` after each commit that stored tags.
public final class EventNotifier: Sendable {
    private struct State {
        var count: UInt64 = 0
        var nextWaiter = 0
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
    }

    private let state = Locked(State())

    public init() {}

    /// How many times ``signal()`` was called.
    public var count: UInt64 { state.withLock { $0.count } }

    /// Raises the count and wakes every waiter.
    public func signal() {
        let woken = state.withLock { state in
            state.count &+= 1
            defer { state.waiters.removeAll() }
            return Array(state.waiters.values)
        }
        for waiter in woken { waiter.resume() }
    }

    /// Returns once the count is beyond `seen`, `timeout` has passed, or the task is cancelled.
    public func wait(beyond seen: UInt64, timeout: Duration) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { try? await Task.sleep(for: timeout) }
            group.addTask { await self.signalled(beyond: seen) }
            await group.next()
            group.cancelAll()
        }
    }

    private func signalled(beyond seen: UInt64) async {
        let id = state.withLock { state -> Int in
            defer { state.nextWaiter += 1 }
            return state.nextWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state -> Bool in
                    if state.count != seen || Task.isCancelled { return true }
                    state.waiters[id] = waiter
                    return false
                }
                if resumeNow { waiter.resume() }
            }
        } onCancel: {
            state.withLock { $0.waiters.removeValue(forKey: id) }?.resume()
        }
    }
}
