#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif
import Synchronization

/// Real OS threads (pthreads) for tests: producers that must not run on Swift's cooperative
/// pool (2 threads on a 2-core machine) and callers that must not be Troupe workers.
public enum TestThreads {
    private final class Job: Sendable {
        let body: @Sendable () -> Void
        init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    }

    /// Starts a joinable thread running `body`.
    public static func start(_ body: @escaping @Sendable () -> Void) -> pthread_t {
        let job = Unmanaged.passRetained(Job(body)).toOpaque()
        var thread = pthread_t()
        let result = pthread_create(
            &thread, nil,
            { raw in
                Unmanaged<Job>.fromOpaque(raw!).takeRetainedValue().body()
                return nil
            }, job)
        precondition(result == 0, "pthread_create failed with error \(result)")
        return thread
    }

    /// Starts a detached thread running `body` (nobody joins it).
    public static func detach(_ body: @escaping @Sendable () -> Void) {
        let thread = start(body)
        let result = pthread_detach(thread)
        precondition(result == 0, "pthread_detach failed with error \(result)")
    }

    /// Waits for a thread started with ``start(_:)``. Blocks the caller.
    public static func join(_ thread: pthread_t) {
        let result = pthread_join(thread, nil)
        precondition(result == 0, "pthread_join failed with error \(result)")
    }

    /// Runs `body(index)` for every index in `0..<count`, each on its own OS thread, and returns
    /// once all of them finished. The awaiting task is suspended, not blocked: a helper thread
    /// does the joining.
    public static func run(count: Int, _ body: @escaping @Sendable (Int) -> Void) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            detach {
                let threads = (0..<count).map { index in start { body(index) } }
                for thread in threads { join(thread) }
                continuation.resume()
            }
        }
    }

    /// Runs `body` on a new OS thread and returns its result.
    public static func onNewThread<Value: Sendable>(_ body: @escaping @Sendable () -> Value) async -> Value {
        let result = Box<Value>()
        await run(count: 1) { _ in result.set(body()) }
        return result.value!
    }

    /// An identifier of the calling OS thread.
    public static var currentID: UInt { UInt(pthread_self()) }
}
