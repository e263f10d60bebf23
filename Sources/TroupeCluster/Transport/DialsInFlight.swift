import NIOCore

/// The dials a ``NIOTransport`` has in progress, kept so that `shutdown` can end them before it
/// stops the event loops: a connect's future never completes once its loop has stopped (the
/// resolver's answer is dropped), which would leave the dialling task suspended for good.
/// Mutated only under the transport's lock.
struct DialsInFlight {
    /// Set by `shutdown`: no dial starts after it.
    private(set) var isClosed = false
    /// Each dial's connection attempts (Happy Eyeballs may make several), closed by `shutdown`.
    private var attempts: [UInt64: [any Channel]] = [:]
    private var nextDial: UInt64 = 0
    /// Tasks waiting in `shutdown` for the last dial to finish.
    private var drainWaiters: [CheckedContinuation<Void, Never>] = []

    var count: Int { attempts.count }

    /// A new dial's key, or nil once the transport is shutting down.
    mutating func begin() -> UInt64? {
        guard !isClosed else { return nil }
        nextDial &+= 1
        attempts[nextDial] = []
        return nextDial
    }

    /// Records a channel made for `dial`; false (close it) if the dial has already ended or the
    /// transport is shutting down.
    mutating func attempt(_ channel: any Channel, for dial: UInt64) -> Bool {
        guard !isClosed, attempts[dial] != nil else { return false }
        attempts[dial]!.append(channel)
        return true
    }

    /// `dial` finished; returns the shutdown waiters to resume if it was the last.
    mutating func end(_ dial: UInt64) -> [CheckedContinuation<Void, Never>] {
        attempts[dial] = nil
        guard attempts.isEmpty else { return [] }
        defer { drainWaiters = [] }
        return drainWaiters
    }

    /// Stops new dials and returns the attempts to close.
    mutating func close() -> [any Channel] {
        isClosed = true
        return attempts.values.flatMap { $0 }
    }

    /// Whether every dial has ended; if not, `waiter` is resumed when the last one does.
    mutating func drained(orWait waiter: CheckedContinuation<Void, Never>) -> Bool {
        if attempts.isEmpty { return true }
        drainWaiters.append(waiter)
        return false
    }
}
