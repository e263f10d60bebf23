#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif
import Testing

/// Polls `condition` until it holds or `timeout` passes. On timeout records a test issue
/// (with `message`) and returns false; never assumes that some fixed time was "enough".
@discardableResult
public func waitUntil(
    timeout: Duration = .seconds(20),
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
    timeout: Duration = .seconds(20),
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
