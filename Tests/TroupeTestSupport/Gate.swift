#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif
import Synchronization

/// A one-shot barrier for holding a handler (and so its worker thread) until the test lets
/// it go: the deterministic way to fill a mailbox or to keep an actor busy.
///
/// ```swift
/// let gate = Gate()
/// // in the handler:   gate.enter()   (marks `entered`, then waits for `open`)
/// // in the test:      await waitUntil { gate.entered > 0 }; ...; gate.open()
/// ```
public final class Gate: Sendable {
    private let opened = Atomic<Bool>(false)
    private let arrivals = Atomic<Int>(0)
    /// How long `wait` holds a thread at most, so a failing test cannot hang the run.
    public let safetyTimeout: Duration

    public init(safetyTimeout: Duration = .seconds(60)) { self.safetyTimeout = safetyTimeout }

    /// Lets every current and future waiter through.
    public func open() { opened.store(true, ordering: .sequentiallyConsistent) }

    public var isOpen: Bool { opened.load(ordering: .sequentiallyConsistent) }

    /// Threads that called ``enter()`` so far.
    public var entered: Int { arrivals.load(ordering: .sequentiallyConsistent) }

    /// Records the arrival, then blocks the calling thread until the gate opens. Returns false
    /// if `safetyTimeout` passed first (the test is broken; it should fail elsewhere).
    @discardableResult
    public func enter() -> Bool {
        arrivals.add(1, ordering: .sequentiallyConsistent)
        return wait()
    }

    /// Blocks the calling thread until the gate opens (polling; this is a test helper for
    /// deliberately blocked threads, not a fast path). Returns false after `safetyTimeout`.
    @discardableResult
    public func wait() -> Bool {
        let deadline = ContinuousClock.now + safetyTimeout
        while !isOpen {
            if ContinuousClock.now >= deadline { return false }
            usleep(100)
        }
        return true
    }
}
