import Synchronization

/// A worker's count of the handlers it has started (`UnsafeMutablePointer<Atomic<UInt>>`),
/// passed to every turn it runs. The turn adds one before each message's handler, with a
/// relaxed load and store (the worker's thread is the only writer); the stuck-handler watchdog
/// reads it from the timer thread. An unchanged count while the worker still runs the same
/// cell means one handler is still running. The counter lives as long as its owner (a worker,
/// or the thread that drains run queues at shutdown), so the watchdog reads it without touching
/// any actor's memory.
@usableFromInline
typealias TurnProgress = UnsafeMutablePointer<Atomic<UInt>>

extension UnsafeMutablePointer where Pointee == Atomic<UInt> {
    /// A counter at 0, owned by the caller (``releaseProgressCounter()``).
    static func makeProgressCounter() -> TurnProgress {
        let counter = TurnProgress.allocate(capacity: 1)
        counter.initialize(to: Atomic(0))
        return counter
    }

    func releaseProgressCounter() {
        deinitialize(count: 1)
        deallocate()
    }

    /// One more handler started. Only the counter's owner thread calls it.
    @inlinable @inline(__always)
    func advance() {
        pointee.store(pointee.load(ordering: .relaxed) &+ 1, ordering: .relaxed)
    }
}
