internal import TroupeLocks
import Synchronization

/// A registration of an observer in an ``ObserverList`` (a system hook, a dead-letter observer,
/// a supervisor's or the promises' observer): ``cancel()`` removes it. Dropping the token does
/// not cancel; observers also go when their list is closed (a system's, at shutdown).
///
/// Thread-safety: `cancel()` from any thread, any number of times. An event being delivered on
/// another thread while `cancel()` runs may still reach the observer once; none after `cancel()`
/// has returned and that delivery has ended.
public final class Observation: Sendable {
    private let removal: @Sendable () -> Void
    private let cancelled = Atomic<Bool>(false)

    init(_ removal: @escaping @Sendable () -> Void) { self.removal = removal }

    /// Removes the observer. Later calls do nothing.
    public func cancel() {
        guard !cancelled.exchange(true, ordering: .acquiringAndReleasing) else { return }
        removal()
    }

    /// Whether ``cancel()`` was called.
    public var isCancelled: Bool { cancelled.load(ordering: .acquiring) }
}

/// The observers of one kind of event, each removable through the ``Observation`` that
/// ``add(_:)`` returns: the one observer list of Troupe (system hooks, dead letters) and of its
/// optional modules (supervision events, promise diagnostics).
///
/// Thread-safety: every method from any thread. Registering and removing take a lock; an event
/// with no observer costs one atomic load (``isEmpty``); delivering copies the list under the
/// lock (a retain, no allocation) and calls the observers outside it, on the calling thread.
public final class ObserverList<Observer: Sendable>: Sendable {
    private struct Entry {
        let id: UInt64
        let observer: Observer
    }
    /// `nil` once closed (the system shut down): later observers are not kept.
    private let entries = Locked<[Entry]?>([])
    private let count = Atomic<Int>(0)
    private let nextID = Atomic<UInt64>(0)

    public init() {}

    /// Whether no observer is registered (one atomic load).
    public var isEmpty: Bool { count.load(ordering: .acquiring) == 0 }

    /// Adds `observer`; the returned token removes it. After ``close()`` the observer is not
    /// kept and the token comes back cancelled.
    @discardableResult
    public func add(_ observer: Observer) -> Observation {
        let id = nextID.add(1, ordering: .relaxed).newValue
        let kept = entries.withLock { entries in
            guard entries != nil else { return false }
            entries!.append(Entry(id: id, observer: observer))
            count.store(entries!.count, ordering: .releasing)
            return true
        }
        // Weak: a token kept by its user must not keep the list (and its observers) alive.
        let observation = Observation { [weak self] in self?.remove(id) }
        // Closed: no event will come, and keeping the observer could keep its system alive.
        if !kept { observation.cancel() }
        return observation
    }

    private func remove(_ id: UInt64) {
        entries.withLock { entries in
            entries?.removeAll { $0.id == id }
            count.store(entries?.count ?? 0, ordering: .releasing)
        }
    }

    /// Drops every observer and keeps none added later (the system shut down): observers often
    /// capture the system, and would otherwise keep it alive through its hooks.
    public func close() {
        let dropped = entries.withLock { entries in
            defer { count.store(0, ordering: .releasing) }
            let all = entries
            entries = nil
            return all
        }
        withExtendedLifetime(dropped) {}  // released outside the lock: deinits may take locks
    }

    /// Calls `body` with each observer, outside the lock.
    @inline(__always)
    public func forEach(_ body: (Observer) -> Void) {
        guard !isEmpty else { return }
        for entry in entries.withLock({ $0 }) ?? [] { body(entry.observer) }
    }
}
