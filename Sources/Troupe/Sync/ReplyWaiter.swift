/// Blocks one non-worker thread until an ask completes: `complete` from any thread (once),
/// `wait` on the one blocked thread; the result is handed over under the mutex.
final class ReplyWaiter<Value: Sendable>: Sendable {
    private let result = Locked<Result<Value, AskError>?>(nil)
    private let signal = EventCount()

    func complete(_ value: Result<Value, AskError>) {
        result.withLock { $0 = value }
        signal.notify(all: true)
    }

    func wait() -> Result<Value, AskError> {
        while true {
            let epoch = signal.prepareWait()
            if let value = result.withLock({ $0 }) {
                signal.cancelWait()
                return value
            }
            signal.wait(epoch: epoch)
        }
    }
}
