import Synchronization
internal import CTroupe

/// Blocks one non-worker thread until an ask completes: `complete` from any thread (once),
/// `wait` on the one blocked thread. Used by `askBlocking` on refs and pools.
///
/// The waiter spins for up to ``spinNanoseconds`` before it parks: an answer that comes within
/// that time (a short handler on a worker that was awake) costs no futex wake-up on either side.
final class ReplyWaiter<Value: Sendable>: @unchecked Sendable {  // `result`: written before `done` is released
    private var result: Result<Value, AskError>?
    private let done = Atomic<Bool>(false)
    private let signal = EventCount()

    func complete(_ value: Result<Value, AskError>) {
        result = value
        done.store(true, ordering: .releasing)
        signal.notify(all: true)
    }

    /// How long `wait` polls before parking: about a round trip through an awake worker.
    static var spinNanoseconds: Int64 { 20_000 }

    func wait() -> Result<Value, AskError> {
        if !done.load(ordering: .acquiring) {
            let spinUntil = CTroupe_monotonic_ns() &+ Self.spinNanoseconds
            var polls = 0
            while !done.load(ordering: .acquiring) {
                CTroupe_cpu_relax()
                polls &+= 1
                // Read the clock every 64 polls only: it costs more than a poll.
                if polls & 63 == 0 && CTroupe_monotonic_ns() > spinUntil { break }
            }
        }
        while !done.load(ordering: .acquiring) {
            let epoch = signal.prepareWait()
            if done.load(ordering: .acquiring) {
                signal.cancelWait()
                break
            }
            signal.wait(epoch: epoch)
        }
        return result!
    }
}
