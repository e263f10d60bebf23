#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif
import Testing

/// Polls `condition` until it holds or `timeout` passes. On timeout records a test issue
/// (with `message`) and returns false; never assumes that some fixed time was "enough". The
/// default, 20 s, only guards against a hang, so it grows under ThreadSanitizer
/// (``StressScale/hangGuard(_:)``): a CI run's TSan stage once held every test back about 30 s
/// at its start, and a wait for one failed handler timed out (2026-12-01).
@discardableResult
public func waitUntil(
    timeout: Duration = StressScale.hangGuard(.seconds(20)),
    _ message: @autoclosure () -> String = "condition",
    sourceLocation: SourceLocation = #_sourceLocation,
    condition: () -> Bool
) async -> Bool {
    let deadline = ContinuousClock.now + timeout
    var pause = Duration.microseconds(50)
    while !condition() {
        if ContinuousClock.now >= deadline {
            // One last look: the condition may have become true while we slept.
            if condition() { return true }
            Issue.record("waitUntil timed out after \(timeout): \(message())", sourceLocation: sourceLocation)
            return false
        }
        try? await Task.sleep(for: pause)
        pause = min(pause * 2, .milliseconds(5))
    }
    return true
}

/// ``waitUntil(timeout:_:sourceLocation:condition:)`` for plain threads (blocks the caller).
@discardableResult
public func waitUntilBlocking(
    timeout: Duration = StressScale.hangGuard(.seconds(20)),
    _ message: @autoclosure () -> String = "condition",
    sourceLocation: SourceLocation = #_sourceLocation,
    condition: () -> Bool
) -> Bool {
    let deadline = ContinuousClock.now + timeout
    while !condition() {
        if ContinuousClock.now >= deadline {
            if condition() { return true }
            Issue.record("waitUntilBlocking timed out after \(timeout): \(message())", sourceLocation: sourceLocation)
            return false
        }
        usleep(200)
    }
    return true
}

/// The result of `call` if it comes within `timeout`, else nil, without waiting for a call that
/// never returns: the call runs in a task of its own, which is left behind if it hangs (a
/// structured child would make the caller wait for it). For driver calls that may never
/// complete, such as a query on a connection the server terminated, seen with postgres-nio: the
/// test goes on and says what it saw instead of hanging the test run.
public func answer<T: Sendable>(
    within timeout: Duration, _ call: @escaping @Sendable () async throws -> T
) async -> Result<T, any Error>? {
    let first = FirstAnswer<T>()
    return await withCheckedContinuation { continuation in
        first.set(continuation)
        Task {
            let result: Result<T, any Error>
            do { result = .success(try await call()) } catch { result = .failure(error) }
            first.resume(with: result)
        }
        Task {
            try? await Task.sleep(for: timeout)
            first.resume(with: nil)
        }
    }
}

/// Resumes its continuation once, with whichever answer comes first.
private final class FirstAnswer<T: Sendable>: Sendable {
    private let continuation = TestLock<CheckedContinuation<Result<T, any Error>?, Never>?>(nil)

    func set(_ continuation: CheckedContinuation<Result<T, any Error>?, Never>) {
        self.continuation.withLock { $0 = continuation }
    }

    func resume(with result: Result<T, any Error>?) {
        continuation.withLock { stored in
            let taken = stored
            stored = nil
            return taken
        }?.resume(returning: result)
    }
}
