#if canImport(Glibc)
import Glibc
#endif

/// A value behind a pthread mutex.
///
/// Troupe uses this instead of `Synchronization.Mutex` because on Linux `Mutex` locks with raw
/// futex calls, which ThreadSanitizer cannot see: every access it protects would be reported
/// as a race and the sanitized stress run would fail. pthread mutexes are intercepted by TSan.
/// Used off the hot path only (registry, timer heap, observers, dedicated threads).
final class Locked<Value>: @unchecked Sendable {  // `value` is only touched between lock and unlock of `mutex`
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var value: Value

    init(_ value: Value) {
        self.value = value
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        let result = pthread_mutex_init(mutex, nil)
        precondition(result == 0, "pthread_mutex_init failed with error \(result)")
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deinitialize(count: 1)
        mutex.deallocate()
    }

    /// Runs `body` with exclusive access to the value. Any thread; not reentrant.
    func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        let locked = pthread_mutex_lock(mutex)
        precondition(locked == 0, "pthread_mutex_lock failed with error \(locked)")
        defer {
            let unlocked = pthread_mutex_unlock(mutex)
            precondition(unlocked == 0, "pthread_mutex_unlock failed with error \(unlocked)")
        }
        return try body(&value)
    }
}
