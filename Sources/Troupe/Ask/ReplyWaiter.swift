import Synchronization

/// Blocks one non-worker thread until an ask completes: `complete` from any thread (once),
/// `wait` on the one blocked thread. Used by `askBlocking` on refs and pools.
final class ReplyWaiter<Value: Sendable>: @unchecked Sendable {  // `result`: written before `done` is released
    private var result: Result<Value, AskError>?
    private let done = Atomic<Bool>(false)
    private let signal = EventCount()

    func complete(_ value: Result<Value, AskError>) {
        result = value
        done.store(true, ordering: .releasing)
        signal.notify(all: true)
    }

    func wait() -> Result<Value, AskError> {
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
