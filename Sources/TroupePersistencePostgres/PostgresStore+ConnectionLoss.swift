import PostgresNIO
internal import TroupeLocks

/// A store call's connection closed before the call completed: nothing of it is acknowledged
/// (a write in it may or may not be stored; writer epochs make either safe for a journal).
public struct PostgresConnectionClosed: Error, Sendable, CustomStringConvertible {
    public init() {}

    public var description: String {
        "the connection to PostgreSQL closed while a store call was in flight (a write in it may still be stored)"
    }
}

extension PostgresStore {
    /// `body`'s result, or ``PostgresConnectionClosed`` as soon as `connection` closes,
    /// whichever comes first.
    ///
    /// postgres-nio 1.33.2 writes a query to its channel without a promise: on a channel that has
    /// just closed (the server ended the session between the pool's lease and the query) the
    /// write fails unseen and the query never completes. A journal's commit then waited for its
    /// store timeout (30 s by default) with every writer behind it. `body` runs in a task of its
    /// own, left behind if it never completes: its connection is closed, so it holds only its
    /// own memory.
    func failingOnClose<T: Sendable>(
        of connection: PostgresConnection, _ body: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        let outcome = FirstOutcome<T>()
        return try await withCheckedThrowingContinuation { continuation in
            outcome.set(continuation)
            let call = closingConnections.register(connection) {
                outcome.resume(with: .failure(PostgresConnectionClosed()))
            }
            Task {
                let result: Result<T, any Error>
                do { result = .success(try await body()) } catch { result = .failure(error) }
                closingConnections.unregister(connection, call: call)
                outcome.resume(with: result)
            }
        }
    }
}

/// The calls in flight on each connection, failed when it closes. One callback per connection
/// on its close future, registered with its first call (a callback per call would pile up on a
/// connection the pool keeps for hours).
final class ClosingConnections: Sendable {
    private struct State {
        var lastCall: UInt64 = 0
        /// By connection ID: the calls in flight, each with what fails it.
        var calls: [PostgresConnection.ID: [UInt64: @Sendable () -> Void]] = [:]
    }
    private let state = Locked(State())

    /// Registers a call on `connection`; `fail` runs (once, on the connection's event loop) if
    /// the connection closes before ``unregister(_:call:)``, at once if it has closed already.
    func register(_ connection: PostgresConnection, fail: @escaping @Sendable () -> Void) -> UInt64 {
        let id = connection.id
        let (call, watching) = state.withLock { state -> (UInt64, Bool) in
            state.lastCall += 1
            let watching = state.calls[id] != nil
            state.calls[id, default: [:]][state.lastCall] = fail
            return (state.lastCall, watching)
        }
        if !watching {
            connection.closeFuture.whenComplete { [self] _ in
                let failing = state.withLock { $0.calls.removeValue(forKey: id) } ?? [:]
                for fail in failing.values { fail() }
            }
        }
        return call
    }

    func unregister(_ connection: PostgresConnection, call: UInt64) {
        _ = state.withLock { $0.calls[connection.id]?.removeValue(forKey: call) }
    }
}

/// Resumes its continuation once, with whichever outcome comes first.
private final class FirstOutcome<T: Sendable>: Sendable {
    private let continuation = Locked<CheckedContinuation<T, any Error>?>(nil)

    func set(_ continuation: CheckedContinuation<T, any Error>) {
        self.continuation.withLock { $0 = continuation }
    }

    func resume(with result: Result<T, any Error>) {
        continuation.withLock { stored in
            let taken = stored
            stored = nil
            return taken
        }?.resume(with: result)
    }
}
