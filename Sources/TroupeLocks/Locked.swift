#if canImport(Glibc)
    import Glibc
#endif

/// A value behind a pthread mutex: the one lock of Troupe and its optional modules (an
/// internal target, imported with `internal import`, never part of any public API).
///
/// Troupe uses this instead of `Synchronization.Mutex` because on Linux `Mutex` locks with raw
/// futex calls, which ThreadSanitizer cannot see: every access it protects would be reported
/// as a race and the sanitized stress runs would fail. pthread mutexes are intercepted by TSan.
/// Used off the hot path only (live actors, timer heap, observers, dedicated threads, brokers,
/// supervisors).
///
/// The value and the mutex live in one allocation (a `ManagedBuffer` whose header is the value
/// and whose one element is the mutex). Copies of a `Locked` share that storage. Debug builds
/// use an error-checking mutex, so that a reentrant `withLock` fails at once instead of hanging.
public struct Locked<Value>: @unchecked Sendable {  // the value is touched only under the mutex
    @usableFromInline let storage: Storage

    public init(_ value: Value) {
        // Safety: `create` called on `Storage` allocates a `Storage` instance, so the downcast holds.
        storage = unsafeDowncast(Storage.create(minimumCapacity: 1) { _ in value }, to: Storage.self)
        // Safety: `minimumCapacity: 1` gives room for one element, initialised here before the value is
        // shared; the mutex never moves, as the buffer is a heap object.
        storage.withUnsafeMutablePointerToElements { mutex in
            mutex.initialize(to: pthread_mutex_t())
            #if DEBUG
                var attributes = pthread_mutexattr_t()
                pthread_mutexattr_init(&attributes)
                pthread_mutexattr_settype(&attributes, Int32(PTHREAD_MUTEX_ERRORCHECK))
                let result = pthread_mutex_init(mutex, &attributes)
                pthread_mutexattr_destroy(&attributes)
            #else
                let result = pthread_mutex_init(mutex, nil)
            #endif
            precondition(result == 0, "pthread_mutex_init failed with error \(result)")
        }
    }

    /// Runs `body` with exclusive access to the value. Any thread; not reentrant. Inlinable, so
    /// that callers in other modules run it specialised: unspecialised, each call would look up
    /// the generic metadata of `Storage` in the runtime's cache (hundreds of instructions).
    @inlinable @inline(__always)
    public func withLock<Result, Failure: Error>(
        _ body: (inout Value) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        // Safety: `value.pointee` is read and written only between the lock and the unlock below.
        // The pointers stay valid while `storage` lives; `withExtendedLifetime` keeps it.
        let (value, mutex) = storage.withUnsafeMutablePointers { ($0, $1) }
        return try withExtendedLifetime(storage) { () throws(Failure) -> Result in
            let locked = pthread_mutex_lock(mutex)
            if locked != 0 {
                fatalError(
                    locked == EDEADLK
                        ? "Locked.withLock called again on the thread that holds the lock (not reentrant)"
                        : "pthread_mutex_lock failed with error \(locked)")
            }
            defer {
                let unlocked = pthread_mutex_unlock(mutex)
                if unlocked != 0 { fatalError("pthread_mutex_unlock failed with error \(unlocked)") }
            }
            return try body(&value.pointee)
        }
    }

    /// The value and the mutex in one allocation. The header (the value) is destroyed by
    /// `ManagedBuffer`; the mutex is destroyed here.
    @usableFromInline
    final class Storage: ManagedBuffer<Value, pthread_mutex_t> {
        deinit {
            // Safety: the last reference is gone, so no thread holds or waits for the mutex; it was
            // initialised by `init` and is destroyed and deinitialised once.
            withUnsafeMutablePointerToElements { mutex in
                pthread_mutex_destroy(mutex)
                _ = mutex.deinitialize(count: 1)
            }
        }
    }
}
