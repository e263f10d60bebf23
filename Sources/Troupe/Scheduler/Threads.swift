#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif
internal import CTroupe

/// Thread creation and CPU placement: the only place Troupe calls pthreads directly.
enum Threads {
    /// A started OS thread running `body`; join it with ``join(_:)``.
    static func start(name: String, _ body: @escaping @Sendable () -> Void) -> pthread_t {
        final class Box: Sendable {
            let body: @Sendable () -> Void
            init(_ body: @escaping @Sendable () -> Void) { self.body = body }
        }
        // Safety: the new thread takes this retain back once, as it starts (the closure below).
        let box = Unmanaged.passRetained(Box(body)).toOpaque()
        var thread = pthread_t()
        let result = pthread_create(
            &thread, nil,
            { raw in
                // Safety: `raw` is the retained box passed to `pthread_create` above, taken back exactly once.
                let box = Unmanaged<Box>.fromOpaque(raw!).takeRetainedValue()
                box.body()
                return nil
            }, box)
        if !(result == 0) { fatalError("pthread_create failed with error \(result)") }
        // Names are limited to 15 bytes by the kernel; failure to name is harmless.
        _ = CTroupe_set_thread_name(thread, String(name.prefix(15)))
        return thread
    }

    /// Lets a thread's resources go when it ends, for threads nobody joins.
    static func detach(_ thread: pthread_t) {
        let result = pthread_detach(thread)
        if !(result == 0) { fatalError("pthread_detach failed with error \(result)") }
    }

    static func join(_ thread: pthread_t) {
        let result = pthread_join(thread, nil)
        if !(result == 0) { fatalError("pthread_join failed with error \(result)") }
    }

    /// Pins the calling thread to `cpu`.
    static func pinCurrentThread(to cpu: Int) {
        let result = CTroupe_pin_current_thread(Int32(cpu))
        if !(result == 0) { fatalError("pthread_setaffinity_np(cpu \(cpu)) failed with error \(result)") }
    }

    /// The CPUs this process may run on (its affinity mask), ascending.
    static func allowedCPUs() -> [Int] {
        var cpus = [Int32](repeating: 0, count: 1024)
        let count = CTroupe_allowed_cpus(&cpus, Int32(cpus.count))
        if !(count >= 0) { fatalError("sched_getaffinity failed with error \(-count)") }
        return cpus.prefix(Int(count)).map(Int.init)
    }
}
