#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A value behind a pthread mutex: the persistence modules' lock.
///
/// Not `Synchronization.Mutex`: on Linux its contended path is a futex in the standard library,
/// which is not built with ThreadSanitizer, so TSan saw no ordering between two holders that
/// met there and reported every contended critical section as a race (CI's TSan stage,
/// 2026-11-26: `RecoveryGate.finished`, `Journal.submit`). TSan intercepts
/// `pthread_mutex_lock`, so a race it reports here is a real one. The critical sections are a
/// few instructions long, per write or per recovery, never per event.
package final class LockedValue<Value>: @unchecked Sendable {  // `value` is only touched with `mutex` held
    private var value: Value
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>

    package init(_ value: Value) {
        self.value = value
        mutex = .allocate(capacity: 1)
        // Safety: freshly allocated, initialised once here, destroyed once in deinit.
        let status = pthread_mutex_init(mutex, nil)
        precondition(status == 0, "pthread_mutex_init failed: \(status)")
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` with the value, holding the lock. `body` must not take this lock again.
    package func withLock<T>(_ body: (inout Value) throws -> T) rethrows -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
