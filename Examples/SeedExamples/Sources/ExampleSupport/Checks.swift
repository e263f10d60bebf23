// What every seed program uses to narrate and to check itself.

import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Reports a broken expectation and ends the program with a non-zero status.
public func fail(_ what: String) -> Never {
    print("FAILED: \(what)")
    exit(1)
}

/// Fails the program unless `condition` holds.
public func check(_ condition: Bool, _ what: @autoclosure () -> String) {
    if !condition { fail(what()) }
}

/// Starts a step of the narrative.
public func step(_ title: String) { print("\n== \(title)") }

/// Polls `condition` every few milliseconds for at most `timeout` (for what no ask or promise can
/// report: timer ticks, supervision events); fails the program on timeout.
public func waitUntil(
    _ what: String, timeout: Duration = .seconds(5), _ condition: () async throws -> Bool
) async rethrows {
    let deadline = ContinuousClock.now + timeout
    while try await !condition() {
        if ContinuousClock.now >= deadline { fail("timed out waiting until \(what)") }
        try? await Task.sleep(for: .milliseconds(2))
    }
}

/// Lines recorded from any thread (events, letters), read back in order.
public final class Lines: Sendable {
    private let lines = Mutex<[String]>([])
    public init() {}
    public func append(_ line: String) { lines.withLock { $0.append(line) } }
    public var all: [String] { lines.withLock { $0 } }
}
