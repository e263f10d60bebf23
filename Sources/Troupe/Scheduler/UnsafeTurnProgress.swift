import Synchronization

/// A worker's count of the handlers it has started, passed to every turn it runs. The turn adds
/// one before each message's handler, with a relaxed load and store (the worker's thread is the
/// only writer); the stuck-handler watchdog reads it from the timer thread. An unchanged count
/// while the worker still runs the same cell means one handler is still running.
///
/// Unsafe: a raw pointer to a counter its owner allocates and frees by hand. The owner (a
/// worker, or the thread that drains run queues at shutdown) keeps it alive as long as any turn
/// or the watchdog can reach it, so the watchdog reads it without touching any actor's memory.
@usableFromInline
struct UnsafeTurnProgress {
    @usableFromInline let counter: UnsafeMutablePointer<Atomic<UInt>>

    private init(counter: UnsafeMutablePointer<Atomic<UInt>>) { self.counter = counter }

    /// A counter at 0, owned by the caller (``deallocate()``).
    static func allocate() -> UnsafeTurnProgress {
        // Safety: one `Atomic<UInt>`, initialised here; its owner frees it once with `deallocate()`.
        let counter = UnsafeMutablePointer<Atomic<UInt>>.allocate(capacity: 1)
        counter.initialize(to: Atomic(0))
        return UnsafeTurnProgress(counter: counter)
    }

    /// Frees the counter. Its owner, once no turn runs with it and the watchdog cannot read it.
    func deallocate() {
        // Safety: called once by the owner, when no turn runs with the counter and the watchdog can no
        // longer read it (the contract above), so nothing touches it after this.
        counter.deinitialize(count: 1)
        counter.deallocate()
    }

    /// One more handler started. Only the counter's owner thread calls it.
    @inlinable @inline(__always)
    func advance() {
        // Safety: the owner thread is the only writer, and the counter outlives the turn.
        counter.pointee.store(counter.pointee.load(ordering: .relaxed) &+ 1, ordering: .relaxed)
    }

    // Safety: the owner keeps the counter alive while a reader can reach it (snapshots and the
    // watchdog read only the workers' counters, which live as long as their workers).
    /// Handlers started so far. Any thread (relaxed: a racy but torn-free observation).
    var handlersStarted: UInt { counter.pointee.load(ordering: .relaxed) }
}
