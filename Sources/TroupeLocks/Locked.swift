#if canImport(Glibc)
import Glibc
#endif

/// A value behind a pthread mutex: the one lock of Troupe and its optional modules (an
/// internal target, imported with `internal import`, never part of any public API).
///
/// Troupe uses this instead of `Synchronization.Mutex` because on Linux `Mutex` locks with raw
/// futex calls, which ThreadSanitizer cannot see: every access it protects would be reported
/// as a race and the sanitized stress runs would fail. pthread mutexes are intercepted by TSan.
/// Used off the hot path only (registry, timer heap, observers, dedicated threads, brokers,
/// supervisors).
public final class Locked<Value>: @unchecked Sendable {  // `value` is only touched between lock and unlock of `mutex`
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var value: Value

    public init(_ value: Value) {
        self.value = value
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        #if DEBUG
        // Debug builds: an error-checking mutex, so that taking the lock twice on one thread
        // (a reentrant `withLock`) fails at once with EDEADLK instead of hanging.
        var attributes = pthread_mutexattr_t()
        pthread_mutexattr_init(&attributes)
        pthread_mutexattr_settype(&attributes, Int32(PTHREAD_MUTEX_ERRORCHECK))
        let result = pthread_mutex_init(mutex, &attributes)
        pthread_mutexattr_destroy(&attributes)
        #else
        let result = pthread_mutex_init(mutex, nil)
        #endif
        if result != 0 { fatalError("pthread_mutex_init failed with error \(result)") }
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deinitialize(count: 1)
        mutex.deallocate()
    }

    /// Runs `body` with exclusive access to the value. Any thread; not reentrant.
    @inline(__always)
    public func withLock<Result, Failure: Error>(_ body: (inout Value) throws(Failure) -> Result) throws(Failure) -> Result {
        let locked = pthread_mutex_lock(mutex)
        if locked != 0 {
            fatalError(locked == EDEADLK ? "Locked.withLock called again on the thread that holds the lock (not reentrant)" : "pthread_mutex_lock failed with error \(locked)")
        }
        defer {
            let unlocked = pthread_mutex_unlock(mutex)
            if unlocked != 0 { fatalError("pthread_mutex_unlock failed with error \(unlocked)") }
        }
        return try body(&value)
    }
}
