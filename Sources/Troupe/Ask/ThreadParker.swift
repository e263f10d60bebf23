#if canImport(Glibc)
    import Glibc
#endif
import Synchronization
internal import CTroupe

/// Where a thread outside the runtime waits for its blocking asks (`askBlocking` on refs and
/// pools): one per thread, made on the thread's first blocking ask and reused by every later
/// one, so a blocking ask allocates no waiter of its own.
///
/// Contract: `reset` and `wait` run on the owning thread only, one ask at a time (the thread is
/// blocked in between). `wake` runs once per ask, on the thread that completes it, after the
/// answer was written where the waiter will read it (`done` is released by `wake` and acquired
/// by `wait`). A `wake` may still be inside `notify` after the waiter has returned and begun the
/// next ask: it then only causes a spurious wake-up, which `wait` tolerates (it re-checks
/// `done`), and the parker stays alive meanwhile because the completing callback holds a
/// reference to it.
///
/// The waiter spins for up to ``spinNanoseconds`` before it parks: an answer that comes within
/// that time (a short handler on a worker that was awake) costs no futex wake-up on either side.
final class ThreadParker: @unchecked Sendable {  // see the contract above
    private let done = Atomic<Bool>(false)
    private let signal = EventCount()

    /// How long `wait` polls before parking: about a round trip through an awake worker.
    static var spinNanoseconds: Int64 { 20_000 }

    /// The calling thread's parker. Owning thread.
    static var current: ThreadParker {
        if let raw = pthread_getspecific(parkerKey) {
            // Safety: the slot holds this thread's retained parker (stored below) until the thread exits,
            // and only this thread reads it.
            return Unmanaged<ThreadParker>.fromOpaque(raw).takeUnretainedValue()
        }
        let parker = ThreadParker()
        // The thread's reference, released by the key's destructor when the thread exits.
        // Safety: one retain per thread, given back once by the key's destructor (`parkerKey`).
        let status = pthread_setspecific(parkerKey, Unmanaged.passRetained(parker).toOpaque())
        precondition(status == 0, "pthread_setspecific failed with error \(status)")
        return parker
    }

    /// Before an ask. Owning thread.
    func reset() { done.store(false, ordering: .relaxed) }

    /// The ask completed and its answer is in place. Any thread, once per ask.
    func wake() {
        done.store(true, ordering: .releasing)
        signal.notify(all: true)
    }

    /// Returns once `wake` was called for the current ask. Owning thread.
    func wait() {
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
    }
}

/// The key of every thread's ``ThreadParker`` (its destructor releases the thread's reference).
private let parkerKey: pthread_key_t = {
    var key = pthread_key_t()
    let status = pthread_key_create(&key) { raw in
        // Safety: gives back the one retain `current` stored under this key for the exiting thread.
        if let raw { Unmanaged<ThreadParker>.fromOpaque(raw).release() }
    }
    precondition(status == 0, "pthread_key_create failed with error \(status)")
    return key
}()

/// Where a blocking ask's answer goes: a slot on the waiting thread's stack, written once by
/// the completing thread before ``ThreadParker/wake()``.
struct AnswerSlot<Value: Sendable>: @unchecked Sendable {  // written once, read after the parker's acquire
    let pointer: UnsafeMutablePointer<Result<Value, AskError>?>
}
