#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A lock around a value, built on `pthread_mutex_t`.
///
/// The test helpers use this instead of `Synchronization.Mutex` because ThreadSanitizer
/// understands pthread mutexes (it intercepts them) but not `Mutex` on Linux: with `Mutex`,
/// TSan reports races on data that is only ever touched under the lock (even a plain
/// `withLock { $0 += 1 }` from two threads), which would bury real reports from the runtime.
public final class TestLock<Value>: @unchecked Sendable {  // `value` is only touched with `mutex` held
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var value: Value

    public init(_ value: Value) {
        self.value = value
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        let result = pthread_mutex_init(mutex, nil)
        precondition(result == 0, "pthread_mutex_init failed with error \(result)")
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    public func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
