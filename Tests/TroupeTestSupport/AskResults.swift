import Testing
import Troupe

/// The case of an ``AskError`` without its payload, so tests can compare with `==`.
public enum AskErrorKind: Sendable, Hashable {
    case timedOut, recipientStopped, noReply, undeliverable, failed, typeMismatch, blockingOnWorkerThread, cancelled
}

extension AskError {
    public var kind: AskErrorKind {
        switch self {
        case .timedOut: .timedOut
        case .recipientStopped: .recipientStopped
        case .noReply: .noReply
        case .undeliverable: .undeliverable
        case .failed: .failed
        case .typeMismatch: .typeMismatch
        case .blockingOnWorkerThread: .blockingOnWorkerThread
        case .cancelled: .cancelled
        }
    }
}

/// Runs an ask and returns its outcome as a value. (Untyped `throws` so that plain closures
/// fit; asks throw only `AskError`, which `AskTests` checks at compile time.)
public func askResult<Value>(
    sourceLocation: SourceLocation = #_sourceLocation,
    _ body: () async throws -> Value
) async -> Result<Value, AskError> {
    do {
        return .success(try await body())
    } catch let error as AskError {
        return .failure(error)
    } catch {
        Issue.record("an ask threw \(error), which is not an AskError", sourceLocation: sourceLocation)
        return .failure(.failed(error))
    }
}

extension Result where Failure == AskError {
    /// The error, or nil on success.
    public var askError: AskError? {
        if case .failure(let error) = self { return error }
        return nil
    }

    /// The value, or nil on failure.
    public var value: Success? {
        if case .success(let value) = self { return value }
        return nil
    }
}
